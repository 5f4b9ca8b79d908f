package kubernetes_test

// These tests run on a real single-node cluster (testkit/kubetest): a real kubelet on
// containerd and runc, pods that really run the kinetic runner in a Python image, the
// GCS emulator as the store. They need root; KINETIC_SKIP_CLUSTER=1 skips them where a
// cluster cannot run (CI must not set it).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/backend/backendtest"
	"github.com/kinetic-run/kinetic/backend/kubernetes"
	"github.com/kinetic-run/kinetic/engine"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
	"github.com/kinetic-run/kinetic/testkit/daptest"
	"github.com/kinetic-run/kinetic/testkit/kubetest"
	"github.com/kinetic-run/kinetic/testkit/srcroot"
	"github.com/kinetic-run/kinetic/testkit/testbin"
	"github.com/kinetic-run/kinetic/testkit/tier"
)

// RunnerImage is the runner image the tests build from the runner binary beside the
// test binary (testbin.WithRunners).
const RunnerImage = kubetest.RegistryURL + "/kinetic-test/runner:test"

var (
	cluster    *kubetest.Cluster
	clusterErr error
	kineticBin string
)

func TestMain(m *testing.M) {
	code := func() int {
		if os.Getenv("KINETIC_SKIP_CLUSTER") == "1" || tier.Short() {
			return m.Run()
		}
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
		defer cancel()
		// Whatever is built, is built here, before any test's timer starts: under `make
		// test` all of it is prebuilt (make test-tools) and this takes seconds.
		if clusterErr = buildAll(ctx); clusterErr != nil {
			return m.Run() // every cluster test reports the error
		}
		cluster, clusterErr = kubetest.Start(ctx, kubetest.Options{Log: os.Stderr, Kwok: true})
		if clusterErr != nil {
			return m.Run()
		}
		defer cluster.Stop()
		if clusterErr = prepareImages(ctx); clusterErr == nil {
			startLWS(cluster)
		}
		logf("TestMain: the cluster and its images ready in %s", time.Since(start).Round(100*time.Millisecond))
		return m.Run()
	}()
	os.Exit(code)
}

func logf(format string, a ...any) { fmt.Fprintf(os.Stderr, format+"\n", a...) }

// buildAll makes sure of the binaries the tests run: the kinetic binary with the runner
// binaries beside it (which `kinetic up` and `init` publish as the runner image), and
// the LeaderWorkerSet controller (needLWS).
func buildAll(ctx context.Context) error {
	t := time.Now()
	bin, err := testbin.WithRunners()
	if err != nil {
		return err
	}
	kineticBin = bin
	logf("TestMain: %s and its runners ready (%s)", bin, time.Since(t).Round(100*time.Millisecond))
	t = time.Now()
	if _, err := kubetest.LWSBinary(ctx, logf); err != nil {
		return err
	}
	logf("TestMain: the LeaderWorkerSet controller ready (%s)", time.Since(t).Round(100*time.Millisecond))
	return nil
}

// prepareImages pushes the test images to the harness registry, side by side.
func prepareImages(ctx context.Context) error {
	t := time.Now()
	var g errgroup.Group
	g.Go(func() error {
		// The real runner binary (make test-tools built it beside the CLI), as a
		// published runner image holds it: not the CLI, which lacks the runner's own
		// commands (check-store).
		runner := filepath.Join(filepath.Dir(kineticBin), "kinetic-runner-linux-amd64")
		return kubetest.PushFiles(ctx, RunnerImage, []kubetest.File{{Path: strings.TrimPrefix(job.RunnerPath, "/"), Source: runner, Mode: 0o755}}, []string{job.RunnerPath}, nil)
	})
	g.Go(func() error { return cluster.PushPythonImage(ctx) })
	g.Go(func() error { return cluster.PushDebugPythonImage(ctx) })
	if err := g.Wait(); err != nil {
		return err
	}
	logf("TestMain: images pushed (%s)", time.Since(t).Round(100*time.Millisecond))
	return nil
}

