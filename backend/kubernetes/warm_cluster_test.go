package kubernetes_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kinetic-run/kinetic/backend/kubernetes"
	"github.com/kinetic-run/kinetic/store"
)

// warmModule is the code the warm pod tests run: leak plants every kind of state a job
// could pass to the next one on the same pod; probe looks for each.
const warmModule = `import os, socket, subprocess, sys, threading, time

STATE = []

def leak():
    open("/tmp/kinetic-leak-file", "w").write("x")
    open("planted.txt", "w").write("x")
    os.environ["KINETIC_LEAK_VAR"] = "1"
    STATE.append(1)
    import json
    json.KINETIC_LEAK = 1
    threading.Thread(target=time.sleep, args=(1000,), name="kinetic-leak-thread", daemon=True).start()
    subprocess.Popen(["sh", "-c", "exec sleep 1001"])
    return socket.gethostname()

def escape():
    # leaves the job's session: the pod must not be kept
    subprocess.Popen(["setsid", "sleep", "1002"], start_new_session=True)
    return socket.gethostname()

def probe(wait=0):
    print("probe output", flush=True)
    time.sleep(wait)
    found = []
    if os.path.exists("/tmp/kinetic-leak-file"): found.append("tmp-file")
    if os.path.exists("planted.txt"): found.append("cwd-file")
    if "KINETIC_LEAK_VAR" in os.environ: found.append("env")
    import json
    if STATE or hasattr(json, "KINETIC_LEAK"): found.append("module-state")
    if any(t.name.startswith("kinetic-leak-thread") for t in threading.enumerate()): found.append("thread")
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                cmd = open("/proc/%s/cmdline" % pid, "rb").read()
            except OSError:
                continue
            if b"sleep\x00100" in cmd:
                found.append("process " + cmd.replace(b"\x00", b" ").decode())
    return "%s %s" % (socket.gethostname(), ",".join(found) or "clean")

HOG = []

def hog(mb):
    # kept in a module global: it goes with the job's interpreter
    HOG.append(b"x" * (int(mb) << 20))
    return socket.gethostname()

def shm_leak(mb):
    # a System V segment the job does not remove: it outlives the job's processes
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmat.restype = ctypes.c_void_p
    n = int(mb) << 20
    sid = libc.shmget(0, ctypes.c_size_t(n), 0o1600)
    if sid < 0:
        raise OSError(ctypes.get_errno(), "shmget")
    addr = libc.shmat(sid, None, 0)
    ctypes.memset(ctypes.c_void_p(addr), 1, n)
    return socket.gethostname()

def sleepy():
    print("sleepy started on", socket.gethostname(), flush=True)
    time.sleep(600)
`

// warmEnv turns warm pods on for one test (the harness's clusterEnv turns them off).
var warmEnv = []string{"KINETIC_WARM_PODS=2", "KINETIC_WARM_POD_IDLE=60s"}

// runWarm runs `kinetic run m.py::FUNC ARGS` in dir and returns what it printed and
// how long it took.
func runWarm(t *testing.T, st *store.Store, dir string, env []string, fn string, args ...string) (string, time.Duration) {
	t.Helper()
	t0 := time.Now()
	out, errOut, err := runIn(t, st, dir, append(append([]string{}, warmEnv...), env...), kineticBin, append([]string{"run", "--accelerator", "cpu", "m.py::" + fn}, args...)...)
	d := time.Since(t0)
	if err != nil {
		t.Fatalf("kinetic run m.py::%s: %v\n%s\n%s", fn, err, out, errOut)
	}
	return strings.Trim(strings.TrimSpace(out), "'"), d
}

func warmDir(t *testing.T) string {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "m.py"), []byte(warmModule), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestWarmPods: a second call of the same kind runs on the first call's pod, sooner;
// nothing of a job (a file in /tmp or its directory, an environment variable, a module's
// state, a thread, a background process) reaches the next job on the pod; a job that
// leaves a process outside its session makes its pod go; concurrent submitters never
// put two jobs on one pod.
func TestWarmPods(t *testing.T) {
	shared(t)
	_, st := newBackend(t, nil)
	dir := warmDir(t)

	pod1, cold := runWarm(t, st, dir, nil, "leak")
	if !strings.HasPrefix(pod1, "job-") {
		t.Fatalf("leak returned %q, not its pod's name", pod1)
	}
	// The warm pod of a bundled image starts the runner from that image.
	if cs, err := cluster.Client(); err == nil {
		if p, err := cs.CoreV1().Pods("default").Get(context.Background(), pod1, metav1.GetOptions{}); err != nil {
			t.Errorf("warm pod %s: %v", pod1, err)
		} else if len(p.Spec.InitContainers) != 0 {
			t.Errorf("warm pod %s: init containers %v: want the runner in the image", pod1, p.Spec.InitContainers)
		}
	}
	got, warm := runWarm(t, st, dir, nil, "probe")
	host, found, _ := strings.Cut(got, " ")
	if host != pod1 {
		t.Fatalf("the second call ran on pod %s, not on the first call's warm pod %s; its log:\n%s", host, pod1, podLog(t, pod1))
	}
	if found != "clean" {
		t.Errorf("the first job's state reached the next job on pod %s: %s", host, found)
	}
	t.Logf("cold call %s, warm call on the same pod %s", cold.Round(time.Millisecond), warm.Round(time.Millisecond))
	if warm >= cold {
		t.Errorf("the call on the warm pod took %s, the one that made the pod %s", warm, cold)
	}

	// Concurrent submitters: one idle pod, three calls at once. Each runs once, on a pod
	// of its own.
	var mu sync.Mutex
	hosts := map[string]int{}
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, _ := runWarm(t, st, dir, nil, "probe", "2")
			host, found, _ := strings.Cut(got, " ")
			if found != "clean" {
				t.Errorf("leak into a concurrent job on %s: %s", host, found)
			}
			mu.Lock()
			hosts[host]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	for h, n := range hosts {
		if n > 1 {
			t.Errorf("pod %s ran %d of the concurrent jobs: %v", h, n, hosts)
		}
	}
	if hosts[pod1] != 1 {
		t.Errorf("none of the concurrent jobs took the idle pod %s: %v; its log:\n%s", pod1, hosts, podLog(t, pod1))
	}

	// A job whose process leaves its session: its pod is not kept.
	pod2, _ := runWarm(t, st, dir, nil, "escape")
	got, _ = runWarm(t, st, dir, nil, "probe")
	host, found, _ = strings.Cut(got, " ")
	if host == pod2 {
		t.Errorf("the pod %s was kept after its job left a process outside its session (%s)", pod2, found)
	}
	if found != "clean" {
		t.Errorf("state reached a job on %s: %s", host, found)
	}
}

