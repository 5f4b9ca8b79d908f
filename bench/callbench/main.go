// Command callbench measures one call on the real single-node test cluster
// (testkit/kubetest: a real kubelet, containerd and runc, the GCS emulator as the store,
// the test Python image cached on the node) from the call to the value, phase by phase,
// against its floor in the same run, and prints Markdown tables:
//
//   - `kinetic run m.py::add 1 2` through the kinetic binary, as a user runs it (one
//     warm-up call first), for each binary given (-bin, and -before to compare two
//     builds call by call, interleaved);
//   - a raw pod of the same image running `python3 -c 'print(1+2)'`, created with
//     client-go and awaited until it Succeeded and its log is read;
//   - an exec into a running pod of the same image (client-go remotecommand), the
//     floor of anything that keeps a pod up.
//
// The phases come from what the cluster and the runner already write: the Job and the
// pod as a watch sees them change (the pod's conditions and container states; the API
// stores those times in whole seconds, so the watch's arrival times are used), and the
// runner's timeline in the job's result.json (started_at, called_at, finished_at).
//
//	go run ./bench/callbench -bin DIR/kinetic [-before DIR/kinetic] [-n 20] [-warm]
//
// With -warm, the binary is measured twice, interleaved: with warm pods off
// (KINETIC_WARM_PODS=0, "cold": a pod per call) and on ("warm": each call after the
// warm-up is handed to the pod the last one left; docs/kubernetes.md, "Warm pods").
//
// Each binary's runner image is made from kinetic-runner-linux-amd64 beside it. Run it from
// inside the repository (the cluster's tools are found from there). It needs
// root (the cluster's bridge, containerd and kubelet).
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
	"github.com/kinetic-run/kinetic/testkit/kubetest"
)

const ns = "default"

func main() {
	bin := flag.String("bin", "", "the kinetic binary to measure (its runner binary beside it)")
	before := flag.String("before", "", "a second kinetic binary, measured interleaved with -bin as \"before\"")
	n := flag.Int("n", 20, "measured calls of each kind (after one warm-up)")
	execs := flag.Bool("exec", true, "also measure an exec into a running pod")
	warm := flag.Bool("warm", false, "measure -bin with warm pods off and on")
	flag.Parse()
	if *bin == "" {
		fmt.Fprintln(os.Stderr, "callbench: -bin is required (e.g. -bin bin/kinetic, after make build runner)")
		os.Exit(2)
	}
	if err := run(*bin, *before, *n, *execs, *warm); err != nil {
		fmt.Fprintln(os.Stderr, "callbench:", err)
		os.Exit(1)
	}
}

// variant is one kinetic binary under test.
type variant struct {
	name   string
	bin    string
	runner string   // its runner image
	home   string   // its KINETIC_HOME, kept across calls as a user's is
	env    []string // added to the environment of its calls
	keep   bool     // warm pods on: its pods stay between calls
	calls  []*callTimes
}

// callBench is one run of the benchmark: what its phases share.
type callBench struct {
	n        int
	withExec bool
	ctx      context.Context
	closers  []func() // undone in reverse order at the end
	vs       []*variant
	c        *kubetest.Cluster
	st       *store.Store
	storeURL string
	cfg      *rest.Config
	cs       *kubernetes.Clientset
	w        *watcher
	dir      string
	raws     []*rawTimes
	execs    []time.Duration
}

func run(bin, before string, n int, withExec, warm bool) error {
	b := &callBench{n: n, withExec: withExec, ctx: context.Background(), vs: variants(bin, before, warm)}
	defer b.close()
	phases := []func() error{b.findRunners, b.startCluster, b.pushRunners, b.openStore, b.watch, b.workdir, b.warmUp, b.measure, b.execCalls}
	for _, phase := range phases {
		if err := phase(); err != nil {
			return err
		}
	}
	report(os.Stdout, b.vs, b.raws, b.execs, n)
	return nil
}

func (b *callBench) close() {
	for i := len(b.closers) - 1; i >= 0; i-- {
		b.closers[i]()
	}
}

// variants are the binaries under test: -before and -bin, or -bin cold and warm.
func variants(bin, before string, warm bool) []*variant {
	var vs []*variant
	if before != "" {
		vs = append(vs, &variant{name: "before", bin: before})
	}
	vs = append(vs, &variant{name: "after", bin: bin})
	if before == "" {
		vs[0].name = "kinetic"
	}
	for _, v := range vs {
		v.env = []string{"KINETIC_WARM_PODS=0"}
	}
	if warm {
		vs[len(vs)-1].name = "cold"
		vs = append(vs, &variant{name: "warm", bin: bin, env: []string{"KINETIC_WARM_PODS=2", "KINETIC_WARM_POD_IDLE=60s"}, keep: true})
	}
	return vs
}

