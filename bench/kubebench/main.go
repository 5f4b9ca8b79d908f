// Command kubebench measures batch submission to Kubernetes against the control plane of
// testkit/kubetest, with kwok nodes running the pods (the real node is cordoned), and
// prints Markdown tables: a map of n inputs (API writes, store objects written, time
// until fully submitted, time until the engine's watch saw every child end, the API
// requests of that watch per second, the engine's peak RSS), against one raw Indexed
// Job of n completions and raw store writes in the same run; and a loop of single jobs
// against raw Job creates.
//
//	go run ./bench/kubebench [-n 10000] [-nodes 1000] [-parallel 1000] [-singles 200]
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientset "k8s.io/client-go/kubernetes"

	"golang.org/x/sync/errgroup"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/backend/kubernetes"
	"github.com/kinetic-run/kinetic/batch"
	"github.com/kinetic-run/kinetic/batch/driver"
	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/engine"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
	"github.com/kinetic-run/kinetic/testkit/kubetest"
)

var trace, bundled bool

// writes and reads count the API requests Kinetic's client sends.
var writes, reads atomic.Int64

type counting struct{ rt http.RoundTripper }

func (c counting) RoundTrip(r *http.Request) (*http.Response, error) {
	switch r.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		writes.Add(1)
	default:
		reads.Add(1)
	}
	return c.rt.RoundTrip(r)
}

func main() {
	n := flag.Int("n", 10000, "inputs in the map")
	nodes := flag.Int("nodes", 1000, "kwok nodes")
	parallel := flag.Int("parallel", 1000, "max_concurrent of the map (the Indexed Job's parallelism)")
	singles := flag.Int("singles", 0, "single jobs submitted one by one, against as many raw Job creates (0: skip)")
	rawFirst := flag.Bool("raw-first", false, "also run a raw Indexed Job before the map (the ratio is then to the mean of the runs before and after it: the machine's load drifts)")
	flag.BoolVar(&bundled, "bundled", false, "run the map as on an image Kinetic built (the runner inside it: no init container), not a user-given container_image (kwok runs no container, so the Python image stands in for it)")
	flag.BoolVar(&trace, "trace", false, "print the Jobs' counts (active, ready, succeeded, failed) every 5 s to stderr")
	flag.Parse()
	if err := run(*n, *nodes, *parallel, *singles, *rawFirst); err != nil {
		fmt.Fprintln(os.Stderr, "kubebench:", err)
		os.Exit(1)
	}
}

// rssPeak samples this process's resident memory (the engine runs in it) until stop.
type rssPeak struct{ peak atomic.Int64 }

func (r *rssPeak) sample(stop <-chan struct{}) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		if kb := rssKB(); kb > r.peak.Load() {
			r.peak.Store(kb)
		}
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}

func rssKB() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb
		}
	}
	return 0
}

// kubeBench is one run of the benchmark: what its phases share and measure.
type kubeBench struct {
	n, nodes, parallel, singles int
	rawFirst                    bool

	ctx      context.Context
	closers  []func() // undone in reverse order at the end
	c        *kubetest.Cluster
	cfg      *rest.Config
	e        *engine.Engine
	st       *store.Store
	storeURL string
	dir      string

	rss      rssPeak
	rssStart int64
	stopRSS  chan struct{}
	mapStart time.Time
	m        mapResult
	raw      rawResult
}

// mapResult is what the map phase measured.
type mapResult struct {
	gid                                   string
	writes                                int64
	storeObjects                          int
	submitted, watched, done, clusterDone time.Duration
	watchReads, watchWrites, watchStore   int64
	ourPod                                int
}

// rawResult is what the raw phases measured.
type rawResult struct {
	before, after, indexed time.Duration
	pod                    int
	n                      int
	store, perObject       time.Duration
}

func run(n, nodes, parallel, singles int, rawFirst bool) error {
	k := &kubeBench{n: n, nodes: nodes, parallel: parallel, singles: singles, rawFirst: rawFirst, ctx: context.Background()}
	defer k.close()
	phases := []func() error{k.startCluster, k.startEngine, k.rawBeforeMap, k.submitMap, k.watchMap, k.rawLimits, k.report, k.singleJobs}
	for _, phase := range phases {
		if err := phase(); err != nil {
			return err
		}
	}
	return nil
}

func (k *kubeBench) close() {
	for i := len(k.closers) - 1; i >= 0; i-- {
		k.closers[i]()
	}
}