// needCluster skips or fails the test according to the cluster's state.
func needCluster(t *testing.T) *kubetest.Cluster {
	t.Helper()
	if os.Getenv("KINETIC_SKIP_CLUSTER") == "1" {
		t.Skip("KINETIC_SKIP_CLUSTER=1: no real cluster here")
	}
	tier.Heavy(t, "runs on the real test cluster")
	if clusterErr != nil {
		t.Fatalf("the test cluster did not start: %v", clusterErr)
	}
	return cluster
}

// clusterWide is held for reading by every shared test and for writing by every test
// that runs alone.
var clusterWide sync.RWMutex

// shared marks a cluster test that touches only what it makes (its jobs, stores,
// namespaces, registry paths): it runs in parallel with the other shared tests, go
// test's -parallel at a time (GOMAXPROCS by default; on 2 cores, one run with 4 at a
// time stretched each test about 2× and the package took longer: the pods' Python and
// runners keep both cores busy).
func shared(t *testing.T) {
	tier.Heavy(t, "runs on the real test cluster")
	t.Parallel()
	clusterWide.RLock()
	t.Cleanup(clusterWide.RUnlock)
}

// alone marks a cluster test that changes what every pod sees (it freezes the kubelet,
// cuts the pods' network to the store, or adds fake nodes that other tests' pods or
// listings would meet): it runs with no other cluster test beside it. Go runs these
// sequential tests first, then the shared ones; the lock says so explicitly.
func alone(t *testing.T) {
	tier.Heavy(t, "runs on the real test cluster")
	clusterWide.Lock()
	t.Cleanup(clusterWide.Unlock)
}

var bucketMu sync.Mutex

// newStore is a fresh bucket on the emulator that pods reach at the bridge address.
func newStore(t *testing.T) *store.Store {
	t.Helper()
	c := needCluster(t)
	bucketMu.Lock()
	name := fmt.Sprintf("kn-%d", time.Now().UnixNano())
	bucketMu.Unlock()
	if err := c.GCS.MakeBucket(name); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(context.Background(), "gs://"+name+"?endpoint="+c.GCS.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func options(c *kubetest.Cluster) kubernetes.Options {
	return kubernetes.Options{
		Name: "k8s", Kubeconfig: c.Kubeconfig, Namespace: "default",
		RunnerImage: RunnerImage, Image: kubetest.PythonImage,
		CPU: "10m", UnschedulableGrace: 5 * time.Second, PullGrace: 20 * time.Second,
	}
}

func newBackend(t *testing.T, mutate func(*kubernetes.Options)) (*kubernetes.Backend, *store.Store) {
	t.Helper()
	c := needCluster(t)
	st := newStore(t)
	o := options(c)
	if mutate != nil {
		mutate(&o)
	}
	b, err := kubernetes.New(st, o)
	if err != nil {
		t.Fatal(err)
	}
	return b, st
}

func TestConformance(t *testing.T) {
	shared(t)
	needCluster(t)
	backendtest.Run(t, backendtest.Harness{
		New: func(t *testing.T) (backend.Backend, *store.Store) {
			b, st := newBackend(t, nil)
			return b, st
		},
		Observe: func(h *job.Handle, st *store.Store, b backend.Backend) backendtest.Job {
			return &engine.Job{Handle: h, Store: st, Backend: b}
		},
		KillWorker: func(t *testing.T, b backend.Backend, st *store.Store, h *job.Handle) {
			cs, err := cluster.Client()
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			// Wait for the pod, then kill it without a grace period.
			deadline := time.Now().Add(60 * time.Second)
			for time.Now().Before(deadline) {
				pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=" + h.K8sName})
				if err == nil && len(pods.Items) > 0 {
					zero := int64(0)
					if err := cs.CoreV1().Pods("default").Delete(ctx, pods.Items[0].Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
						t.Fatal(err)
					}
					return
				}
				time.Sleep(200 * time.Millisecond)
			}
			t.Fatalf("no pod for %s", h.JobID)
		},
		Deadline: 120 * time.Second,
	})
}

// runIn runs a program in dir with the environment of a user of the test cluster (plus
// env) and returns its stdout and stderr.
func runIn(t *testing.T, st *store.Store, dir string, env []string, name string, args ...string) (string, string, error) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(clusterEnv(t, st), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err
}

// kinetic runs the CLI against the cluster, as a user would from a fresh process, in an
// empty directory (nothing of the test's own directory is shipped).
func kinetic(t *testing.T, st *store.Store, env []string, args ...string) (string, string, error) {
	t.Helper()
	return runIn(t, st, t.TempDir(), env, kineticBin, args...)
}

// clusterEnv configures a kinetic process (CLI or SDK) for the test cluster.
func clusterEnv(t *testing.T, st *store.Store) []string {
	home := t.TempDir()
	env := []string{}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KINETIC_") {
			env = append(env, kv)
		}
	}
	return append(env,
		"KINETIC_HOME="+home, "KINETIC_PROFILES_FILE="+filepath.Join(home, "profiles.json"),
		"KINETIC_BIN="+kineticBin,
		"KINETIC_BACKEND=k8s", "KINETIC_STORE="+st.URL(), "KUBECONFIG="+cluster.Kubeconfig,
		// Bundled images are built daemonlessly on the test Python image and pushed to
		// the harness registry, which the node pulls from.
		"KINETIC_RUNNER_IMAGE="+RunnerImage, "KINETIC_IMAGE_REGISTRY="+kubetest.RegistryURL+"/kinetic-test",
		"KINETIC_BASE_IMAGE_CPU="+kubetest.PythonImage, "KINETIC_BASE_IMAGE_GPU="+kubetest.PythonImage,
		// The test image has cloudpickle; these tests are not about jax or keras, so
		// their images get no runtime layer (e2e/frameworks has one, from real wheels).
		"KINETIC_RUNTIME_LAYER=none",
		"KINETIC_POD_CPU=10m", "KINETIC_UNSCHEDULABLE_GRACE=5s", "KINETIC_IMAGE_PULL_GRACE=20s",
		// Warm pods are on by default; the tests that are not about them run every job
		// in a pod of its own, as before (warm_cluster_test.go turns them on).
		"KINETIC_WARM_PODS=0",
		"PYTHONPATH="+pythonDir(),
	)
}

