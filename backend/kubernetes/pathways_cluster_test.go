package kubernetes_test

// Multi-host jobs (Pathways) on the real cluster with LeaderWorkerSet installed
// (kubetest.StartLWS). The node has no TPUs: the jobs run with accelerator_resources =
// false, so each host is a CPU pod of 10m, but everything else is what GKE gets: one
// LeaderWorkerSet, one pod per host, the index and leader address from LeaderWorkerSet.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kinetic-run/kinetic/backend/kubernetes"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
	"github.com/kinetic-run/kinetic/testkit/daptest"
	"github.com/kinetic-run/kinetic/testkit/kubetest"
)

var (
	lwsOnce sync.Once
	lwsDone = make(chan struct{})
	lwsErr  error
)

// lwsStartBound bounds installing LeaderWorkerSet on the running cluster: its CRD, its
// controller (built before the tests, TestMain) and its webhooks.
const lwsStartBound = 5 * time.Minute

// startLWS starts installing LeaderWorkerSet on the shared cluster in the background,
// once: TestMain calls it as soon as the cluster is up, so that it comes up while the
// first tests run (it needs no pod, so the tests that disturb the node do not touch it).
func startLWS(c *kubetest.Cluster) {
	lwsOnce.Do(func() {
		go func() {
			defer close(lwsDone)
			ctx, cancel := context.WithTimeout(context.Background(), lwsStartBound)
			defer cancel()
			lwsErr = c.StartLWS(ctx)
		}()
	})
}

// needLWS waits for LeaderWorkerSet on the shared cluster, for the tests that need it.
func needLWS(t *testing.T) {
	t.Helper()
	c := needCluster(t)
	startLWS(c)
	<-lwsDone // bounded by lwsStartBound
	if lwsErr != nil {
		t.Fatalf("LeaderWorkerSet did not start: %v\n%s", lwsErr, c.LogTail("lws-controller", 3000))
	}
}

// multiHostEnv runs multi-host accelerators as CPU pods on the generic test cluster.
var multiHostEnv = []string{"KINETIC_ACCELERATOR_RESOURCES=false", "KINETIC_BASE_IMAGE_TPU=" + kubetest.PythonImage}