// startCluster starts the control plane with its kwok nodes; pods go to kwok's nodes
// only.
func (k *kubeBench) startCluster() error {
	ctx := k.ctx
	c, err := kubetest.Start(ctx, kubetest.Options{Log: os.Stderr, Kwok: true})
	if err != nil {
		return err
	}
	k.c = c
	k.closers = append(k.closers, func() { c.Stop() })
	cs, err := c.Client()
	if err != nil {
		return err
	}
	if _, err := cs.CoreV1().Nodes().Patch(ctx, kubetest.NodeName, types.MergePatchType, []byte(`{"spec":{"unschedulable":true}}`), metav1.PatchOptions{}); err != nil {
		return err
	}
	t0 := time.Now()
	g := new(errgroup.Group)
	g.SetLimit(16)
	for i := 0; i < k.nodes; i++ {
		g.Go(func() error { return c.AddFakeNode(ctx, kubetest.FakeNode{Name: fmt.Sprintf("kwok-%d", i)}) })
	}
	if err := g.Wait(); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "kubebench: %d kwok nodes in %s\n", k.nodes, round(time.Since(t0)))
	return c.GCS.MakeBucket("bench")
}

// startEngine makes the engine, which reaches the store through a counting proxy (its
// requests per child) and the cluster through a counting transport.
func (k *kubeBench) startEngine() error {
	storeProxy, err := countingProxy(k.c.GCS.URL())
	if err != nil {
		return err
	}
	k.storeURL = "gs://bench?endpoint=" + storeProxy
	if k.cfg, err = clientcmd.BuildConfigFromFlags("", k.c.Kubeconfig); err != nil {
		return err
	}
	cfg := k.cfg
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return counting{rt} }
	e, err := engine.New(config.Options{Args: map[config.Key]string{config.Backend: kubernetes.K8sName, config.Store: k.storeURL, kubernetes.KeyKubeconfig: k.c.Kubeconfig}, Getenv: func(string) string { return "" }, ProfilesFile: os.DevNull}, engine.WithUnwritten(batch.Unwritten{}))
	if err != nil {
		return err
	}
	k.e = e
	k.closers = append(k.closers, func() { e.Close() })
	e.RegisterBackend(kubernetes.K8sName, func(_ *engine.Engine, st *store.Store) (backend.Backend, error) {
		b, err := kubernetes.New(st, kubernetes.Options{Name: kubernetes.K8sName, Namespace: "default", Config: cfg, Image: kubetest.PythonImage, RunnerImage: kubetest.PythonImage})
		if err != nil || !bundled {
			return b, err
		}
		return bundledImage{b}, nil
	})
	if k.st, err = e.Store(k.ctx, k.storeURL); err != nil {
		return err
	}
	k.dir, _ = os.MkdirTemp("", "kubebench-")
	k.closers = append(k.closers, func() { os.RemoveAll(k.dir) })
	return nil
}

// rawBeforeMap runs a raw Indexed Job before the map (-raw-first).
func (k *kubeBench) rawBeforeMap() (err error) {
	if !k.rawFirst {
		return nil
	}
	if k.raw.before, err = rawIndexedJob(k.ctx, k.c, k.cfg, "raw-before", k.n, k.parallel); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "kubebench: raw Indexed Job before the map: %s\n", round(k.raw.before))
	return clearJob(k.ctx, k.cfg, "raw-before")
}

// submitMap submits one map of n inputs (store and cluster).
func (k *kubeBench) submitMap() error {
	ctx := k.ctx
	k.stopRSS = make(chan struct{})
	go k.rss.sample(k.stopRSS)
	k.rssStart = rssKB()
	inputs := make([][]byte, k.n)
	for i := range inputs {
		inputs[i] = []byte(fmt.Sprintf("input %d", i))
	}
	before, err := k.st.List(ctx, "")
	if err != nil {
		return err
	}
	writes.Store(0)
	k.mapStart = time.Now()
	t0 := k.mapStart
	b, err := batch.Map(ctx, k.e, &batch.MapRequest{Template: engine.SubmitRequest{Kind: job.KindPickle, Payload: []byte("function"), FuncName: "noop", Cwd: k.dir, Accelerator: "cpu", ContainerImage: kubetest.PythonImage}, Inputs: inputs, MaxConcurrent: k.parallel})
	if err != nil {
		return err
	}
	<-b.Done()
	k.m.submitted = time.Since(t0)
	k.m.writes = writes.Load()
	k.m.gid = b.GroupID()
	after, err := k.st.List(ctx, "")
	if err != nil {
		return err
	}
	k.m.storeObjects = len(after) - len(before)
	return nil
}

