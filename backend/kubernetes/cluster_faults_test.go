package kubernetes_test

// Faults on the real node (testkit/kubetest): the runner's pod deleted mid-job, the
// store unreachable from the pod for 30 s, the node made NotReady by stopping its
// kubelet. Each job must end FAILED with a reason a person can act on or, for a
// transient fault, finish; never stay PENDING or RUNNING. Every wait is bounded.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/backend/backendtest"
	"github.com/kinetic-run/kinetic/backend/kubernetes"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/jobview"
	"github.com/kinetic-run/kinetic/store"
	"github.com/kinetic-run/kinetic/testkit/kubetest"
)

// faultBound bounds every wait for a final state after a fault.
const faultBound = 3 * time.Minute

// fjob is a submitted job as these tests use it (whatever type backendtest.Submit
// returns): its handle, backend and store, and its logs.
type fjob struct {
	Handle *job.Handle
	b      backend.Backend
	st     *store.Store
	logs   interface {
		Logs(ctx context.Context, w io.Writer, follow bool) error
	}
}

func (j *fjob) Status(ctx context.Context) (job.State, string, error) {
	return j.b.Status(ctx, j.Handle)
}

// submit submits a command job through the conformance suite's helper.
func submit(t *testing.T, b backend.Backend, st *store.Store, argv ...string) *fjob {
	t.Helper()
	h := backendtest.Submit(t, b, st, argv...)
	f := &fjob{Handle: h, b: b, st: st, logs: &jobview.Job{Store: st, ID: h.JobID}}
	t.Cleanup(func() { b.Cleanup(context.Background(), f.Handle) })
	return f
}