func dynClient(t *testing.T) dynamic.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", cluster.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	d, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// lineAfter returns the rest of the first line of out that starts with prefix.
func lineAfter(out, prefix string) string {
	for _, l := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(l, prefix); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// hostLogs reads what host n of job id mirrored into the store.
func hostLogs(t *testing.T, st *store.Store, id, host string) string {
	t.Helper()
	ctx := context.Background()
	objs, err := st.List(ctx, store.HostLogsPrefix(id, host))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, o := range objs {
		raw, err := st.Get(ctx, o.Key)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(raw)
	}
	return b.String()
}

func waitLWSGone(t *testing.T, id string) {
	t.Helper()
	d := dynClient(t)
	cs, _ := cluster.Client()
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, err := d.Resource(kubernetes.LWSResource).Namespace("default").Get(context.Background(), id, metav1.GetOptions{})
		pods, perr := cs.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{LabelSelector: "leaderworkerset.sigs.k8s.io/name=" + id})
		if apierrors.IsNotFound(err) && perr == nil && len(pods.Items) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("LeaderWorkerSet %s or its pods still there after cleanup (get: %v)", id, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// TestPathwaysTwoHosts: a 2-host slice (tpu-v6e-8) submitted with backend k8s runs as
// one LeaderWorkerSet; the leader and the worker each see their index and the leader's
// address; the leader's value comes back; list shows the job; cleanup removes the
// LeaderWorkerSet.
func TestPathwaysTwoHosts(t *testing.T) {
	shared(t)
	needLWS(t)
	st := newStore(t)
	out, errOut, err := python(t, st, multiHostEnv, `
import kinetic

@kinetic.run(accelerator="tpu-v6e-8")
def whoami():
    import os, time
    keys = ["KINETIC_HOST_INDEX", "TPU_WORKER_ID", "MEGASCALE_COORDINATOR_ADDRESS", "MEGASCALE_NUM_SLICES"]
    me = {k: os.environ.get(k) for k in keys}
    if me["KINETIC_HOST_INDEX"] != "0":
        time.sleep(2)  # the worker ends after the leader's call: the job must wait for it
    print("ENV " + " ".join("%s=%s" % (k, me[k]) for k in keys), flush=True)
    return me

h = whoami.run_async()
print("JOB", h.job_id, flush=True)
r = h.result(timeout=300, cleanup=False)
print("LEADER", " ".join("%s=%s" % (k, r[k]) for k in sorted(r)))
`)
	id := lineAfter(out, "JOB ")
	if err != nil {
		t.Fatalf("script: %v\n%s\n%s", err, out, errOut)
	}
	leader := lineAfter(out, "LEADER ")
	if !strings.Contains(leader, "KINETIC_HOST_INDEX=0") || !strings.Contains(leader, "TPU_WORKER_ID=0") || !strings.Contains(leader, "MEGASCALE_NUM_SLICES=1") {
		t.Errorf("leader's value: %q\n%s", leader, errOut)
	}
	// LeaderWorkerSet's leader address: <name>-<group>.<service>.<namespace>.
	addr := id + "-0." + id + ".default"
	if !strings.Contains(leader, "MEGASCALE_COORDINATOR_ADDRESS="+addr) {
		t.Errorf("leader's coordinator address: %q, want %s", leader, addr)
	}
	// The worker ran too, with its own index and the leader's address, and the job ended
	// only once it had: its output is in the store when the leader's value is back,
	// however late its pod came up (a worker that came up after the leader's call once
	// took the job for over and never ran) or however long it ran after the leader.
	worker := hostLogs(t, st, id, "1")
	if !strings.Contains(worker, "KINETIC_HOST_INDEX=1 TPU_WORKER_ID=1 MEGASCALE_COORDINATOR_ADDRESS="+addr+" MEGASCALE_NUM_SLICES=1") {
		t.Errorf("the worker's output was not in the store when the job's value came back: %q\n%s", worker, describeGroup(t, "default", id))
	}
	if ok, _ := st.Exists(context.Background(), store.HostEnvelopeKey(id, "1")); !ok {
		t.Errorf("the worker wrote no envelope, yet the job ended\n%s", describeGroup(t, "default", id))
	} else if w, l := envelopeTime(t, st, id, "1"), envelopeTime(t, st, id, "0"); l.Before(w) {
		t.Errorf("the leader's envelope (%s) is older than the worker's (%s): the job ended before the worker", l, w)
	}
	// The handle says pathways; the LeaderWorkerSet has one group of two hosts.
	raw, err := st.Get(context.Background(), store.HandleKey(id))
	if err != nil || !strings.Contains(string(raw), `"backend": "pathways"`) && !strings.Contains(string(raw), `"backend":"pathways"`) {
		t.Errorf("handle: %s (%v)", raw, err)
	}
	obj, err := dynClient(t).Resource(kubernetes.LWSResource).Namespace("default").Get(context.Background(), id, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if size, _, _ := unstructured.NestedInt64(obj.Object, "spec", "leaderWorkerTemplate", "size"); size != 2 {
		t.Errorf("size %d, want 2", size)
	}
	if s, _ := status(t, st, id); s != "SUCCEEDED" {
		t.Errorf("status %s", s)
	}
	// list (by label) shows it.
	lout, lerr, err := kinetic(t, st, nil, "jobs", "list", "--json")
	if err != nil || !strings.Contains(lout, id) {
		t.Errorf("jobs list: %v\n%s\n%s", err, lout, lerr)
	}
	if out, errOut, err := kinetic(t, st, nil, "jobs", "cleanup", id); err != nil {
		t.Fatalf("cleanup: %v\n%s\n%s", err, out, errOut)
	}
	waitLWSGone(t, id)
}

// TestPathwaysWorkerFails: a worker that raises while the leader still runs (it
// sleeps ten minutes) makes the job FAILED within seconds, with the worker's
// exception; the pods are stopped; cleanup removes the LeaderWorkerSet.
func TestPathwaysWorkerFails(t *testing.T) {
	shared(t)
	needLWS(t)
	st := newStore(t)
	out, errOut, err := python(t, st, multiHostEnv, `
import kinetic

@kinetic.run(accelerator="tpu-v6e-8")
def train():
    import os, time
    host = os.environ["KINETIC_HOST_INDEX"]
    if host != "0":
        time.sleep(1)
        raise RuntimeError("worker %s lost its shard" % host)
    time.sleep(600)
    return "the leader finished"

h = train.run_async()
print("JOB", h.job_id, flush=True)
`)
	id := lineAfter(out, "JOB ")
	if err != nil || id == "" {
		t.Fatalf("script: %v\n%s\n%s", err, out, errOut)
	}
	waitStatus(t, st, id, 120*time.Second, "RUNNING", "FAILED")
	// From the moment the worker's envelope is in the store, the status says FAILED.
	ctx := context.Background()
	deadline := time.Now().Add(120 * time.Second)
	for {
		if ok, _ := st.Exists(ctx, store.HostEnvelopeKey(id, "1")); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the worker wrote no failure envelope; its output:\n%s", hostLogs(t, st, id, "1"))
		}
		time.Sleep(200 * time.Millisecond)
	}
	failedAt := time.Now()
	s, reason := waitStatus(t, st, id, 20*time.Second, "FAILED")
	if !strings.Contains(reason, "host 1 failed: builtins.RuntimeError: worker 1 lost its shard") {
		t.Errorf("reason %q does not carry the worker's exception", reason)
	}
	t.Logf("%s %s after the worker's envelope: %s", s, time.Since(failedAt).Round(time.Millisecond), reason)
	// The leader was still running (it sleeps 600 s): it left no result.
	if ok, _ := st.Exists(ctx, store.EnvelopeKey(id)); ok {
		t.Errorf("the leader wrote a result, but it should still have been sleeping")
	}
	// The failure stopped the pods (replicas 0) and kept the LeaderWorkerSet.
	obj, err := dynClient(t).Resource(kubernetes.LWSResource).Namespace("default").Get(ctx, id, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r, _, _ := unstructured.NestedInt64(obj.Object, "spec", "replicas"); r != 0 {
		t.Errorf("replicas %d after the failure, want 0", r)
	}
	// The SDK sees the worker's exception too.
	pyOut, pyErr, err := python(t, st, multiHostEnv, `
import kinetic
h = kinetic.attach("`+id+`")
try:
    h.result(timeout=60, cleanup=False)
except RuntimeError as e:
    print("RAISED", e)
`)
	if err != nil || !strings.Contains(pyOut, "RAISED worker 1 lost its shard") {
		t.Errorf("attach + result: %v\n%s\n%s", err, pyOut, pyErr)
	}
	if out, errOut, err := kinetic(t, st, nil, "jobs", "cleanup", id); err != nil {
		t.Fatalf("cleanup: %v\n%s\n%s", err, out, errOut)
	}
	waitLWSGone(t, id)
}

// TestPathwaysHostKilled: a worker pod killed without warning makes LeaderWorkerSet
// recreate the group; the hosts do not run the job a second time, and the job is FAILED
// with a reason naming the restart (it does not stay RUNNING).
//
// Skipped unless KINETIC_LWS_KILL_TEST=1: on the test node the kubelet (v1.33.13 with
// cgroupsPerQOS false) panics in doPodResizeAction while LeaderWorkerSet recreates the
// group, so the old pods never finish terminating and the job stays PENDING; the runner's
// side (a host started twice records kinetic.HostRestarted) is covered by
// cli.TestHostAlreadyRan and the pod side (a restarted container) by TestJudgeGroup.
func TestPathwaysHostKilled(t *testing.T) {
	shared(t)
	if os.Getenv("KINETIC_LWS_KILL_TEST") != "1" {
		t.Skip("the test kubelet panics when LeaderWorkerSet recreates a group (set KINETIC_LWS_KILL_TEST=1 to run it)")
	}
	needLWS(t)
	st := newStore(t)
	out, errOut, err := python(t, st, multiHostEnv, `
import kinetic

@kinetic.run(accelerator="tpu-v6e-8")
def train():
    import time
    time.sleep(600)

h = train.run_async()
print("JOB", h.job_id, flush=True)
`)
	id := lineAfter(out, "JOB ")
	if err != nil || id == "" {
		t.Fatalf("script: %v\n%s\n%s", err, out, errOut)
	}
	ctx := context.Background()
	deadline := time.Now().Add(120 * time.Second)
	for {
		a, _ := st.Exists(ctx, store.HostStartedKey(id, "0"))
		b, _ := st.Exists(ctx, store.HostStartedKey(id, "1"))
		if a && b {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the hosts did not start (status %v)", func() string { s, r := status(t, st, id); return s + " " + r }())
		}
		time.Sleep(300 * time.Millisecond)
	}
	cs, _ := cluster.Client()
	pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "leaderworkerset.sigs.k8s.io/name=" + id + ",leaderworkerset.sigs.k8s.io/worker-index=1"})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("worker pod: %v %v", pods, err)
	}
	zero := int64(0)
	if err := cs.CoreV1().Pods("default").Delete(ctx, pods.Items[0].Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	var state, reason string
	for end := time.Now().Add(120 * time.Second); time.Now().Before(end); time.Sleep(500 * time.Millisecond) {
		if state, reason = status(t, st, id); state == "FAILED" {
			break
		}
	}
	if state != "FAILED" {
		t.Fatalf("status %s (%s) 2 minutes after the worker pod was killed; pods:\n%s\nstore: %v\nkubelet:\n%s\nlws:\n%s", state, reason, describePods(t, id), storeKeys(t, st, id), cluster.LogTail("kubelet", 3000), cluster.LogTail("lws-controller", 3000))
	}
	t.Logf("after the worker pod was killed: %s", reason)
	if !strings.Contains(reason, "host") {
		t.Errorf("reason %q does not name a host", reason)
	}
	if out, errOut, err := kinetic(t, st, nil, "jobs", "cleanup", id); err != nil {
		t.Fatalf("cleanup: %v\n%s\n%s", err, out, errOut)
	}
	waitLWSGone(t, id)
}

// describePods is a short description of a LeaderWorkerSet's pods, for failures.
func describePods(t *testing.T, id string) string { return describePodsIn("default", id) }

// describePodsIn is describePods in namespace ns.
func describePodsIn(ns, id string) string {
	cs, err := cluster.Client()
	if err != nil {
		return err.Error()
	}
	pods, err := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "leaderworkerset.sigs.k8s.io/name=" + id})
	if err != nil {
		return err.Error()
	}
	if len(pods.Items) == 0 {
		return "no pod\n"
	}
	var b strings.Builder
	for _, p := range pods.Items {
		fmt.Fprintf(&b, "%s phase=%s deleting=%v finalizers=%v grace=%v owners=%d", p.Name, p.Status.Phase, p.DeletionTimestamp, p.Finalizers, p.DeletionGracePeriodSeconds, len(p.OwnerReferences))
		for _, c := range p.Status.Conditions {
			fmt.Fprintf(&b, " %s=%s(%s)", c.Type, c.Status, c.Reason)
		}
		for _, c := range append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...) {
			fmt.Fprintf(&b, " [%s restarts=%d state=%+v last=%+v]", c.Name, c.RestartCount, c.State, c.LastTerminationState)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func storeKeys(t *testing.T, st *store.Store, id string) []string {
	objs, _ := st.List(context.Background(), store.JobPrefix(id))
	var keys []string
	for _, o := range objs {
		keys = append(keys, strings.TrimPrefix(o.Key, store.JobPrefix(id)))
	}
	return keys
}

// TestPathwaysGKESchedulingOnFakeNodes: on GKE, a 2-host tpu-v6e-8 job's LeaderWorkerSet
// pods ask for 4 TPU chips each with GKE's slice selectors and toleration, and land one
// per host on two fake TPU VMs (kwok) of that slice type, and on no other node.
func TestPathwaysGKESchedulingOnFakeNodes(t *testing.T) {
	alone(t)
	needLWS(t)
	c := needCluster(t)
	ctx := context.Background()
	cs, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	fake := map[string]bool{}
	for _, name := range []string{"gke-v6e-2x4-a", "gke-v6e-2x4-b"} {
		n := kubetest.FakeNode{Name: name,
			Labels:   map[string]string{"cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice", "cloud.google.com/gke-tpu-topology": "2x4"},
			Capacity: map[string]string{"google.com/tpu": "4"},
			Taints:   []corev1.Taint{{Key: "google.com/tpu", Value: "present", Effect: corev1.TaintEffectNoSchedule}}}
		if err := c.AddFakeNode(ctx, n); err != nil {
			t.Fatal(err)
		}
		fake[name] = true
		t.Cleanup(func() { cs.CoreV1().Nodes().Delete(context.Background(), n.Name, metav1.DeleteOptions{}) })
	}
	st := newStore(t)
	gke := []string{"KINETIC_BACKEND=gke", "KINETIC_PROJECT=p", "KINETIC_CLUSTER_TYPE=gke", "KINETIC_KUBE_CONTEXT=kinetic-test"} // gke needs a project (the cluster comes from the context)
	id := submitRun(t, st, gke, "--accelerator", "tpu-v6e-8", "--container-image", kubetest.PythonImage, "--", "true")
	deadline := time.Now().Add(90 * time.Second)
	for {
		pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "leaderworkerset.sigs.k8s.io/name=" + id})
		on := map[string]bool{}
		if err == nil {
			for _, p := range pods.Items {
				if p.Spec.NodeName != "" {
					if !fake[p.Spec.NodeName] {
						t.Fatalf("pod %s scheduled on %s, not on a fake v6e node", p.Name, p.Spec.NodeName)
					}
					on[p.Spec.NodeName] = true
				}
			}
		}
		if len(on) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the two hosts were not scheduled on the two fake v6e nodes within 90s; pods:\n%s", describePods(t, id))
		}
		time.Sleep(300 * time.Millisecond)
	}
	waitStatus(t, st, id, 60*time.Second, "RUNNING")
	if out, errOut, err := kinetic(t, st, nil, "jobs", "cleanup", id); err != nil {
		t.Fatalf("cleanup: %v\n%s\n%s", err, out, errOut)
	}
	waitLWSGone(t, id)
}