// watchMap watches the map to its end, and times when the cluster itself counted every
// index of its Job succeeded (a client of its own, outside the counted requests): the
// watch's lag after it is the engine's.
func (k *kubeBench) watchMap() error {
	ctx := k.ctx
	t0 := k.mapStart
	jobDone := make(chan time.Duration, 1)
	go func() {
		if err := waitJobs(ctx, k.c, kubernetes.LabelGroupID+"="+k.m.gid, 1, func(j *batchv1.Job) int { return int(j.Status.Succeeded) }, k.n); err != nil {
			jobDone <- -1
			return
		}
		jobDone <- time.Since(t0)
	}()
	reads.Store(0)
	storeRequests.Store(0)
	tw := time.Now()
	ended := 0
	if err := batch.Watch(ctx, k.e, k.m.gid, k.storeURL, func(batch.ChildStatus) { ended++ }); err != nil {
		return err
	}
	k.m.watched = time.Since(tw)
	k.m.done = time.Since(t0)
	k.m.clusterDone = <-jobDone
	k.m.watchReads, k.m.watchWrites = reads.Load(), writes.Load()-k.m.writes
	k.m.watchStore = storeRequests.Load()
	close(k.stopRSS)
	if ended != k.n {
		return fmt.Errorf("the watch saw %d of %d children end", ended, k.n)
	}
	k.m.ourPod = podBytes(ctx, k.cfg, k.m.gid)
	return clearJob(ctx, k.cfg, k.m.gid)
}

// rawLimits measures the physical limits in the same run: one raw Indexed Job of n
// completions, and raw small object writes to the store (what a child's entry, spec and
// handle each cost in the design that wrote them at submission).
func (k *kubeBench) rawLimits() (err error) {
	ctx := k.ctx
	if k.raw.after, err = rawIndexedJob(ctx, k.c, k.cfg, "raw-indexed", k.n, k.parallel); err != nil {
		return err
	}
	k.raw.indexed = k.raw.after
	k.raw.pod = podBytes(ctx, k.cfg, "raw-indexed")
	if k.rawFirst {
		k.raw.indexed = (k.raw.before + k.raw.after) / 2
	}
	k.raw.n = min(3*k.n, 3000)
	t0 := time.Now()
	g := new(errgroup.Group)
	g.SetLimit(16)
	for i := 0; i < k.raw.n; i++ {
		g.Go(func() error { return k.st.Put(ctx, fmt.Sprintf("bench/raw/%08d.json", i), []byte(`{"raw": true}`)) })
	}
	if err := g.Wait(); err != nil {
		return err
	}
	k.raw.store = time.Since(t0)
	k.raw.perObject = k.raw.store / time.Duration(k.raw.n)
	return nil
}

// report prints the tables.
func (k *kubeBench) report() error {
	n, m, raw := k.n, k.m, k.raw
	fmt.Printf("| %d inputs, %d kwok nodes, parallelism %d | API writes | store objects written | until fully submitted | until the watch saw all end |\n|---|---|---|---|---|\n", n, k.nodes, k.parallel)
	fmt.Printf("| `run_async_map` (one Indexed Job, derived children) | %d | %d | %s | %s (watch: %s; its Job counted all succeeded at %s) |\n", m.writes, m.storeObjects, round(m.submitted), round(m.done), round(m.watched), round(m.clusterDone))
	if k.rawFirst {
		fmt.Printf("| raw: one Indexed Job of %d completions, client-go, before and after the map (mean) | 1 | 0 | — | %s, %s (%s) |\n", n, round(raw.before), round(raw.after), round(raw.indexed))
	} else {
		fmt.Printf("| raw: one Indexed Job of %d completions, client-go | 1 | 0 | — | %s |\n", n, round(raw.indexed))
	}
	kind := "a user-given `container_image`: an init container copies the runner in"
	if bundled {
		kind = "an image Kinetic built: the runner is in it"
	}
	fmt.Printf("\nour pods run %s; one pod is %d bytes in JSON without its managed fields, a raw pod %d (%.2f×)\n", kind, m.ourPod, raw.pod, float64(m.ourPod)/float64(max(raw.pod, 1)))
	fmt.Printf("\nratio to the raw Indexed Job: %.2f× (the watch), %.2f× (our Job's own count)\n\n", m.done.Seconds()/raw.indexed.Seconds(), m.clusterDone.Seconds()/raw.indexed.Seconds())
	fmt.Printf("| raw: %d small store writes, 16 at a time (%s each: %d inputs × 3 would take %s) | 0 | %d | %s | — |\n\n", raw.n, raw.perObject.Round(10*time.Microsecond), n, round(raw.perObject*time.Duration(3*n)), raw.n, round(raw.store))
	fmt.Printf("| the engine while it watched | value |\n|---|---|\n")
	fmt.Printf("| API requests of the watch | %d reads, %d writes in %s: %.1f per second for %d children |\n", m.watchReads, m.watchWrites, round(m.watched), float64(m.watchReads+m.watchWrites)/m.watched.Seconds(), n)
	fmt.Printf("| store requests of the watch | %d: %.1f per child |\n", m.watchStore, float64(m.watchStore)/float64(n))
	fmt.Printf("| peak RSS of the engine's process (map and watch) | %.0f MB (%.0f MB at start) |\n", float64(k.rss.peak.Load())/1024, float64(k.rssStart)/1024)
	return nil
}

