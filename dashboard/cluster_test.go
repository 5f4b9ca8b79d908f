package dashboard

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"cloud.google.com/go/container/apiv1/containerpb"

	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/engine"
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
	e, err := engine.New(config.Options{Getenv: func(k string) string { return map[string]string{"KINETIC_STORE": "mem://"}[k] }, ProfilesFile: t.TempDir() + "/p.json"})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	tok, _ := NewToken()
	srv, err := New(e, Options{Token: tok, Backend: "gke", GKE: func(ctx context.Context) (*gke.Status, error) { return gke.GetStatus(ctx, c, cfg) }})
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
	srv.o.GKE = func(context.Context) (*gke.Status, error) {
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