// findRunners checks each binary has its runner beside it.
func (b *callBench) findRunners() error {
	for _, v := range b.vs {
		abs, err := filepath.Abs(v.bin)
		if err != nil {
			return err
		}
		v.bin = abs
		if _, err := os.Stat(filepath.Join(filepath.Dir(abs), "kinetic-runner-linux-amd64")); err != nil {
			return fmt.Errorf("no runner beside %s (build it: make runner, or make test-tools): %w", abs, err)
		}
	}
	return nil
}

func (b *callBench) startCluster() error {
	c, err := kubetest.Start(b.ctx, kubetest.Options{Log: os.Stderr})
	if err != nil {
		return err
	}
	b.c = c
	b.closers = append(b.closers, func() { c.Stop() })
	return c.PushPythonImage(b.ctx)
}

// pushRunners makes each binary's runner image.
func (b *callBench) pushRunners() error {
	for _, v := range b.vs {
		v.runner = kubetest.RegistryURL + "/kinetic-bench/runner:" + v.name
		src := filepath.Join(filepath.Dir(v.bin), "kinetic-runner-linux-amd64")
		if err := kubetest.PushFiles(b.ctx, v.runner, []kubetest.File{{Path: strings.TrimPrefix(job.RunnerPath, "/"), Source: src, Mode: 0o755}}, []string{job.RunnerPath}, nil); err != nil {
			return err
		}
	}
	return nil
}

func (b *callBench) openStore() (err error) {
	if err := b.c.GCS.MakeBucket("bench"); err != nil {
		return err
	}
	b.storeURL = "gs://bench?endpoint=" + b.c.GCS.URL()
	if b.st, err = store.Open(b.ctx, b.storeURL); err != nil {
		return err
	}
	b.closers = append(b.closers, func() { b.st.Close() })
	return nil
}

// watch starts the watch of Jobs and pods.
func (b *callBench) watch() (err error) {
	if b.cfg, err = clientcmd.BuildConfigFromFlags("", b.c.Kubeconfig); err != nil {
		return err
	}
	if b.cs, err = kubernetes.NewForConfig(b.cfg); err != nil {
		return err
	}
	b.w = newWatcher(b.ctx, b.cs)
	b.closers = append(b.closers, b.w.stop)
	return nil
}

// workdir makes the directory of m.py, and each variant's home.
func (b *callBench) workdir() (err error) {
	if b.dir, err = os.MkdirTemp("", "callbench-"); err != nil {
		return err
	}
	b.closers = append(b.closers, func() { os.RemoveAll(b.dir) })
	if err := os.WriteFile(filepath.Join(b.dir, "m.py"), []byte("def add(a, b):\n    return a + b\n"), 0o644); err != nil {
		return err
	}
	for _, v := range b.vs {
		if v.home, err = os.MkdirTemp(b.dir, "home-"); err != nil {
			return err
		}
	}
	return nil
}

// env is the environment of v's calls: this one's without KINETIC_*, then the bench's.
func (b *callBench) env(v *variant) []string {
	var e []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KINETIC_") {
			e = append(e, kv)
		}
	}
	e = append(e, "KINETIC_HOME="+v.home, "KINETIC_PROFILES_FILE="+filepath.Join(v.home, "profiles.json"),
		"KINETIC_BIN="+v.bin, "KINETIC_BACKEND=k8s", "KINETIC_STORE="+b.storeURL, "KUBECONFIG="+b.c.Kubeconfig,
		"KINETIC_RUNNER_IMAGE="+v.runner, "KINETIC_IMAGE_REGISTRY="+kubetest.RegistryURL+"/kinetic-bench",
		"KINETIC_BASE_IMAGE_CPU="+kubetest.PythonImage, "KINETIC_BASE_IMAGE_GPU="+kubetest.PythonImage,
		"KINETIC_RUNTIME_LAYER=none", // the call's own cost, as before the runtime layer
		"KINETIC_POD_CPU="+podCPU, "KINETIC_UNSCHEDULABLE_GRACE=5s", "KINETIC_IMAGE_PULL_GRACE=20s")
	return append(e, v.env...)
}