// singleJobs is the loop of single jobs against raw Job creates (-singles).
func (k *kubeBench) singleJobs() error {
	if k.singles <= 0 {
		return nil
	}
	return loop(k.ctx, k.c, k.e, k.cfg, k.dir, k.singles)
}

// bundledImage starts each batch as on an image Kinetic built, which holds the runner
// (the handle's runner_in_image, as planning sets it): its pods have no init container
// copying the runner in. Everything else is the Kubernetes backend's own.
type bundledImage struct{ *kubernetes.Backend }

func (b bundledImage) StartGroup(ctx context.Context, g driver.Group, tmpl *job.Handle) error {
	h := *tmpl
	h.RunnerInImage = kubetest.PythonImage
	return b.Backend.StartGroup(ctx, g, &h)
}

// podBytes is the size in JSON of one pod of the Job name, as the apiserver stores and
// sends it (what each create, status update and watch event carries).
func podBytes(ctx context.Context, cfg *rest.Config, name string) int {
	cs, err := kubernetesClient(cfg)
	if err != nil {
		return 0
	}
	l, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=" + name, Limit: 1})
	if err != nil || len(l.Items) == 0 {
		return 0
	}
	p := l.Items[0]
	p.ManagedFields = nil
	b, _ := json.Marshal(&p)
	return len(b)
}

// clearJob deletes Job name and its pods and waits until they are gone, so that the next
// phase starts on a namespace as empty as the first one did: a cluster that still holds
// the 10,000 finished pods of the phase before is slower (every list and watch of pods,
// and etcd, carry them), which made the raw Job after a map take about twice the one
// before it.
func clearJob(ctx context.Context, cfg *rest.Config, name string) error {
	cs, err := kubernetesClient(cfg)
	if err != nil {
		return err
	}
	t0 := time.Now()
	bg := metav1.DeletePropagationBackground
	if err := cs.BatchV1().Jobs("default").Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
		return fmt.Errorf("delete Job %s: %w", name, err)
	}
	sel := "batch.kubernetes.io/job-name=" + name
	zero := int64(0)
	for {
		// kwok pods have no kubelet to confirm a graceful delete: delete them at once.
		cs.CoreV1().Pods("default").DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{LabelSelector: sel})
		l, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: sel, Limit: 1})
		if err != nil {
			return err
		}
		if len(l.Items) == 0 {
			break
		}
		time.Sleep(2 * time.Second)
	}
	fmt.Fprintf(os.Stderr, "kubebench: Job %s and its pods deleted in %s\n", name, round(time.Since(t0)))
	return nil
}

// rawIndexedJob runs one raw Indexed Job of n completions (client-go, pods of the
// Python image and nothing else) and returns the time until the cluster counted them all
// succeeded.
func rawIndexedJob(ctx context.Context, c *kubetest.Cluster, cfg *rest.Config, name string, n, parallel int) (time.Duration, error) {
	raw, err := kubernetesClient(cfg)
	if err != nil {
		return 0, err
	}
	t0 := time.Now()
	indexed := batchv1.IndexedCompletion
	rj := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"raw": name}},
		Spec: batchv1.JobSpec{CompletionMode: &indexed, Completions: ptr(int32(n)), Parallelism: ptr(int32(parallel)), BackoffLimitPerIndex: ptr(int32(0)),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "c", Image: kubetest.PythonImage}}}}}}
	if _, err := raw.BatchV1().Jobs("default").Create(ctx, rj, metav1.CreateOptions{}); err != nil {
		return 0, err
	}
	if err := waitJobs(ctx, c, "raw="+name, 1, func(j *batchv1.Job) int { return int(j.Status.Succeeded) }, n); err != nil {
		return 0, err
	}
	return time.Since(t0), nil
}

