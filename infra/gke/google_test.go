package gke_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/container/apiv1/containerpb"
	"google.golang.org/grpc/codes"

	"github.com/kinetic-run/kinetic/infra/gke"
	"github.com/kinetic-run/kinetic/testkit/adctest"
	"github.com/kinetic-run/kinetic/testkit/gketest"
)

// TestUserADCQuotaProject: with user credentials (authorized_user ADC, no quota
// project) Service Usage refuses a call that names no quota project, as Google does;
// DialFor names the project, so up plans; without it the error names `gcloud auth
// application-default set-quota-project`, never `kinetic up`.
func TestUserADCQuotaProject(t *testing.T) {
	tokens := adctest.Start(t)
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", tokens.AuthorizedUser(t, t.TempDir(), ""))
	e := setup(t, "us-central1-a", gketest.Options{UserADC: true})
	ctx := context.Background()
	_, err := gke.PlanUp(ctx, e.c, e.cfg) // e.c is gke.Dial: no project
	if err == nil || !strings.Contains(err.Error(), "gcloud auth application-default set-quota-project p") || strings.Contains(err.Error(), "kinetic up") {
		t.Fatalf("without a quota project: %v, want the set-quota-project fix and no `kinetic up`", err)
	}
	c, err := gke.DialFor(ctx, e.fake.Endpoints, "p")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p, err := gke.PlanUp(ctx, c, e.cfg)
	if err != nil {
		t.Fatalf("with the project as quota project: %v", err)
	}
	if err := p.Apply(ctx, nil); err != nil {
		t.Fatal(err)
	}
}

