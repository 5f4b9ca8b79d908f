package dashboard

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	"cloud.google.com/go/container/apiv1/containerpb"

	"github.com/kinetic-run/kinetic/batch"
	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/engine"
	"github.com/kinetic-run/kinetic/infra"
	"github.com/kinetic-run/kinetic/infra/gke"
	"github.com/kinetic-run/kinetic/testkit/gketest"
)

// TestClusterGKE: on the gke backend the cluster page shows what `kinetic status` reads
// from Google's APIs (here the fakes of testkit/gketest, which implement the real
// generated servers): the cluster's state and its node pools.
func TestClusterGKE(t *testing.T) {
	ctx := context.Background()
	f := gketest.Start(t, gketest.Options{})
	c, err := gke.Dial(ctx, f.Endpoints)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.Cluster.CreateCluster(ctx, &containerpb.CreateClusterRequest{Parent: "projects/p/locations/us-central1-a",
		Cluster: &containerpb.Cluster{Name: "kinetic", NodePools: []*containerpb.NodePool{
			{Name: "cpu", Config: &containerpb.NodeConfig{MachineType: "e2-standard-4"}, Autoscaling: &containerpb.NodePoolAutoscaling{Enabled: true, MinNodeCount: 0, MaxNodeCount: 3}},
			{Name: "l4", InitialNodeCount: 2, Config: &containerpb.NodeConfig{MachineType: "g2-standard-8", Spot: true, Labels: map[string]string{gke.LabelAccelerator: "gpu-l4"},
				Accelerators: []*containerpb.AcceleratorConfig{{AcceleratorType: "nvidia-l4", AcceleratorCount: 1}}}},
		}}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := gke.Config{Project: "p", Zone: "us-central1-a", Cluster: "kinetic", Store: f.StoreURL("p-kinetic")}
	e, err := engine.New(config.Options{Getenv: func(k string) string { return map[string]string{"KINETIC_STORE": "mem://"}[k] }, ProfilesFile: t.TempDir() + "/p.json"}, engine.WithUnwritten(batch.Unwritten{}))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	tok, _ := NewToken()
	srv, err := New(e, Options{Token: tok, Backend: "gke", Cloud: func(ctx context.Context) (any, error) { return gke.GetStatus(ctx, c, cfg) }})
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest("GET", "/cluster", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, req)
	body := w.Body.String()
	if w.Code != 200 {
		t.Fatalf("%d %s", w.Code, body)
	}
	for _, want := range []string{"GKE cluster kinetic", "project p", "e2-standard-4", "g2-standard-8", "<td>cpu</td>", "<td>l4</td>", "0–3", "2–2", ">gpu-l4<", "not ready"} {
		if !strings.Contains(body, want) {
			t.Errorf("the cluster page lacks %q", want)
		}
	}
	// A failure to read says so, and the page still answers.
	srv.o.Cloud = func(context.Context) (any, error) {
		return nil, errString("GKE API: permission denied on project p")
	}
	w = httptest.NewRecorder()
	srv.ServeHTTP(w, req)
	if w.Code != 200 || !strings.Contains(w.Body.String(), "permission denied on project p") {
		t.Errorf("%d %s", w.Code, w.Body.String())
	}
}

type errString string

func (e errString) Error() string { return string(e) }

// warmCluster is a cluster with one node and three warm pods (an idle GPU pod, a busy
// CPU pod, one that ended), as backend/kubernetes labels them. client-go's fake stands
// in for the apiserver: this test is about the page; backend/kubernetes
// TestWarmPodsHeld shows real warm pods on the real test cluster.
func warmCluster(now time.Time) *infra.Target {
	pod := func(name, state, acc string, req corev1.ResourceList, ann map[string]string, phase corev1.PodPhase) *corev1.Pod {
		a := map[string]string{"kinetic.dev/accelerator": acc}
		for k, v := range ann {
			a[k] = v
		}
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", CreationTimestamp: metav1.NewTime(now.Add(-5 * time.Minute)),
				Labels:      map[string]string{infra.LabelWarm: "0123456789abcdef01234567", infra.LabelWarmState: state, infra.LabelJobID: "job-20261126-" + name},
				Annotations: a},
			Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "job", Image: "registry.example/python:3.12-slim",
				Resources: corev1.ResourceRequirements{Requests: req}}}},
			Status: corev1.PodStatus{Phase: phase},
		}
	}
	gpu := pod("job-gpu-warm", "idle", "gpu-l4", corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1"), corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi")},
		map[string]string{infra.AnnotationWarmIdleSince: now.Add(-20 * time.Second).UTC().Format(time.RFC3339Nano), infra.AnnotationWarmUntil: now.Add(40 * time.Second).UTC().Format(time.RFC3339Nano)}, corev1.PodRunning)
	cpu := pod("job-cpu-busy", "busy", "cpu", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}, nil, corev1.PodRunning)
	done := pod("job-cpu-ended", "idle", "cpu", nil, nil, corev1.PodSucceeded)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", Labels: map[string]string{"cloud.google.com/gke-nodepool": "l4-pool", "cloud.google.com/gke-accelerator": "nvidia-l4"}},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("4"), corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("32Gi")},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	return &infra.Target{Namespace: "default", Context: "test", Config: &rest.Config{Host: "https://10.0.0.1"}, Client: fake.NewSimpleClientset(node, gpu, cpu, done)}
}