// waitState polls until the job is in one of want, failing the test after within.
func waitState(t *testing.T, j *fjob, within time.Duration, want ...job.State) (job.State, string) {
	t.Helper()
	deadline := time.Now().Add(within)
	var s job.State
	var r string
	var err error
	for time.Now().Before(deadline) {
		s, r, err = j.Status(context.Background())
		for _, w := range want {
			if err == nil && s == w {
				return s, r
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("job %s: %s (%q, err %v) after %s, want %v", j.Handle.JobID, s, r, err, within, want)
	return "", ""
}

// waitFinal waits (bounded) for a terminal state and logs how long it took.
func waitFinal(t *testing.T, j *fjob, since time.Time) (job.State, string) {
	t.Helper()
	s, r := waitState(t, j, faultBound, job.Succeeded, job.Failed)
	t.Logf("job %s: %s %s after the fault: %q", j.Handle.JobID, s, time.Since(since).Round(time.Second), r)
	return s, r
}

// stillFinal: a verdict stands (it does not flip back, or to another reason).
func stillFinal(t *testing.T, j *fjob, state job.State, reason string) {
	t.Helper()
	time.Sleep(3 * time.Second)
	s, r, err := j.Status(context.Background())
	if err != nil || s != state || r != reason {
		t.Errorf("verdict changed: %s %q -> %s %q (%v)", state, reason, s, r, err)
	}
}

func podsOf(t *testing.T, name string) []corev1.Pod {
	t.Helper()
	cs, err := cluster.Client()
	if err != nil {
		t.Fatal(err)
	}
	list, err := cs.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=" + name})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

func logsOf(t *testing.T, j *fjob) string {
	t.Helper()
	var b bytes.Buffer
	if err := j.logs.Logs(context.Background(), &b, false); err != nil {
		t.Errorf("logs of %s: %v", j.Handle.JobID, err)
	}
	return b.String()
}

// TestFaultPodDeleted: the runner's pod is deleted while the job runs, with a grace
// period (the runner hears SIGTERM) and without (force). The Job has backoffLimit 0, so
// no second pod runs the job again; the job is FAILED and the reason says the pod was
// deleted.
func TestFaultPodDeleted(t *testing.T) {
	shared(t)
	needCluster(t)
	cs, err := cluster.Client()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		grace *int64
	}{{"Graceful", nil}, {"Forced", ptr(int64(0))}} {
		t.Run(c.name, func(t *testing.T) {
			b, st := newBackend(t, nil)
			j := submit(t, b, st, "sh", "-c", "echo started; sleep 600")
			waitState(t, j, 90*time.Second, job.Running)
			pods := podsOf(t, j.Handle.K8sName)
			if len(pods) != 1 {
				t.Fatalf("%d pods, want 1", len(pods))
			}
			at := time.Now()
			if err := cs.CoreV1().Pods("default").Delete(context.Background(), pods[0].Name, metav1.DeleteOptions{GracePeriodSeconds: c.grace}); err != nil {
				t.Fatal(err)
			}
			s, r := waitFinal(t, j, at)
			if s != job.Failed || !strings.Contains(r, "deleted") {
				t.Fatalf("after the pod was deleted: %s %q, want FAILED saying the pod was deleted", s, r)
			}
			stillFinal(t, j, s, r)
			for _, p := range podsOf(t, j.Handle.K8sName) {
				if p.Name != pods[0].Name {
					t.Errorf("a second pod %s (%s) runs the job again", p.Name, p.Status.Phase)
				}
			}
		})
	}
}

// dropPodTrafficTo drops TCP from pods on the harness bridge to the host's port (the GCS
// emulator) until the returned function is called. Only the harness's bridge and
// addresses are touched; the host's own traffic to the emulator goes over loopback.
func dropPodTrafficTo(t *testing.T, port string) (heal func() (dropped int)) {
	t.Helper()
	rule := []string{"INPUT", "-i", kubetest.Bridge, "-s", kubetest.PodCIDR, "-d", kubetest.HostIP, "-p", "tcp", "--dport", port, "-j", "DROP",
		"-m", "comment", "--comment", "kinetic-fault-test"}
	ipt := func(op string, args ...string) ([]byte, error) {
		return exec.Command("iptables", append([]string{"-w", op}, args...)...).CombinedOutput()
	}
	if out, err := ipt("-I", rule...); err != nil {
		t.Skipf("cannot inject a network fault here: iptables -I: %v: %s", err, out)
	}
	healed := false
	heal = func() int {
		if healed {
			return 0
		}
		healed = true
		n := 0
		out, _ := exec.Command("iptables", "-w", "-L", "INPUT", "-v", "-x", "-n").Output()
		for _, line := range strings.Split(string(out), "\n") {
			if strings.Contains(line, "kinetic-fault-test") && strings.Contains(line, "dpt:"+port) {
				f := strings.Fields(line)
				n, _ = strconv.Atoi(f[0])
			}
		}
		if out, err := ipt("-D", rule...); err != nil {
			t.Errorf("iptables -D: %v: %s", err, out)
		}
		return n
	}
	t.Cleanup(func() { heal() })
	return heal
}

func gcsPort(t *testing.T) string {
	u, err := url.Parse(cluster.GCS.URL())
	if err != nil || u.Port() == "" {
		t.Fatalf("GCS emulator URL %q: %v", cluster.GCS.URL(), err)
	}
	return u.Port()
}

// TestFaultStoreUnreachable: the store does not answer the pod for 30 s, while the job
// runs and writes output, and while it finishes (its result must still land). Both
// are transient: the job SUCCEEDS and no output is lost.
func TestFaultStoreUnreachable(t *testing.T) {
	alone(t)
	needCluster(t)
	t.Run("WhileRunning", func(t *testing.T) {
		b, st := newBackend(t, nil)
		j := submit(t, b, st, "sh", "-c", "for i in $(seq 1 75); do echo tick $i; sleep 1; done")
		waitState(t, j, 90*time.Second, job.Running)
		time.Sleep(3 * time.Second)
		at := time.Now()
		heal := dropPodTrafficTo(t, gcsPort(t))
		time.Sleep(30 * time.Second)
		if s, r, err := j.Status(context.Background()); err != nil || s != job.Running {
			t.Errorf("during the outage: %s %q %v, want RUNNING", s, r, err)
		}
		dropped := heal()
		t.Logf("the fault dropped %d packets from the pod to the store", dropped)
		if dropped == 0 {
			t.Error("no packet was dropped: the fault did not reach the pod's traffic")
		}
		s, r := waitFinal(t, j, at)
		if s != job.Succeeded {
			t.Fatalf("after a 30 s store outage: %s %q, want SUCCEEDED", s, r)
		}
		logs := logsOf(t, j)
		for i := 1; i <= 75; i++ {
			if !strings.Contains(logs, fmt.Sprintf("tick %d\n", i)) {
				t.Errorf("line %q lost from the logs in the store", fmt.Sprintf("tick %d", i))
			}
		}
	})
	t.Run("WhileFinishing", func(t *testing.T) {
		b, st := newBackend(t, nil)
		j := submit(t, b, st, "sh", "-c", "echo begin; sleep 8; echo end")
		waitState(t, j, 90*time.Second, job.Running)
		// RUNNING is the pod's phase: on a loaded machine the runner may not have opened
		// the store yet. The fault is about finishing, so wait for the command's first
		// line (the runner has fetched everything by then).
		for deadline := time.Now().Add(90 * time.Second); !strings.Contains(logsOf(t, j), "begin"); time.Sleep(200 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the command did not start within 90 s of RUNNING")
			}
		}
		at := time.Now()
		heal := dropPodTrafficTo(t, gcsPort(t))
		time.Sleep(30 * time.Second)
		if s, r, err := j.Status(context.Background()); err != nil || s.Terminal() {
			t.Logf("during the outage (the job's command ended): %s %q %v", s, r, err)
		}
		t.Logf("the fault dropped %d packets", heal())
		s, r := waitFinal(t, j, at)
		if s != job.Succeeded {
			t.Fatalf("a job that ended while the store was unreachable: %s %q, want SUCCEEDED", s, r)
		}
		if logs := logsOf(t, j); !strings.Contains(logs, "begin") || !strings.Contains(logs, "end") {
			t.Errorf("logs %q", logs)
		}
		raw, err := st.Get(context.Background(), store.EnvelopeKey(j.Handle.JobID))
		if err != nil {
			t.Fatalf("result envelope: %v", err)
		}
		if env, err := job.DecodeEnvelope(raw); err != nil || !env.Success {
			t.Errorf("result envelope: %+v %v", env, err)
		}
	})
}

// kubeletPID is the harness's kubelet: a child of this test process started with the
// cluster's kubeconfig.
func kubeletPID(t *testing.T) int {
	t.Helper()
	out, _ := exec.Command("pgrep", "-P", strconv.Itoa(os.Getpid()), "-f", "/kubelet --kubeconfig="+cluster.Kubeconfig).Output()
	f := strings.Fields(string(out))
	if len(f) != 1 {
		t.Skipf("cannot find the harness's kubelet (pgrep: %q): the node fault cannot be injected", out)
	}
	pid, _ := strconv.Atoi(f[0])
	return pid
}

// stopKubelet freezes the kubelet (SIGSTOP): the node stops reporting, its containers
// keep running under containerd, as when a node loses its network or its kubelet hangs.
// The returned function (also run at cleanup) resumes it and waits for the node to be
// Ready again.
func stopKubelet(t *testing.T) (resume func()) {
	t.Helper()
	pid := kubeletPID(t)
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	done := false
	resume = func() {
		if done {
			return
		}
		done = true
		syscall.Kill(pid, syscall.SIGCONT)
		cs, _ := cluster.Client()
		deadline := time.Now().Add(2 * time.Minute)
		for time.Now().Before(deadline) {
			n, err := cs.CoreV1().Nodes().Get(context.Background(), kubetest.NodeName, metav1.GetOptions{})
			if err == nil {
				for _, c := range n.Status.Conditions {
					if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
						return
					}
				}
			}
			time.Sleep(time.Second)
		}
		t.Errorf("node %s not Ready 2 minutes after its kubelet resumed", kubetest.NodeName)
	}
	t.Cleanup(resume)
	return resume
}

// TestFaultNodeNotReady: the node of a running job stops reporting (its kubelet is
// frozen). On this one-node cluster the node lifecycle controller evicts nothing (all
// nodes down looks like a control-plane fault to it), so the pod would show Running for
// ever: the backend judges the node. A job that finishes while its node is NotReady
// SUCCEEDS (the store speaks first).
func TestFaultNodeNotReady(t *testing.T) {
	alone(t)
	needCluster(t)
	// One outage serves both cases (waiting it out is most of their time): a job on the
	// lost node, judged with a short NodeLostGrace, and a job started just before the
	// kubelet stops (as when each case had its own outage) that finishes while the node is
	// down, judged with the default grace.
	lostB, lostSt := newBackend(t, func(o *kubernetes.Options) { o.NodeLostGrace = 20 * time.Second })
	lost := submit(t, lostB, lostSt, "sh", "-c", "echo started; sleep 600")
	waitState(t, lost, 90*time.Second, job.Running)
	transB, transSt := newBackend(t, nil) // the default grace: a node back within minutes keeps its jobs
	trans := submit(t, transB, transSt, "sh", "-c", "echo started; sleep 65; echo done")
	waitState(t, trans, 90*time.Second, job.Running)
	at := time.Now()
	resume := stopKubelet(t)
	t.Run("Transient", func(t *testing.T) {
		s, r := waitState(t, trans, faultBound, job.Succeeded, job.Failed)
		t.Logf("job %s: %s %s after the kubelet stopped (node still down): %q", trans.Handle.JobID, s, time.Since(at).Round(time.Second), r)
		if s != job.Succeeded {
			t.Fatalf("job that finished while its node was NotReady: %s %q, want SUCCEEDED", s, r)
		}
		if logs := logsOf(t, trans); !strings.Contains(logs, "done") {
			t.Errorf("logs %q", logs)
		}
	})
	t.Run("Lost", func(t *testing.T) {
		s, r := waitFinal(t, lost, at)
		if s != job.Failed || !strings.Contains(r, "NodeNotReady") || !strings.Contains(r, kubetest.NodeName) {
			t.Fatalf("job on a lost node: %s %q, want FAILED naming NodeNotReady and the node", s, r)
		}
		resume()
		stillFinal(t, lost, s, r)
	})
}

func ptr[T any](v T) *T { return &v }