// TestAPIPropagation: APIs just enabled refuse calls for a while (403 SERVICE_DISABLED,
// as Google's do): up waits, says so, and goes on; when they stay refused past the
// bound, a clear error that does not send the user to `kinetic up`.
func TestAPIPropagation(t *testing.T) {
	e := setup(t, "us-central1-a", gketest.Options{NewProject: true, Propagation: 300 * time.Millisecond})
	ctx := context.Background()
	e.fake.SetAPI("p", "storage.googleapis.com", true)
	var out strings.Builder
	for i := 0; i < 2; i++ {
		p, err := gke.PlanUp(ctx, e.c, e.cfg)
		if err != nil {
			t.Fatalf("plan %d: %v\n%s", i, err, out.String())
		}
		if err := p.Apply(ctx, &out); err != nil {
			t.Fatalf("apply %d: %v\n%s", i, err, out.String())
		}
	}
	if !strings.Contains(out.String(), "waiting for container.googleapis.com to be ready in project p") {
		t.Errorf("up did not say it waits for the APIs:\n%s", out.String())
	}
	if p, err := gke.PlanUp(ctx, e.c, e.cfg); err != nil || p.Changes() != 0 {
		t.Errorf("after up: %v\n%s", err, printed(p))
	}

	// An API that stays refused: a bounded wait, then the error.
	e = setup(t, "us-central1-a", gketest.Options{NewProject: true, Propagation: time.Hour})
	e.fake.SetAPI("p", "storage.googleapis.com", true)
	e.cfg.APIWait = 50 * time.Millisecond
	p, err := gke.PlanUp(ctx, e.c, e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	err = p.Apply(ctx, nil)
	if err == nil || !strings.Contains(err.Error(), "still refuses calls after") || !strings.Contains(err.Error(), "run the same command again in a few minutes") || strings.Contains(err.Error(), "run `kinetic up`") {
		t.Fatalf("an API that stays refused: %v", err)
	}
	// Planning again while Google still refuses: the same advice, not `kinetic up`.
	_, err = gke.PlanUp(ctx, e.c, e.cfg)
	if err == nil || !strings.Contains(err.Error(), "run the same command again in a few minutes") || strings.Contains(err.Error(), "kinetic up") {
		t.Fatalf("plan while an enabled API is refused: %v", err)
	}
}

// TestClusterBusy: GKE runs one operation at a time per cluster; a pool added while
// another pool's create runs is refused (CLUSTER_ALREADY_HAS_OPERATION) until it is
// done. pool add waits for that operation, says so, and then makes its pool.
func TestClusterBusy(t *testing.T) {
	e := setup(t, "us-central1-a", gketest.Options{OpPolls: 4})
	ctx := context.Background()
	if _, err := e.up(t); err != nil {
		t.Fatal(err)
	}
	np, _, err := gke.NodePoolFor(gke.PoolOptions{Accelerator: "tpu-v5litepod-4"})
	if err != nil {
		t.Fatal(err)
	}
	// Another client's pool create, still running.
	if _, err := e.c.Cluster.CreateNodePool(ctx, &containerpb.CreateNodePoolRequest{Parent: "projects/p/locations/us-central1-a/clusters/kinetic-cluster", NodePool: np}); err != nil {
		t.Fatal(err)
	}
	p, err := gke.PlanPoolAdd(ctx, e.c, e.cfg, gke.PoolOptions{Accelerator: "gpu-l4"})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := p.Apply(ctx, &out); err != nil {
		t.Fatalf("pool add while another operation runs: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "cluster kinetic-cluster is running operation operation-") {
		t.Errorf("pool add did not say it waits for the other operation:\n%s", out.String())
	}
	if n := e.fake.Counts()["node_pools"]; n != 3 {
		t.Errorf("%d node pools, want 3 (system, the other, gpu-l4)", n)
	}
}

// TestOperationFailures: an operation that ends DONE with an error (a quota of zero, a
// zone's stockout) leaves its pool or cluster in ERROR, as GKE does: up names the quota,
// the region or zone and what to do, and the next up plans it as recreate, never ok.
func TestOperationFailures(t *testing.T) {
	ctx := context.Background()
	e := setup(t, "us-central1-a", gketest.Options{})
	e.cfg.Pool = &gke.PoolOptions{Accelerator: "gpu-l4"}
	e.fake.FailOp(containerpb.Operation_CREATE_NODE_POOL, codes.ResourceExhausted, "Quota 'NVIDIA_L4_GPUS' exceeded. Limit: 0.0 in region us-central1.")
	_, err := e.up(t)
	for _, want := range []string{"quota NVIDIA_L4_GPUS", "region us-central1", "limit 0", "iam-admin/quotas?project=p", "node pool gpu-l4"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("quota failure: %v, want it to say %q", err, want)
		}
	}
	if !gke.IsOpError(err) {
		t.Errorf("quota failure is not an OpError: %T", err)
	}
	p, err := gke.PlanUp(ctx, e.c, e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := printed(p); !strings.Contains(got, "~ recreate node pool gpu-l4") || !strings.Contains(got, "in ERROR at Google (Quota 'NVIDIA_L4_GPUS' exceeded") {
		t.Fatalf("the plan after a failed pool:\n%s", got)
	}
	if err := p.Apply(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if p, _ := gke.PlanUp(ctx, e.c, e.cfg); p.Changes() != 0 {
		t.Errorf("after the repair:\n%s", printed(p))
	}

	// A stockout during the cluster's create.
	e = setup(t, "us-central1-a", gketest.Options{})
	e.fake.FailOp(containerpb.Operation_CREATE_CLUSTER, codes.ResourceExhausted, "Try a different location, or try again later: Google Compute Engine does not have enough resources available to fulfill request: us-central1-a. ZONE_RESOURCE_POOL_EXHAUSTED")
	_, err = e.up(t)
	for _, want := range []string{"zone us-central1-a has no capacity", "--zone", "stockout"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("stockout: %v, want it to say %q", err, want)
		}
	}
	p, err = gke.PlanUp(ctx, e.c, e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := printed(p); !strings.Contains(got, "~ recreate cluster kinetic-cluster (it is in ERROR at Google") {
		t.Fatalf("the plan after a failed cluster:\n%s", got)
	}
	if err := p.Apply(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if cl := e.fake.Cluster("projects/p/locations/us-central1-a/clusters/kinetic-cluster"); cl.GetStatus() != containerpb.Cluster_RUNNING {
		t.Errorf("cluster after the repair: %v", cl.GetStatus())
	}
	if p, _ := gke.PlanUp(ctx, e.c, e.cfg); p.Changes() != 0 {
		t.Errorf("after the repair:\n%s", printed(p))
	}
}

// TestNoDefaultNetwork: a project without a `default` VPC network, where GKE refuses a
// cluster that names none: up makes Kinetic's own (kn-CLUSTER, auto-mode subnetworks,
// as the reference does) before the cluster and puts the cluster on it; down deletes
// it after the cluster.
func TestNoDefaultNetwork(t *testing.T) {
	e := setup(t, "us-central1-a", gketest.Options{NoDefaultNetwork: true})
	ctx := context.Background()
	p, err := gke.PlanUp(ctx, e.c, e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := printed(p); !strings.Contains(got, "+ create   network kn-kinetic-cluster (the project has no default network") {
		t.Fatalf("plan on a project without a default network:\n%s", got)
	}
	if err := p.Apply(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if cl := e.fake.Cluster("projects/p/locations/us-central1-a/clusters/kinetic-cluster"); !e.fake.Network("p", "kn-kinetic-cluster") || cl.GetNetwork() != "kn-kinetic-cluster" {
		t.Errorf("network made %v, cluster on %q", e.fake.Network("p", "kn-kinetic-cluster"), cl.GetNetwork())
	}
	if p, err := gke.PlanUp(ctx, e.c, e.cfg); err != nil || p.Changes() != 0 {
		t.Errorf("second up: %v\n%s", err, printed(p))
	}
	p, err = gke.PlanDown(ctx, e.c, e.cfg, gke.DownOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := printed(p); !strings.Contains(got, "- delete   network kn-kinetic-cluster") {
		t.Fatalf("down plan:\n%s", got)
	}
	if err := p.Apply(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if e.fake.Network("p", "kn-kinetic-cluster") {
		t.Error("down left the network")
	}
}