// TestClusterWarmPods: the cluster page lists the warm pods with what they hold, since
// when they are idle and when they exit; a pod that ended is not listed. With Chromium,
// the page as a person sees it (a screenshot in $KINETIC_TEST_SHOTS, if set).
func TestClusterWarmPods(t *testing.T) {
	e, err := engine.New(config.Options{Getenv: func(k string) string { return map[string]string{"KINETIC_STORE": "mem://"}[k] }, ProfilesFile: t.TempDir() + "/p.json"}, engine.WithUnwritten(batch.Unwritten{}))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	tok, _ := NewToken()
	srv, err := New(e, Options{Token: tok, Backend: "k8s", Cluster: warmCluster(time.Now())})
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest("GET", "/cluster", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, req)
	body := w.Body.String()
	if w.Code != 200 {
		t.Fatalf("%d %s", w.Code, body)
	}
	row := func(pod string) string {
		i := strings.Index(body, `<tr data-pod="`+pod+`">`)
		if i < 0 {
			return ""
		}
		r, _, _ := strings.Cut(body[i:], "</tr>")
		return r
	}
	gpu := row("job-gpu-warm")
	for _, want := range []string{">idle<", ">gpu-l4<", "nvidia.com/gpu 1, cpu 4, memory 16Gi", `title="registry.example/python:3.12-slim">python:3.12-slim<`, "…gpu-warm", "(20s ago)", "node-1"} {
		if !strings.Contains(gpu, want) {
			t.Errorf("the idle GPU pod's row lacks %q:\n%s", want, gpu)
		}
	}
	if !strings.Contains(gpu, ">40s (") && !strings.Contains(gpu, ">39s (") {
		t.Errorf("the idle GPU pod's row does not say it exits in 40 s:\n%s", gpu)
	}
	cpu := row("job-cpu-busy")
	for _, want := range []string{">busy<", ">CPU<", "cpu 250m", "<td>–</td><td>–</td>"} {
		if !strings.Contains(cpu, want) {
			t.Errorf("the busy CPU pod's row lacks %q:\n%s", want, cpu)
		}
	}
	if strings.Contains(body, "job-cpu-ended") {
		t.Error("a warm pod that ended is listed")
	}

	// An empty namespace says so.
	srv.o.Cluster.Client = fake.NewSimpleClientset()
	w = httptest.NewRecorder()
	srv.ServeHTTP(w, req)
	if !strings.Contains(w.Body.String(), "No warm pods: none is held.") {
		t.Errorf("with no warm pods the page says:\n%s", w.Body.String())
	}
}

// TestBrowserClusterWarmPods opens the cluster page with warm pods in headless Chromium.
func TestBrowserClusterWarmPods(t *testing.T) {
	exe := chromium(t)
	e, err := engine.New(config.Options{Getenv: func(k string) string { return map[string]string{"KINETIC_STORE": "mem://"}[k] }, ProfilesFile: t.TempDir() + "/p.json"}, engine.WithUnwritten(batch.Unwritten{}))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	tok, _ := NewToken()
	srv, err := New(e, Options{Token: tok, Backend: "k8s", Cluster: warmCluster(time.Now())})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox,
		chromedp.WindowSize(1280, 860), chromedp.Flag("hide-scrollbars", true), chromedp.Flag("force-device-scale-factor", "1"), chromedp.WSURLReadTimeout(90*time.Second))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelA()
	ctx, cancelB := chromedp.NewContext(actx)
	defer cancelB()
	ctx, cancelT := context.WithTimeout(ctx, 120*time.Second)
	defer cancelT()
	var png []byte
	var text string
	var rows int
	if err := chromedp.Run(ctx, chromedp.Navigate(ts.URL+"/?token="+tok), chromedp.Navigate(ts.URL+"/cluster"), chromedp.WaitVisible(`#warm`),
		chromedp.Text(`#warm`, &text), chromedp.Evaluate(`document.querySelectorAll("#warm tr[data-pod]").length`, &rows),
		chromedp.FullScreenshot(&png, 100)); err != nil {
		t.Fatal(err)
	}
	if rows != 2 || !strings.Contains(text, "gpu-l4") || !strings.Contains(text, "idle") || !strings.Contains(text, "busy") {
		t.Errorf("%d warm pod rows (want 2); the section reads:\n%s", rows, text)
	}
	dir := os.Getenv("KINETIC_TEST_SHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	if err := os.WriteFile(filepath.Join(dir, "cluster-warm.png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestShortImage(t *testing.T) {
	for in, want := range map[string]string{
		"10.85.0.1:5000/kinetic-test/kinetic-env@sha256:7f75a24d691969adb8f9aca1bb6e2334c80ffacaf24f90b578e8001a1b0b203e": "kinetic-env@sha256:7f75a24d6919",
		"registry.example/python:3.12-slim": "python:3.12-slim",
		"python:3.12":                       "python:3.12",
	} {
		if got := shortImage(in); got != want {
			t.Errorf("shortImage(%q) = %q, want %q", in, got, want)
		}
	}
}