func (b *callBench) call(v *variant) (*callTimes, error) {
	return kineticCall(b.ctx, b.cs, b.st, b.w, b.dir, v.bin, b.env(v), v.keep)
}

// warmUp puts every image on the node and fills every cache of the user's home.
func (b *callBench) warmUp() error {
	for _, v := range b.vs {
		if _, err := b.call(v); err != nil {
			return fmt.Errorf("warm-up (%s): %w", v.name, err)
		}
	}
	if _, err := rawPod(b.ctx, b.cs, b.w, "raw-warmup"); err != nil {
		return fmt.Errorf("warm-up raw pod: %w", err)
	}
	return nil
}

// measure makes n calls of each variant and n raw pods, interleaved.
func (b *callBench) measure() error {
	for i := 0; i < b.n; i++ {
		// Alternate the order, so neither binary always runs right after the raw pod.
		order := b.vs
		if i%2 == 1 {
			order = reversed(b.vs)
		}
		for _, v := range order {
			t, err := b.call(v)
			if err != nil {
				return fmt.Errorf("call %d (%s): %w", i, v.name, err)
			}
			v.calls = append(v.calls, t)
		}
		r, err := rawPod(b.ctx, b.cs, b.w, fmt.Sprintf("raw-%d", i))
		if err != nil {
			return fmt.Errorf("raw pod %d: %w", i, err)
		}
		b.raws = append(b.raws, r)
		fmt.Fprintf(os.Stderr, "callbench: %d/%d:", i+1, b.n)
		for _, v := range b.vs {
			fmt.Fprintf(os.Stderr, " %s %s", v.name, ms(v.calls[i].total()))
		}
		fmt.Fprintf(os.Stderr, " raw %s\n", ms(r.total()))
	}
	return nil
}

func (b *callBench) execCalls() (err error) {
	if !b.withExec {
		return nil
	}
	if b.execs, err = execCalls(b.ctx, b.cfg, b.cs, b.n); err != nil {
		return fmt.Errorf("exec: %w", err)
	}
	return nil
}

// podCPU is what each pod asks for, the measured ones and the raw ones alike.
const podCPU = "10m"

func reversed(vs []*variant) []*variant {
	out := make([]*variant, len(vs))
	for i, v := range vs {
		out[len(vs)-1-i] = v
	}
	return out
}

// seen is when the watch first saw each change of one Job and its pod.
type seen struct {
	job, pod, scheduled, initDone, running, terminated, succeeded time.Time
}

// watcher records the arrival times of the changes of Jobs and pods in ns: key is the
// Job's name for a Job's pod, the pod's own name otherwise.
type watcher struct {
	mu    sync.Mutex
	byKey map[string]*seen
	done  chan struct{}
}

func newWatcher(ctx context.Context, cs kubernetes.Interface) *watcher {
	w := &watcher{byKey: map[string]*seen{}, done: make(chan struct{})}
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns))
	f.Batch().V1().Jobs().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(o any) {
			if j, ok := o.(*batchv1.Job); ok {
				w.note(j.Name, func(s *seen, now time.Time) { first(&s.job, now) })
			}
		},
	})
	pod := func(o any) {
		p, ok := o.(*corev1.Pod)
		if !ok {
			return
		}
		key := p.Name
		if j := p.Labels["batch.kubernetes.io/job-name"]; j != "" {
			key = j
		}
		w.note(key, func(s *seen, now time.Time) {
			first(&s.pod, now)
			if p.Spec.NodeName != "" {
				first(&s.scheduled, now)
			}
			for _, c := range p.Status.InitContainerStatuses {
				if c.State.Terminated != nil {
					first(&s.initDone, now)
				}
			}
			for _, c := range p.Status.ContainerStatuses {
				if c.State.Running != nil || c.State.Terminated != nil {
					first(&s.running, now)
				}
				if c.State.Terminated != nil {
					first(&s.terminated, now)
				}
			}
			if p.Status.Phase == corev1.PodSucceeded {
				first(&s.succeeded, now)
			}
		})
	}
	f.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    pod,
		UpdateFunc: func(_, o any) { pod(o) },
	})
	f.Start(w.done)
	f.WaitForCacheSync(w.done)
	return w
}

func first(t *time.Time, now time.Time) {
	if t.IsZero() {
		*t = now
	}
}

func (w *watcher) note(key string, f func(*seen, time.Time)) {
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.byKey[key]
	if s == nil {
		s = &seen{}
		w.byKey[key] = s
	}
	f(s, now)
}