func pythonDir() string {
	return srcroot.Join("python")
}

// python runs a script with the SDK against the cluster and returns its output.
func python(t *testing.T, st *store.Store, env []string, script string) (string, string, error) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "main.py")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	return runIn(t, st, dir, env, "/usr/bin/python3", path)
}

// TestPythonSDK is the seeds' example on the Kubernetes backend: the function runs in a
// pod and its value comes back; a remote exception comes back with its traceback.
func TestPythonSDK(t *testing.T) {
	shared(t)
	_, st := newBackend(t, nil)
	out, errOut, err := python(t, st, nil, `
import kinetic

@kinetic.run(accelerator="cpu")
def train(n):
    import socket
    return {"sum": sum(range(n)), "host": socket.gethostname()}

@kinetic.run(accelerator="cpu")
def boom():
    def inner():
        raise ValueError("bad value from the pod")
    inner()

r = train(100)
print("RESULT", r["sum"], r["host"])
try:
    boom()
except ValueError as e:
    import traceback
    tb = "".join(traceback.format_exception(e))
    print("RAISED", e, "inner" in tb)
`)
	if err != nil {
		t.Fatalf("script: %v\n%s\n%s", err, out, errOut)
	}
	if !strings.Contains(out, "RESULT 4950 job-") {
		t.Errorf("value did not come back from a pod:\n%s\n%s", out, errOut)
	}
	if !strings.Contains(out, "RAISED bad value from the pod True") {
		t.Errorf("remote exception:\n%s\n%s", out, errOut)
	}
}

// submitCmd submits a command job through the CLI and returns its ID.
func submitCmd(t *testing.T, st *store.Store, env []string, argv ...string) string {
	t.Helper()
	return submitRun(t, st, env, append([]string{"--"}, argv...)...)
}

// submitRun runs `kinetic run --async --json ARGS...` and returns the job's ID.
func submitRun(t *testing.T, st *store.Store, env []string, args ...string) string {
	t.Helper()
	out, errOut, err := kinetic(t, st, env, append([]string{"run", "--async", "--json", "--accelerator", "cpu"}, args...)...)
	if err != nil {
		t.Fatalf("kinetic run: %v\n%s\n%s", err, out, errOut)
	}
	var h struct {
		JobID string `json:"job_id"`
	}
	if err := json.Unmarshal([]byte(out), &h); err != nil || h.JobID == "" {
		t.Fatalf("kinetic run --json: %q (%v)\n%s", out, err, errOut)
	}
	return h.JobID
}

