// Command kubebench measures job submission to Kubernetes against the control plane of
// internal/kubetest, with kwok nodes running the pods (the real node is cordoned), and
// prints a Markdown table: API writes issued by Kinetic, time until submitted, time until
// every job is SUCCEEDED, against raw Job creates with client-go in the same run.
//
//	go run ./bench/kubebench [-n 1000]
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
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
	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/engine"
	"github.com/kinetic-run/kinetic/internal/kubetest"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
)

// writes counts the mutating API requests Kinetic's client sends.
var writes atomic.Int64

type counting struct{ rt http.RoundTripper }

func (c counting) RoundTrip(r *http.Request) (*http.Response, error) {
	switch r.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		writes.Add(1)
	}
	return c.rt.RoundTrip(r)
}

func main() {
	n := flag.Int("n", 1000, "inputs in the map, and single jobs in the loop")
	nodes := flag.Int("nodes", 4, "kwok nodes")
	flag.Parse()
	if err := run(*n, *nodes); err != nil {
		fmt.Fprintln(os.Stderr, "kubebench:", err)
		os.Exit(1)
	}
}

func run(n, nodes int) error {
	ctx := context.Background()
	c, err := kubetest.Start(ctx, kubetest.Options{Log: os.Stderr, Kwok: true})
	if err != nil {
		return err
	}
	defer c.Stop()
	cs, err := c.Client()
	if err != nil {
		return err
	}
	// Pods go to kwok's nodes only.
	if _, err := cs.CoreV1().Nodes().Patch(ctx, kubetest.NodeName, types.MergePatchType, []byte(`{"spec":{"unschedulable":true}}`), metav1.PatchOptions{}); err != nil {
		return err
	}
	for i := 0; i < nodes; i++ {
		if err := c.AddFakeNode(ctx, kubetest.FakeNode{Name: fmt.Sprintf("kwok-%d", i)}); err != nil {
			return err
		}
	}
	if err := c.GCS.MakeBucket("bench"); err != nil {
		return err
	}
	storeURL := "gs://bench?endpoint=" + c.GCS.URL()
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		return err
	}
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return counting{rt} }
	e, err := engine.New(config.Options{Args: map[config.Key]string{config.Backend: kubernetes.K8sName, config.Store: storeURL, config.Kubeconfig: c.Kubeconfig}, Getenv: func(string) string { return "" }, ProfilesFile: os.DevNull})
	if err != nil {
		return err
	}
	defer e.Close()
	e.RegisterBackend(kubernetes.K8sName, func(_ *engine.Engine, st *store.Store) (backend.Backend, error) {
		return kubernetes.New(st, kubernetes.Options{Name: kubernetes.K8sName, Namespace: "default", Config: cfg, Image: kubetest.PythonImage, RunnerImage: kubetest.PythonImage})
	})
	dir, _ := os.MkdirTemp("", "kubebench-")
	defer os.RemoveAll(dir)

	// 1. One map of n inputs.
	inputs := make([][]byte, n)
	for i := range inputs {
		inputs[i] = []byte(fmt.Sprintf("input %d", i))
	}
	writes.Store(0)
	t0 := time.Now()
	b, err := batch.Map(ctx, e, &batch.MapRequest{Template: engine.SubmitRequest{Kind: job.KindPickle, Payload: []byte("function"), FuncName: "noop", Cwd: dir, Accelerator: "cpu", ContainerImage: kubetest.PythonImage}, Inputs: inputs, MaxConcurrent: n})
	if err != nil {
		return err
	}
	mapReturned := time.Since(t0)
	mapWrites := writes.Load()
	<-b.Done()
	mapWritten := time.Since(t0)
	mapWritesAll := writes.Load()
	if err := waitJobs(ctx, c, kubernetes.LabelGroupID+"="+b.GroupID(), 1, func(j *batchv1.Job) int { return int(j.Status.Succeeded) }, n); err != nil {
		return err
	}
	mapDone := time.Since(t0)

	// The store's own limit in the same run: 3n small object writes, 16 at a time (what
	// the map's children cost: entry, spec, handle).
	st, err := e.Store(ctx, storeURL)
	if err != nil {
		return err
	}
	t0 = time.Now()
	g := new(errgroup.Group)
	g.SetLimit(16)
	for i := 0; i < 3*n; i++ {
		g.Go(func() error { return st.Put(ctx, fmt.Sprintf("bench/raw/%08d.json", i), []byte(`{"raw": true}`)) })
	}
	if err := g.Wait(); err != nil {
		return err
	}
	rawStore := time.Since(t0)

	// 2. n single jobs in a loop.
	writes.Store(0)
	t0 = time.Now()
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

	// 3. The physical limit: n raw Job creates with client-go, same client settings.
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

	fmt.Printf("| what (%d jobs, %d kwok nodes) | API writes | until submitted | until all SUCCEEDED |\n|---|---|---|---|\n", n, nodes)
	fmt.Printf("| `run_async_map` of %d inputs (one Indexed Job) | %d at return, %d in all | %s (Map returns; children in the store after %s) | %s |\n", n, mapWrites, mapWritesAll, round(mapReturned), round(mapWritten), round(mapDone))
	fmt.Printf("| %d single jobs, one `Submit` each | %d | %s | %s |\n", n, loopWrites, round(loopSubmitted), round(loopDone))
	fmt.Printf("| raw: %d Job creates with client-go | %d | %s | %s |\n", n, n, round(rawSubmitted), round(rawDone))
	fmt.Printf("| raw: %d small object writes to the store, 16 at a time | 0 | %s | — |\n", 3*n, round(rawStore))
	return nil
}

func round(d time.Duration) string { return d.Round(10 * time.Millisecond).String() }

func ptr[T any](v T) *T { return &v }

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
	for time.Now().Before(deadline) {
		list, err := cs.BatchV1().Jobs("default").List(ctx, metav1.ListOptions{LabelSelector: sel})
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