func (w *watcher) get(key string) seen {
	w.mu.Lock()
	defer w.mu.Unlock()
	if s := w.byKey[key]; s != nil {
		return *s
	}
	return seen{}
}

// waitFor waits until ok holds for key's record.
func (w *watcher) waitFor(ctx context.Context, key string, ok func(seen) bool) error {
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if ok(w.get(key)) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s: not seen within 2 minutes", key)
}

func (w *watcher) stop() { close(w.done) }

// callTimes is one `kinetic run`, as instants.
type callTimes struct {
	start, end time.Time // the process
	w          seen
	env        job.Envelope
}

var submitted = regexp.MustCompile(`kinetic: job (\S+) submitted`)

// kineticCall runs `kinetic run m.py::add 1 2` in dir and reads what the cluster and the
// runner recorded of it; it then removes its Job and waits for its pod to be gone (with
// keep, warm pods on, it leaves them: the next call may run there).
func kineticCall(ctx context.Context, cs kubernetes.Interface, st *store.Store, w *watcher, dir, bin string, env []string, keep bool) (*callTimes, error) {
	cmd := exec.CommandContext(ctx, bin, "run", "m.py::add", "1", "2")
	cmd.Dir, cmd.Env = dir, env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	t := &callTimes{start: time.Now()}
	err := cmd.Run()
	t.end = time.Now()
	if err != nil || strings.TrimSpace(out.String()) != "3" {
		return nil, fmt.Errorf("kinetic run: %v: stdout %q\n%s", err, out.String(), errb.String())
	}
	m := submitted.FindStringSubmatch(errb.String())
	if m == nil {
		return nil, fmt.Errorf("no job ID in the output:\n%s", errb.String())
	}
	id := m[1]
	raw, err := st.Get(ctx, store.EnvelopeKey(id))
	if err != nil {
		return nil, err
	}
	env2, err := job.DecodeEnvelope(raw)
	if err != nil {
		return nil, err
	}
	t.env = *env2
	if keep {
		t.w = w.get(id) // a call on a warm pod has no Job and no pod of its own
		return t, nil
	}
	// The watch may lag the store by a little: wait until it saw the pod end.
	if err := w.waitFor(ctx, id, func(s seen) bool { return !s.terminated.IsZero() }); err != nil {
		return nil, err
	}
	t.w = w.get(id)
	bg := metav1.DeletePropagationBackground
	if err := cs.BatchV1().Jobs(ns).Delete(ctx, id, metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
		return nil, err
	}
	return t, gone(ctx, cs, "batch.kubernetes.io/job-name="+id)
}

// gone waits until no pod matches sel, so every measurement starts on a quiet node.
func gone(ctx context.Context, cs kubernetes.Interface, sel string) error {
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		l, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err == nil && len(l.Items) == 0 {
			time.Sleep(300 * time.Millisecond) // the kubelet's teardown settles
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("pods %s not gone within 2 minutes", sel)
}

func (t *callTimes) total() time.Duration { return t.end.Sub(t.start) }

// rawTimes is one raw pod, as instants.
type rawTimes struct {
	start, created, read time.Time
	w                    seen
}

func (r *rawTimes) total() time.Duration { return r.read.Sub(r.start) }

func plainPod(name string, cmd []string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"callbench": name}},
		Spec: corev1.PodSpec{
			RestartPolicy:                corev1.RestartPolicyNever,
			AutomountServiceAccountToken: ptr(false),
			Containers: []corev1.Container{{
				Name: "c", Image: kubetest.PythonImage, ImagePullPolicy: corev1.PullIfNotPresent,
				Command:   cmd,
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(podCPU)}},
			}},
		},
	}
}

// rawPod creates a pod running python3 -c 'print(1+2)', waits until it Succeeded and
// reads its log (the value), then deletes it.
func rawPod(ctx context.Context, cs kubernetes.Interface, w *watcher, name string) (*rawTimes, error) {
	p := plainPod(name, []string{"python3", "-c", "print(1+2)"})
	r := &rawTimes{start: time.Now()}
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	r.created = time.Now()
	if err := w.waitFor(ctx, name, func(s seen) bool { return !s.succeeded.IsZero() }); err != nil {
		return nil, err
	}
	b, err := cs.CoreV1().Pods(ns).GetLogs(name, &corev1.PodLogOptions{Container: "c"}).DoRaw(ctx)
	r.read = time.Now()
	if err != nil || strings.TrimSpace(string(b)) != "3" {
		return nil, fmt.Errorf("log of %s: %q, %v", name, b, err)
	}
	r.w = w.get(name)
	if err := cs.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(0))}); err != nil {
		return nil, err
	}
	return r, gone(ctx, cs, "callbench="+name)
}