func status(t *testing.T, st *store.Store, id string) (string, string) {
	t.Helper()
	out, errOut, err := kinetic(t, st, nil, "jobs", "status", "--json", id)
	if err != nil {
		t.Fatalf("jobs status: %v\n%s\n%s", err, out, errOut)
	}
	var s struct {
		Status string `json:"status"`
		Reason string `json:"reason"`
	}
	json.Unmarshal([]byte(out), &s)
	return s.Status, s.Reason
}

func waitStatus(t *testing.T, st *store.Store, id string, within time.Duration, want ...string) (string, string) {
	t.Helper()
	deadline := time.Now().Add(within)
	var s, r string
	for time.Now().Before(deadline) {
		s, r = status(t, st, id)
		for _, w := range want {
			if s == w {
				return s, r
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("job %s: status %s (%s) after %s, want %v", id, s, r, within, want)
	return "", ""
}

// TestLifecycle: logs outlive the pod; list; attach from a fresh process; cancel;
// cleanup removes the Job.
func TestLifecycle(t *testing.T) {
	shared(t)
	_, st := newBackend(t, nil)
	cs, err := cluster.Client()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	id := submitCmd(t, st, nil, "sh", "-c", "echo line-one; echo line-two")
	// An image of a user's in image_registry's registry: the runner added to a copy of
	// it in Kinetic's repository. With image_registry elsewhere, the image as given: the
	// runner copied in by the init container, as before.
	custom := submitRun(t, st, nil, "--container-image", kubetest.PythonImage, "--", "true")
	foreign := submitRun(t, st, []string{"KINETIC_IMAGE_REGISTRY=registry.invalid/kinetic-test"}, "--container-image", kubetest.PythonImage, "--", "true")
	waitStatus(t, st, id, 90*time.Second, "SUCCEEDED")
	waitStatus(t, st, custom, 90*time.Second, "SUCCEEDED")
	waitStatus(t, st, foreign, 90*time.Second, "SUCCEEDED")
	// The bundled image Kinetic built holds the runner: no init container.
	checkRunner(t, id, true)
	checkRunner(t, custom, true)
	checkRunner(t, foreign, false)
	// The pod goes: logs come from the store's copy.
	if err := cs.CoreV1().Pods("default").DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=" + id}); err != nil {
		t.Fatal(err)
	}
	waitNoPods(t, id)
	out, errOut, err := kinetic(t, st, nil, "jobs", "logs", id)
	if err != nil || !strings.Contains(out, "line-one") || !strings.Contains(out, "line-two") {
		t.Errorf("logs after the pod was deleted: %v\n%q\n%s", err, out, errOut)
	}
	// list (by label) shows it.
	out, errOut, err = kinetic(t, st, nil, "jobs", "list", "--json")
	if err != nil || !strings.Contains(out, id) {
		t.Errorf("jobs list: %v\n%s\n%s", err, out, errOut)
	}
	// ... in its namespace only: --namespace (CLI) and list_jobs(namespace=) (SDK) list the
	// namespace they name (the argument beats KINETIC_NAMESPACE and the profile).
	if out, errOut, err := kinetic(t, st, nil, "jobs", "list", "--json", "--namespace", "kinetic-elsewhere"); err != nil || strings.Contains(out, id) {
		t.Errorf("jobs list --namespace kinetic-elsewhere: %v (lists %s: %v)\n%s", err, id, strings.Contains(out, id), errOut)
	}
	sdkOut, sdkErr, err := python(t, st, nil, "import kinetic\n"+
		"print(sorted(j.job_id for j in kinetic.list_jobs(namespace='kinetic-elsewhere')))\n"+
		"print(sorted(j.job_id for j in kinetic.list_jobs(namespace='default')))\n")
	if lines := strings.Split(strings.TrimSpace(sdkOut), "\n"); err != nil || len(lines) != 2 || strings.Contains(lines[0], id) || !strings.Contains(lines[1], id) {
		t.Errorf("list_jobs(namespace=): %v\n%s\n%s", err, sdkOut, sdkErr)
	}
	// cancel a long job.
	long := submitCmd(t, st, nil, "sh", "-c", "sleep 600")
	waitStatus(t, st, long, 90*time.Second, "RUNNING")
	if out, errOut, err := kinetic(t, st, nil, "jobs", "cancel", long); err != nil {
		t.Fatalf("cancel: %v\n%s\n%s", err, out, errOut)
	}
	if s, r := status(t, st, long); s != "FAILED" || !strings.Contains(r, "cancelled") {
		t.Errorf("after cancel: %s (%s)", s, r)
	}
	// cleanup removes the Job.
	if out, errOut, err := kinetic(t, st, nil, "jobs", "cleanup", id); err != nil {
		t.Fatalf("cleanup: %v\n%s\n%s", err, out, errOut)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := cs.BatchV1().Jobs("default").Get(ctx, id, metav1.GetOptions{})
		if err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Job %s still there after cleanup", id)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// checkRunner checks where the pods of the Job called name start the runner: from their
// own image (inImage: a bundled or user's image with the runner added, recorded in the
// Job's runner_in_image annotation) or copied in by the init container.
func checkRunner(t *testing.T, name string, inImage bool) {
	t.Helper()
	cs, _ := cluster.Client()
	j, err := cs.BatchV1().Jobs("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Errorf("Job %s: %v", name, err)
		return
	}
	spec := j.Spec.Template.Spec
	ann := j.Annotations[kubernetes.AnnotationPrefix+"runner_in_image"]
	if inImage {
		if len(spec.InitContainers) != 0 || spec.Containers[0].Command[0] != job.RunnerPath || !strings.HasPrefix(ann, RunnerImage[:strings.LastIndex(RunnerImage, ":")]+"@sha256:") || !strings.Contains(spec.Containers[0].Image, "@sha256:") {
			t.Errorf("Job %s: init containers %d, command %v, image %s, runner_in_image %q: want the runner in the image", name, len(spec.InitContainers), spec.Containers[0].Command, spec.Containers[0].Image, ann)
		}
		return
	}
	if len(spec.InitContainers) != 1 || spec.InitContainers[0].Image != RunnerImage || ann != "" {
		t.Errorf("Job %s: init containers %v, runner_in_image %q: want the runner copied in", name, spec.InitContainers, ann)
	}
}

func waitNoPods(t *testing.T, jobName string) {
	t.Helper()
	cs, _ := cluster.Client()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		pods, err := cs.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=" + jobName})
		if err == nil && len(pods.Items) == 0 {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("pods of %s still there", jobName)
}

// TestFailures: what the cluster would keep trying for ever becomes FAILED with the
// reason.
func TestFailures(t *testing.T) {
	shared(t)
	_, st := newBackend(t, nil)
	t.Run("ImageDoesNotExist", func(t *testing.T) {
		id := submitRun(t, st, nil, "--container-image", kubetest.RegistryURL+"/kinetic-test/no-such-image:1", "--", "true")
		_, r := waitStatus(t, st, id, 60*time.Second, "FAILED")
		if !strings.Contains(r, "ErrImagePull") && !strings.Contains(r, "ImagePullBackOff") {
			t.Errorf("reason %q does not name the pull error", r)
		}
	})
	t.Run("OOMKilled", func(t *testing.T) {
		id := submitCmd(t, st, []string{"KINETIC_POD_MEMORY=48Mi"}, "python3", "-c", "x = bytearray(400 << 20); print(len(x))")
		_, r := waitStatus(t, st, id, 90*time.Second, "FAILED")
		if !strings.Contains(r, "OOMKilled") {
			t.Errorf("reason %q does not say OOMKilled", r)
		}
	})
	t.Run("Unschedulable", func(t *testing.T) {
		// A GPU no node has: on a generic cluster the pod asks for nvidia.com/gpu.
		id := submitRun(t, st, nil, "--accelerator", "l4", "--", "true")
		_, r := waitStatus(t, st, id, 60*time.Second, "FAILED")
		if !strings.Contains(r, "Unschedulable") {
			t.Errorf("reason %q does not say Unschedulable", r)
		}
	})
}

// TestMapIndexedJob: a 50-input map runs as one Indexed Job; raising inputs come back
// as exceptions at their indices.
func TestMapIndexedJob(t *testing.T) {
	shared(t)
	_, st := newBackend(t, nil)
	out, errOut, err := python(t, st, nil, `
import kinetic

@kinetic.run(accelerator="cpu")
def sq(x):
    if x % 7 == 3:
        raise KeyError("input %d" % x)
    return x * x

b = sq.run_async_map(list(range(50)), max_concurrent=10)
print("GROUP", b.group_id)
res = b.results(timeout=600, return_exceptions=True, cleanup=False)
bad = [i for i, r in enumerate(res) if isinstance(r, BaseException)]
good = all(res[i] == i * i for i in range(50) if i not in bad)
print("BAD", bad, "GOOD", good)
`)
	if err != nil {
		t.Fatalf("script: %v\n%s\n%s", err, out, errOut)
	}
	want := []int{}
	for i := 0; i < 50; i++ {
		if i%7 == 3 {
			want = append(want, i)
		}
	}
	if !strings.Contains(out, fmt.Sprintf("BAD %s GOOD True", strings.ReplaceAll(fmt.Sprint(want), " ", ", "))) {
		t.Errorf("map results:\n%s\n%s", out, errOut)
	}
	// One Job for the whole batch.
	cs, _ := cluster.Client()
	var gid string
	fmt.Sscanf(out[strings.Index(out, "GROUP "):], "GROUP %s", &gid)
	jobs, err := cs.BatchV1().Jobs("default").List(context.Background(), metav1.ListOptions{LabelSelector: kubernetes.LabelGroupID + "=" + gid})
	if err != nil || len(jobs.Items) != 1 || jobs.Items[0].Spec.CompletionMode == nil || *jobs.Items[0].Spec.CompletionMode != "Indexed" {
		t.Fatalf("want one Indexed Job for %s, got %v (%v)", gid, len(jobs.Items), err)
	}
	// Its pods start the runner from the bundled image.
	checkRunner(t, jobs.Items[0].Name, true)
	_ = corev1.PodRunning
}

// debugSession is what `kinetic jobs debug --json` prints.
type debugSession struct {
	Host      string         `json:"host"`
	Port      int            `json:"port"`
	Forwarded bool           `json:"forwarded"`
	Launch    map[string]any `json:"launch"`
	Marker    struct {
		HostIndex string `json:"host_index"`
	} `json:"marker"`
}

// forwardDebugger runs `kinetic jobs debug --json ID`, which keeps the forward open until
// the job ends: it reads the session and leaves the command running (killed at the end
// of t); the buffer collects its stderr.
func forwardDebugger(t *testing.T, st *store.Store, dir, id string) (debugSession, *bytes.Buffer) {
	t.Helper()
	fwd := exec.Command(kineticBin, "jobs", "debug", "--json", id)
	fwd.Dir, fwd.Env = dir, clusterEnv(t, st)
	stdout, err := fwd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var fwdErr bytes.Buffer
	fwd.Stderr = &fwdErr
	if err := fwd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fwd.Process.Kill(); fwd.Wait() })
	var s debugSession
	if err := json.NewDecoder(stdout).Decode(&s); err != nil {
		fwd.Wait()
		t.Fatalf("jobs debug --json: %v\n%s", err, fwdErr.String())
	}
	return s, &fwdErr
}

// TestDebugOnTheNode: a debug job in a pod waits for its debugger; `kinetic jobs debug`
// port-forwards to it with client-go; a DAP client attaches through the forward, stops at
// a breakpoint in the submitter's file (path mappings), reads a local, continues, and the
// value comes back.
func TestDebugOnTheNode(t *testing.T) {
	shared(t)
	_, st := newBackend(t, nil)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "m.py"), []byte("def f(x):\n    y = x * 2\n    return y\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, string, error) { return runIn(t, st, dir, nil, kineticBin, args...) }
	out, errOut, err := run("run", "--async", "--accelerator", "cpu", "--debug", "--debug-wait", "3m", "--container-image", kubetest.DebugPythonImage, "m.py::f", "21")
	if err != nil {
		t.Fatalf("submit: %v\n%s\n%s", err, out, errOut)
	}
	id := strings.TrimSpace(out)
	t.Cleanup(func() { run("jobs", "cancel", id) })

	s, fwdErr := forwardDebugger(t, st, dir, id)
	if !s.Forwarded || s.Host != "127.0.0.1" {
		t.Fatalf("session %+v: want a local port-forward", s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := daptest.Dial(ctx, fmt.Sprintf("%s:%d", s.Host, s.Port))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	thread, top, err := c.StopAt(ctx, s.Launch["pathMappings"], filepath.Join(dir, "m.py"), 3)
	if err != nil {
		t.Fatalf("%v\n%s", err, fwdErr.String())
	}
	if top.Line != 3 || top.Source.Path != filepath.Join(dir, "m.py") {
		t.Errorf("stopped at %s:%d, want m.py:3 in the submitter's tree (path mappings)", top.Source.Path, top.Line)
	}
	if y, err := c.Evaluate(ctx, top.ID, "y"); err != nil || y != "42" {
		t.Fatalf("y = %q (%v) in the pod, want 42", y, err)
	}
	if _, err := c.Request(ctx, "continue", map[string]any{"threadId": thread}); err != nil {
		t.Fatal(err)
	}
	out, errOut, err = run("jobs", "result", id)
	if err != nil || strings.TrimSpace(out) != "42" {
		t.Fatalf("result: %v %q\n%s", err, out, errOut)
	}
}

// TestGKESchedulingOnFakeNodes: the GKE pod specs land on the nodes GKE would give them.
// kwok runs fake GPU, TPU and spot nodes with GKE's labels, capacity and taints; each job
// must be scheduled on its node (and on no other), and kwok completes it.
func TestGKESchedulingOnFakeNodes(t *testing.T) {
	alone(t)
	c := needCluster(t)
	ctx := context.Background()
	noSchedule := func(key, value string) corev1.Taint {
		return corev1.Taint{Key: key, Value: value, Effect: corev1.TaintEffectNoSchedule}
	}
	nodes := []kubetest.FakeNode{
		{Name: "gke-l4", Labels: map[string]string{"cloud.google.com/gke-accelerator": "nvidia-l4"},
			Capacity: map[string]string{"nvidia.com/gpu": "4"}, Taints: []corev1.Taint{noSchedule("nvidia.com/gpu", "present")}},
		{Name: "gke-v5e-2x2", Labels: map[string]string{"cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice", "cloud.google.com/gke-tpu-topology": "2x2"},
			Capacity: map[string]string{"google.com/tpu": "4"}, Taints: []corev1.Taint{noSchedule("google.com/tpu", "present")}},
		{Name: "gke-l4-spot", Labels: map[string]string{"cloud.google.com/gke-accelerator": "nvidia-l4", "cloud.google.com/gke-spot": "true"},
			Capacity: map[string]string{"nvidia.com/gpu": "4"}, Taints: []corev1.Taint{noSchedule("nvidia.com/gpu", "present"), noSchedule("cloud.google.com/gke-spot", "true")}},
	}
	cs, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if err := c.AddFakeNode(ctx, n); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.CoreV1().Nodes().Delete(context.Background(), n.Name, metav1.DeleteOptions{}) })
	}
	_, st := newBackend(t, nil)
	gke := []string{"KINETIC_BACKEND=gke", "KINETIC_PROJECT=p", "KINETIC_CLUSTER_TYPE=gke", "KINETIC_KUBE_CONTEXT=kinetic-test"} // gke needs a project (the cluster comes from the context)
	for acc, node := range map[string]string{"l4x2": "gke-l4", "v5litepod-4": "gke-v5e-2x2", "l4:spot": "gke-l4-spot"} {
		t.Run(acc, func(t *testing.T) {
			id := submitRun(t, st, gke, "--accelerator", acc, "--container-image", kubetest.PythonImage, "--", "true")
			deadline := time.Now().Add(60 * time.Second)
			for {
				pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=" + id})
				if err == nil && len(pods.Items) > 0 && pods.Items[0].Spec.NodeName != "" {
					if got := pods.Items[0].Spec.NodeName; got != node {
						t.Fatalf("%s scheduled on %s, want %s", acc, got, node)
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s: not scheduled within 60s", acc)
				}
				time.Sleep(200 * time.Millisecond)
			}
			waitStatus(t, st, id, 60*time.Second, "SUCCEEDED")
		})
	}
}