// loop submits n single jobs one by one, against n raw Job creates.
func loop(ctx context.Context, c *kubetest.Cluster, e *engine.Engine, cfg *rest.Config, dir string, n int) error {
	writes.Store(0)
	t0 := time.Now()
	for i := 0; i < n; i++ {
		if _, err := e.Submit(ctx, &engine.SubmitRequest{Kind: job.KindCommand, Command: []string{"true"}, Cwd: dir, Accelerator: "cpu", ContainerImage: kubetest.PythonImage}); err != nil {
			return err
		}
	}
	loopSubmitted := time.Since(t0)
	loopWrites := writes.Load()
	if err := waitJobs(ctx, c, kubernetes.LabelJobID, n, func(j *batchv1.Job) int { return int(j.Status.Succeeded) }, n); err != nil {
		return err
	}
	loopDone := time.Since(t0)
	raw, err := kubernetesClient(cfg)
	if err != nil {
		return err
	}
	t0 = time.Now()
	for i := 0; i < n; i++ {
		j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("raw-%d", i), Labels: map[string]string{"raw": "1"}},
			Spec: batchv1.JobSpec{BackoffLimit: ptr(int32(0)), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "c", Image: kubetest.PythonImage}}}}}}
		if _, err := raw.BatchV1().Jobs("default").Create(ctx, j, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	rawSubmitted := time.Since(t0)
	if err := waitJobs(ctx, c, "raw=1", n, func(j *batchv1.Job) int { return int(j.Status.Succeeded) }, n); err != nil {
		return err
	}
	rawDone := time.Since(t0)
	fmt.Printf("\n| %d single jobs | API writes | until submitted | until all SUCCEEDED |\n|---|---|---|---|\n", n)
	fmt.Printf("| one `Submit` each | %d | %s | %s |\n", loopWrites, round(loopSubmitted), round(loopDone))
	fmt.Printf("| raw: Job creates with client-go | %d | %s | %s |\n", n, round(rawSubmitted), round(rawDone))
	return nil
}

// storeRequests counts the requests the engine sends to the store.
var storeRequests atomic.Int64

// countingProxy forwards to target on a loopback port of its own, counting requests.
func countingProxy(target string) (string, error) {
	u, err := url.Parse(target)
	if err != nil {
		return "", err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	p := httputil.NewSingleHostReverseProxy(u)
	go http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		storeRequests.Add(1)
		r.Host = u.Host // the emulator routes by host
		p.ServeHTTP(w, r)
	}))
	return "http://" + l.Addr().String(), nil
}

func round(d time.Duration) string { return d.Round(10 * time.Millisecond).String() }

func ptr[T any](v T) *T { return &v }

func ptrOr(p *int32) int32 {
	if p == nil {
		return -1
	}
	return *p
}

func kubernetesClient(cfg *rest.Config) (*clientset.Clientset, error) {
	c := rest.CopyConfig(cfg)
	c.WrapTransport = nil
	c.QPS, c.Burst = 100, 200
	return clientset.NewForConfig(c)
}

// waitJobs waits until the Jobs matching sel (want of them) sum to total by count.
func waitJobs(ctx context.Context, c *kubetest.Cluster, sel string, want int, count func(*batchv1.Job) int, total int) error {
	cs, err := c.Client()
	if err != nil {
		return err
	}
	deadline := time.Now().Add(20 * time.Minute)
	t0, last := time.Now(), time.Now()
	for time.Now().Before(deadline) {
		list, err := cs.BatchV1().Jobs("default").List(ctx, metav1.ListOptions{LabelSelector: sel})
		if trace && err == nil && time.Since(last) > 5*time.Second {
			last = time.Now()
			for _, j := range list.Items {
				fmt.Fprintf(os.Stderr, "trace %s %s: active %d ready %d succeeded %d failed %d\n", round(time.Since(t0)), sel, j.Status.Active, ptrOr(j.Status.Ready), j.Status.Succeeded, j.Status.Failed)
			}
		}
		if err == nil && len(list.Items) >= want {
			sum := 0
			for i := range list.Items {
				sum += count(&list.Items[i])
			}
			if sum >= total {
				return nil
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	return fmt.Errorf("jobs %s did not all succeed within 20 minutes", sel)
}