// execCalls runs python3 -c 'print(1+2)' n times (after one warm-up) in a running pod
// of the same image, as kubectl exec does.
func execCalls(ctx context.Context, cfg *rest.Config, cs kubernetes.Interface, n int) ([]time.Duration, error) {
	const name = "exec-target"
	p := plainPod(name, []string{"python3", "-c", "import time; time.sleep(3600)"})
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	defer cs.CoreV1().Pods(ns).Delete(context.WithoutCancel(ctx), name, metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(0))})
	deadline := time.Now().Add(2 * time.Minute)
	for {
		got, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err == nil && got.Status.Phase == corev1.PodRunning {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("pod %s not running within 2 minutes", name)
		}
		time.Sleep(100 * time.Millisecond)
	}
	one := func() (time.Duration, error) {
		t0 := time.Now()
		req := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(name).SubResource("exec").
			VersionedParams(&corev1.PodExecOptions{Container: "c", Command: []string{"python3", "-c", "print(1+2)"}, Stdout: true, Stderr: true}, scheme.ParameterCodec)
		ex, err := remotecommand.NewSPDYExecutor(cfg, "POST", req.URL())
		if err != nil {
			return 0, err
		}
		var out, errb bytes.Buffer
		if err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &out, Stderr: &errb}); err != nil {
			return 0, fmt.Errorf("%w: %s", err, errb.String())
		}
		d := time.Since(t0)
		if strings.TrimSpace(out.String()) != "3" {
			return 0, fmt.Errorf("exec printed %q", out.String())
		}
		return d, nil
	}
	if _, err := one(); err != nil {
		return nil, err
	}
	var ds []time.Duration
	for i := 0; i < n; i++ {
		d, err := one()
		if err != nil {
			return nil, err
		}
		ds = append(ds, d)
	}
	return ds, nil
}

func ptr[T any](v T) *T { return &v }

// phase is one row of a table: its duration in one sample (ok false: not observed).
type phase struct {
	name string
	of   func(any) (time.Duration, bool)
}

func between(a, b time.Time) (time.Duration, bool) {
	if a.IsZero() || b.IsZero() {
		return 0, false
	}
	return b.Sub(a), true
}

var callPhases = []phase{
	{"submit: process start → Job created (CLI start, config, working directory shipped, handle and spec written, Job created)", func(x any) (time.Duration, bool) {
		t := x.(*callTimes)
		return between(t.start, t.w.job)
	}},
	{"Job created → pod scheduled (Job controller, scheduler)", func(x any) (time.Duration, bool) {
		t := x.(*callTimes)
		return between(t.w.job, t.w.scheduled)
	}},
	{"pod scheduled → init container ended, as the kubelet reports it (sandbox, runner copied)", func(x any) (time.Duration, bool) {
		t := x.(*callTimes)
		return between(t.w.scheduled, t.w.initDone)
	}},
	{"init container ended → runner started (the kubelet starts the job container)", func(x any) (time.Duration, bool) {
		t := x.(*callTimes)
		return between(t.w.initDone, t.env.StartedAt)
	}},
	{"pod scheduled → runner started, in all (sandbox, the init container if any, the job container started)", func(x any) (time.Duration, bool) {
		t := x.(*callTimes)
		return between(t.w.scheduled, t.env.StartedAt)
	}},
	{"runner started → call (spec and tree read from the store)", func(x any) (time.Duration, bool) {
		t := x.(*callTimes)
		return between(t.env.StartedAt, t.env.CalledAt)
	}},
	{"call → returned (Python start, cloudpickle, import m, add(1, 2))", func(x any) (time.Duration, bool) {
		t := x.(*callTimes)
		return between(t.env.CalledAt, t.env.FinishedAt)
	}},
	{"returned → value printed (result written, seen by the CLI, read, process exit)", func(x any) (time.Duration, bool) {
		t := x.(*callTimes)
		return between(t.env.FinishedAt, t.end)
	}},
	{"**total: `kinetic run m.py::add 1 2`**", func(x any) (time.Duration, bool) { return x.(*callTimes).total(), true }},
}