// TestWarmPodCancelAndIdle: a job on a warm pod is RUNNING by its pod's label, listed,
// its logs read; cancel kills the pod; an idle pod past its window exits, and the next
// call gets a new pod.
func TestWarmPodCancelAndIdle(t *testing.T) {
	shared(t)
	_, st := newBackend(t, nil)
	cs, err := cluster.Client()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	dir := warmDir(t)
	got, _ := runWarm(t, st, dir, nil, "probe")
	pod, _, _ := strings.Cut(got, " ")

	out, errOut, err := runIn(t, st, dir, warmEnv, kineticBin, "run", "--async", "--accelerator", "cpu", "m.py::sleepy")
	if err != nil {
		t.Fatalf("run --async: %v\n%s\n%s", err, out, errOut)
	}
	id := strings.TrimSpace(out)
	p, err := cs.CoreV1().Pods("default").Get(ctx, pod, metav1.GetOptions{})
	if err != nil || p.Labels[kubernetes.LabelJobID] != id {
		t.Fatalf("job %s is not on the warm pod %s: %v %v", id, pod, p.Labels, err)
	}
	waitStatus(t, st, id, 60*time.Second, "RUNNING")
	if out, errOut, err := kinetic(t, st, nil, "jobs", "list", "--json"); err != nil || !strings.Contains(out, id) {
		t.Errorf("jobs list does not show the job on the warm pod: %v\n%s\n%s", err, out, errOut)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, _, _ := kinetic(t, st, nil, "jobs", "logs", id)
		if strings.Contains(out, "sleepy started") {
			if !strings.Contains(out, "sleepy started on "+pod) {
				t.Errorf("job %s did not run on the warm pod %s:\n%s", id, pod, out)
			}
			if strings.Contains(out, "probe output") {
				t.Errorf("the logs of %s hold an earlier job's output:\n%s", id, out)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("logs of %s: %q", id, out)
		}
		time.Sleep(300 * time.Millisecond)
	}
	if out, errOut, err := kinetic(t, st, nil, "jobs", "cancel", id); err != nil {
		t.Fatalf("cancel: %v\n%s\n%s", err, out, errOut)
	}
	if s, r := status(t, st, id); s != "FAILED" || !strings.Contains(r, "cancelled") {
		t.Errorf("after cancel: %s (%s)", s, r)
	}
	waitPodGone(t, pod, 60*time.Second)

	// Idle expiry, with a short window.
	short := []string{"KINETIC_WARM_POD_IDLE=4s"}
	got, _ = runWarm(t, st, dir, short, "probe")
	idle, _, _ := strings.Cut(got, " ")
	deadline = time.Now().Add(40 * time.Second)
	for {
		p, err := cs.CoreV1().Pods("default").Get(ctx, idle, metav1.GetOptions{})
		if err != nil || p.Status.Phase == corev1.PodSucceeded {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the idle pod %s is still %s 40 s after a 4 s window", idle, p.Status.Phase)
		}
		time.Sleep(300 * time.Millisecond)
	}
	got, _ = runWarm(t, st, dir, short, "probe")
	if host, _, _ := strings.Cut(got, " "); host == idle {
		t.Errorf("a call ran on %s after its idle window ended", idle)
	}
}

func waitPodGone(t *testing.T, name string, within time.Duration) {
	t.Helper()
	cs, _ := cluster.Client()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		p, err := cs.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil || p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Errorf("pod %s still running %s after its job was cancelled", name, within)
}

// podLog is the job container's log of pod name (for failures).
func podLog(t *testing.T, name string) string {
	cs, err := cluster.Client()
	if err != nil {
		return err.Error()
	}
	b, err := cs.CoreV1().Pods("default").GetLogs(name, &corev1.PodLogOptions{Container: "job"}).DoRaw(context.Background())
	if err != nil {
		return err.Error()
	}
	return string(b)
}