// groupLWS lists the LeaderWorkerSets of batch gid (by the group label its children's
// LeaderWorkerSets carry).
func groupLWS(t *testing.T, gid string) []string {
	t.Helper()
	list, err := dynClient(t).Resource(kubernetes.LWSResource).Namespace("default").List(context.Background(), metav1.ListOptions{LabelSelector: kubernetes.LabelGroupID + "=" + gid})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range list.Items {
		names = append(names, o.GetName())
	}
	return names
}

// waitGroupGone waits until batch gid has no LeaderWorkerSet and no pod left.
func waitGroupGone(t *testing.T, gid string) {
	t.Helper()
	cs, _ := cluster.Client()
	deadline := time.Now().Add(90 * time.Second)
	for {
		lws := groupLWS(t, gid)
		pods, err := cs.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{LabelSelector: kubernetes.LabelGroupID + "=" + gid})
		if len(lws) == 0 && err == nil && len(pods.Items) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("batch %s: LeaderWorkerSets %v and %d pods still there (%v)", gid, lws, len(pods.Items), err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// envelopeTime is when a host's run of job id ended, from its envelope in the store
// (the leader's, or host's own failure envelope).
func envelopeTime(t *testing.T, st *store.Store, id, host string) time.Time {
	t.Helper()
	key := store.EnvelopeKey(id)
	if host != "0" {
		key = store.HostEnvelopeKey(id, host)
	}
	raw, err := st.Get(context.Background(), key)
	if err != nil {
		t.Fatalf("%s: %v", key, err)
	}
	env, err := job.DecodeEnvelope(raw)
	if err != nil {
		t.Fatal(err)
	}
	return env.FinishedAt
}

// TestPathwaysBatch: run_async_map over a 2-host accelerator runs every input as its
// own LeaderWorkerSet (labelled with the batch), at most max_concurrent at once; the
// leaders' values come back in input order; an input whose non-leader host raises fails
// with that exception after its retry (a second LeaderWorkerSet); the status counts add
// up; every child's slice is released (replicas 0) once it ended; cleanup removes every
// LeaderWorkerSet of the batch.
func TestPathwaysBatch(t *testing.T) {
	shared(t)
	needLWS(t)
	st := newStore(t)
	out, errOut, err := python(t, st, multiHostEnv, `
import json, time, kinetic

@kinetic.run(accelerator="tpu-v6e-8")
def work(x):
    import os, time
    host = os.environ["KINETIC_HOST_INDEX"]
    if x == 1:
        if host != "0":
            time.sleep(1)
            raise ValueError("host %s refused input %d" % (host, x))
        time.sleep(600)  # the leader would wait for ever: the worker's failure decides
    return {"x": x, "square": x * x, "host": host, "job": os.environ["KINETIC_JOB_ID"]}

b = work.run_async_map([0, 1, 2], max_concurrent=2, retries=1)
print("GROUP", b.group_id, flush=True)
b.wait(timeout=600)
print("COUNTS", json.dumps(b.status_counts(), sort_keys=True), flush=True)
print("JOBS", " ".join(j.job_id for j in b.jobs), flush=True)
res = b.results(timeout=120, return_exceptions=True, cleanup=False)
for i, r in enumerate(res):
    print("RES%d %s %s" % (i, type(r).__name__, json.dumps(r, sort_keys=True) if isinstance(r, dict) else r), flush=True)
# The submitter (this process's engine) releases each child it sees end at its next
# look, at most half a second later: let it, before the process (and it) ends.
time.sleep(3)
`)
	gid := lineAfter(out, "GROUP ")
	if err != nil {
		t.Fatalf("script: %v\n%s\n%s", err, out, errOut)
	}
	ids := strings.Fields(lineAfter(out, "JOBS "))
	if len(ids) != 3 {
		t.Fatalf("jobs %v\n%s\n%s", ids, out, errOut)
	}
	if got := lineAfter(out, "COUNTS "); got != `{"FAILED": 1, "SUCCEEDED": 2}` {
		t.Errorf("status counts %s, want 2 SUCCEEDED and 1 FAILED\n%s", got, errOut)
	}
	for _, i := range []int{0, 2} {
		want := fmt.Sprintf(`RES%d dict {"host": "0", "job": %q, "square": %d, "x": %d}`, i, ids[i], i*i, i)
		if !strings.Contains(out, want) {
			t.Errorf("input %d: %q, want %q", i, lineAfter(out, fmt.Sprintf("RES%d ", i)), want)
		}
	}
	if got := lineAfter(out, "RES1 "); got != "ValueError host 1 refused input 1" {
		t.Errorf("input 1: %q, want the worker's ValueError", got)
	}
	// Input 1 ran twice (retries=1), each attempt its own LeaderWorkerSet, and failed by
	// its worker both times.
	raw, err := st.Get(context.Background(), store.HandleKey(ids[1]))
	if err != nil {
		t.Fatal(err)
	}
	h, err := job.DecodeHandle(raw)
	if err != nil || h.Backend != kubernetes.PathwaysName || h.GroupID != gid || h.GroupIndex != "1" {
		t.Errorf("input 1's handle: %+v (%v)", h, err)
	}
	var attempts []string
	for _, k := range storeKeysUnder(t, st, "jobs/") {
		if !strings.HasSuffix(k, "/hosts/1/result.json") {
			continue
		}
		raw, err := st.Get(context.Background(), k)
		if err != nil {
			t.Fatal(err)
		}
		if env, err := job.DecodeEnvelope(raw); err != nil || !env.Success { // a worker that ended well writes one too
			attempts = append(attempts, k)
		}
	}
	if len(attempts) != 2 {
		t.Errorf("worker failure envelopes %v, want two (the first attempt and its retry)", attempts)
	}
	// max_concurrent=2: input 2 was submitted only once input 0 or input 1's first
	// attempt had ended.
	created, _ := time.Parse(time.RFC3339Nano, handleOf(t, st, ids[2]).CreatedAt)
	firstEnd := envelopeTime(t, st, ids[0], "0")
	for _, k := range attempts {
		id := strings.Split(strings.TrimPrefix(k, "jobs/"), "/")[0]
		if e := envelopeTime(t, st, id, "1"); e.Before(firstEnd) {
			firstEnd = e
		}
	}
	if created.Before(firstEnd.Add(-time.Second)) { // pod and test clocks are one machine's
		t.Errorf("input 2 was created at %s, before any of the first two inputs ended (%s): more than max_concurrent=2 ran", created, firstEnd)
	}
	// Every attempt's slice was given back as soon as it ended (replicas 0: the
	// successes released by the submitter, the failures by their status), and the
	// LeaderWorkerSets stay for inspection until cleanup.
	lws := groupLWS(t, gid)
	if len(lws) != 4 {
		t.Errorf("LeaderWorkerSets of the batch %v, want 4 (3 inputs, one retried)", lws)
	}
	for _, name := range lws {
		obj, err := dynClient(t).Resource(kubernetes.LWSResource).Namespace("default").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if r, _, _ := unstructured.NestedInt64(obj.Object, "spec", "replicas"); r != 0 {
			t.Errorf("LeaderWorkerSet %s still has %d replicas after its job ended: its slice was not released", name, r)
		}
	}
	if out, errOut, err := kinetic(t, st, nil, "batch", "cleanup", gid); err != nil {
		t.Fatalf("kinetic batch cleanup: %v\n%s\n%s", err, out, errOut)
	}
	waitGroupGone(t, gid)
}

func handleOf(t *testing.T, st *store.Store, id string) *job.Handle {
	t.Helper()
	raw, err := st.Get(context.Background(), store.HandleKey(id))
	if err != nil {
		t.Fatal(err)
	}
	h, err := job.DecodeHandle(raw)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func storeKeysUnder(t *testing.T, st *store.Store, prefix string) []string {
	t.Helper()
	objs, err := st.List(context.Background(), prefix)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range objs {
		keys = append(keys, o.Key)
	}
	return keys
}

// TestPathwaysBatchFailFastCancel: with fail_fast, an input failed by its worker host
// stops submission (the third input is never submitted); cancelling the batch then
// cancels the input still running and deletes its LeaderWorkerSet; cleanup removes the
// failed input's.
func TestPathwaysBatchFailFastCancel(t *testing.T) {
	shared(t)
	needLWS(t)
	st := newStore(t)
	out, errOut, err := python(t, st, multiHostEnv, `
import json, time, kinetic

@kinetic.run(accelerator="tpu-v6e-8")
def work(x):
    import os, time
    if x == 0 and os.environ["KINETIC_HOST_INDEX"] == "1":
        time.sleep(8)  # input 1's hosts are running by then: fail_fast lets them run
        raise KeyError("shard %d missing on host 1" % x)
    time.sleep(600)

b = work.run_async_map([0, 1, 2], max_concurrent=2, fail_fast=True)
print("GROUP", b.group_id, flush=True)
deadline = time.time() + 300
while time.time() < deadline:
    c = b.status_counts()
    if c.get("FAILED") == 1 and len(b.submission_failures) == 1:
        break
    time.sleep(1)
print("COUNTS", json.dumps(b.status_counts(), sort_keys=True), flush=True)
print("NOT_SUBMITTED", " ".join("%d:%s" % (i, e) for i, e in sorted(b.submission_failures.items())), flush=True)
print("RUNNING", b.jobs[1].job_id, b.jobs[1].status().value, flush=True)
b.cancel()
print("CANCELLED", b.jobs[1].status().value, b.jobs[1].status_reason(), flush=True)
print("FAILED0", b.jobs[0].job_id, b.jobs[0].status_reason(), flush=True)
`)
	gid := lineAfter(out, "GROUP ")
	if err != nil {
		t.Fatalf("script: %v\n%s\n%s", err, out, errOut)
	}
	if got := lineAfter(out, "COUNTS "); got != `{"FAILED": 1, "RUNNING": 1}` {
		t.Errorf("counts before cancel %s, want 1 FAILED and 1 RUNNING\n%s", got, errOut)
	}
	if got := lineAfter(out, "NOT_SUBMITTED "); !strings.HasPrefix(got, "2:") || !strings.Contains(got, "fail_fast") {
		t.Errorf("not submitted: %q, want input 2 stopped by fail_fast", got)
	}
	f0 := strings.Fields(lineAfter(out, "FAILED0 "))
	if len(f0) == 0 || !strings.Contains(lineAfter(out, "FAILED0 "), "host 1 failed: builtins.KeyError") {
		t.Errorf("input 0's reason: %q, want host 1's KeyError", lineAfter(out, "FAILED0 "))
	}
	run := strings.Fields(lineAfter(out, "RUNNING "))
	if len(run) != 2 || run[1] != "RUNNING" {
		t.Fatalf("input 1 before cancel: %v", run)
	}
	if got := lineAfter(out, "CANCELLED "); !strings.HasPrefix(got, "FAILED") || !strings.Contains(got, "cancel") {
		t.Errorf("input 1 after cancel: %q, want FAILED (cancelled)", got)
	}
	// Cancel deleted input 1's LeaderWorkerSet; input 0's (failed, scaled to zero) stays
	// for inspection until cleanup.
	waitLWSGone(t, run[0])
	if got := groupLWS(t, gid); len(got) != 1 || len(f0) == 0 || got[0] != f0[0] {
		t.Errorf("LeaderWorkerSets of the batch after cancel: %v, want only input 0's", got)
	}
	if out, errOut, err := kinetic(t, st, nil, "batch", "cleanup", gid); err != nil {
		t.Fatalf("kinetic batch cleanup: %v\n%s\n%s", err, out, errOut)
	}
	waitGroupGone(t, gid)
}

// TestPathwaysDebug: a 2-host debug job. Only the leader starts debugpy; the worker
// says it waits for the leader's debugger and does not call the function; `kinetic jobs
// debug` port-forwards to the leader's pod, where a DAP client attaches and stops at a
// breakpoint; from the attach on, the worker calls its function (while the leader is
// still stopped); after continue, the leader's value is the job's result.
func TestPathwaysDebug(t *testing.T) {
	shared(t)
	needLWS(t)
	st := newStore(t)
	dir := t.TempDir()
	src := "import os\n\ndef f(x):\n    host = os.environ[\"KINETIC_HOST_INDEX\"]\n    print(\"CALLED host \" + host, flush=True)\n    y = x * 2\n    return {\"host\": host, \"y\": y}\n"
	if err := os.WriteFile(filepath.Join(dir, "m.py"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, string, error) {
		return runIn(t, st, dir, multiHostEnv, kineticBin, args...)
	}
	out, errOut, err := run("run", "--async", "--debug", "--debug-wait", "5m", "--accelerator", "tpu-v6e-8", "--container-image", kubetest.DebugPythonImage, "m.py::f", "21")
	if err != nil {
		t.Fatalf("submit: %v\n%s\n%s", err, out, errOut)
	}
	id := strings.TrimSpace(out)
	t.Cleanup(func() { run("jobs", "cleanup", id) })
	if h := handleOf(t, st, id); h.Backend != kubernetes.PathwaysName {
		t.Fatalf("backend %s, want pathways", h.Backend)
	}

	// The worker holds before the function.
	deadline := time.Now().Add(3 * time.Minute)
	for !strings.Contains(hostLogs(t, st, id, "1"), "waits for the leader's debugger") {
		if time.Now().After(deadline) {
			s, r := status(t, st, id)
			t.Fatalf("the worker does not say it waits (status %s %s); its output:\n%s\npods:\n%s", s, r, hostLogs(t, st, id, "1"), describePods(t, id))
		}
		time.Sleep(500 * time.Millisecond)
	}

	s, fwdErr := forwardDebugger(t, st, dir, id)
	if !s.Forwarded || s.Host != "127.0.0.1" || s.Marker.HostIndex != "0" {
		t.Fatalf("session %+v: want a local port-forward to host 0", s)
	}
	if w := hostLogs(t, st, id, "1"); strings.Contains(w, "CALLED") {
		t.Fatalf("the worker called the function before a debugger attached:\n%s", w)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := daptest.Dial(ctx, fmt.Sprintf("%s:%d", s.Host, s.Port))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	thread, top, err := c.StopAt(ctx, s.Launch["pathMappings"], filepath.Join(dir, "m.py"), 7)
	if err != nil {
		t.Fatalf("%v\n%s", err, fwdErr.String())
	}
	if top.Line != 7 {
		t.Errorf("stopped at line %d, want 7", top.Line)
	}
	if host, err := c.Evaluate(ctx, top.ID, "host"); err != nil || host != "'0'" {
		t.Fatalf("host = %q (%v) where the debugger stopped, want '0' (the leader)", host, err)
	}
	// The leader is stopped at the breakpoint; the worker, released by the attach, runs.
	deadline = time.Now().Add(60 * time.Second)
	for !strings.Contains(hostLogs(t, st, id, "1"), "CALLED host 1") {
		if time.Now().After(deadline) {
			t.Fatalf("the worker did not call the function after the debugger attached; its output:\n%s", hostLogs(t, st, id, "1"))
		}
		time.Sleep(500 * time.Millisecond)
	}
	w := hostLogs(t, st, id, "1")
	if !strings.Contains(w, "the leader's debugger attached") || strings.Index(w, "waits for the leader's debugger") > strings.Index(w, "CALLED host 1") {
		t.Errorf("the worker's output does not show it waited, then ran:\n%s", w)
	}
	if _, err := c.Request(ctx, "continue", map[string]any{"threadId": thread}); err != nil {
		t.Fatal(err)
	}
	out, errOut, err = run("jobs", "result", id)
	if err != nil || !strings.Contains(out, "'host': '0'") || !strings.Contains(out, "'y': 42") {
		t.Fatalf("result: %v %q\n%s", err, out, errOut)
	}
	if out, errOut, err := run("jobs", "cleanup", id); err != nil {
		t.Fatalf("cleanup: %v\n%s\n%s", err, out, errOut)
	}
	waitLWSGone(t, id)
}