var rawPhases = []phase{
	{"create request", func(x any) (time.Duration, bool) { r := x.(*rawTimes); return between(r.start, r.created) }},
	{"created → scheduled", func(x any) (time.Duration, bool) { r := x.(*rawTimes); return between(r.created, r.w.scheduled) }},
	{"scheduled → container running, as the kubelet reports it", func(x any) (time.Duration, bool) {
		r := x.(*rawTimes)
		return between(r.w.scheduled, r.w.running)
	}},
	{"running → pod Succeeded, as the kubelet reports it", func(x any) (time.Duration, bool) {
		r := x.(*rawTimes)
		return between(r.w.running, r.w.succeeded)
	}},
	{"Succeeded → log read (the value)", func(x any) (time.Duration, bool) { r := x.(*rawTimes); return between(r.w.succeeded, r.read) }},
	{"**total: raw pod, created → value**", func(x any) (time.Duration, bool) { return x.(*rawTimes).total(), true }},
}

// pct is the p-th percentile (nearest rank) of ds.
func pct(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(p*float64(len(s))+0.999999) - 1
	return s[max(0, min(i, len(s)-1))]
}

func ms(d time.Duration) string {
	return fmt.Sprintf("%d ms", d.Round(time.Millisecond).Milliseconds())
}

// column is p50 / p90 of one phase over samples ("—" if never observed; the count if
// observed in fewer than all).
func column(ph phase, samples []any) string {
	var ds []time.Duration
	for _, s := range samples {
		if d, ok := ph.of(s); ok {
			ds = append(ds, d)
		}
	}
	if len(ds) == 0 {
		return "— | —"
	}
	c := ms(pct(ds, 0.5)) + " | " + ms(pct(ds, 0.9))
	if len(ds) < len(samples) {
		c += fmt.Sprintf(" (%d of %d)", len(ds), len(samples))
	}
	return c
}

func report(w io.Writer, vs []*variant, raws []*rawTimes, execs []time.Duration, n int) {
	reportCalls(w, vs, n)
	fmt.Fprintf(w, "\n| floor, same run (%d each) | p50 | p90 |\n|---|---|---|\n", n)
	rs := make([]any, len(raws))
	for i, r := range raws {
		rs[i] = r
	}
	for _, ph := range rawPhases {
		fmt.Fprintf(w, "| %s | %s |\n", ph.name, column(ph, rs))
	}
	var rawTotals []time.Duration
	for _, r := range raws {
		rawTotals = append(rawTotals, r.total())
	}
	if len(execs) > 0 {
		fmt.Fprintf(w, "| **exec `python3 -c 'print(1+2)'` into a running pod (client-go remotecommand, SPDY)** | %s | %s |\n", ms(pct(execs, 0.5)), ms(pct(execs, 0.9)))
	}
	reportRatios(w, vs, pct(rawTotals, 0.5), execs)
}

// reportCalls prints the table of the calls' phases, a column pair per variant.
func reportCalls(w io.Writer, vs []*variant, n int) {
	fmt.Fprintf(w, "| phase (%d calls each, interleaved) |", n)
	for _, v := range vs {
		fmt.Fprintf(w, " %s p50 | %s p90 |", v.name, v.name)
	}
	fmt.Fprintf(w, "\n|---|")
	for range vs {
		fmt.Fprintf(w, "---|---|")
	}
	fmt.Fprintln(w)
	for _, ph := range callPhases {
		fmt.Fprintf(w, "| %s |", ph.name)
		for _, v := range vs {
			s := make([]any, len(v.calls))
			for i, c := range v.calls {
				s[i] = c
			}
			fmt.Fprintf(w, " %s |", column(ph, s))
		}
		fmt.Fprintln(w)
	}
}

// reportRatios prints each variant's p50 against the raw pod's (raw50) and the exec's.
func reportRatios(w io.Writer, vs []*variant, raw50 time.Duration, execs []time.Duration) {
	fmt.Fprintf(w, "\n| ratio of p50s | against the raw pod |")
	if len(execs) > 0 {
		fmt.Fprintf(w, " against the exec |")
	}
	fmt.Fprintf(w, "\n|---|---|")
	if len(execs) > 0 {
		fmt.Fprintf(w, "---|")
	}
	fmt.Fprintln(w)
	for _, v := range vs {
		var ts []time.Duration
		for _, c := range v.calls {
			ts = append(ts, c.total())
		}
		p := pct(ts, 0.5)
		fmt.Fprintf(w, "| `kinetic run` (%s) | **%.2f×** |", v.name, float64(p)/float64(raw50))
		if len(execs) > 0 {
			fmt.Fprintf(w, " %.1f× |", float64(p)/float64(pct(execs, 0.5)))
		}
		fmt.Fprintln(w)
	}
}
