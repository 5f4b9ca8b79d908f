package gke_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/container/apiv1/containerpb"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kinetic-run/kinetic/image"
	"github.com/kinetic-run/kinetic/infra/gke"
	"github.com/kinetic-run/kinetic/infra/gke/gkename"
	"github.com/kinetic-run/kinetic/store"
	"github.com/kinetic-run/kinetic/testkit/gketest"
	"github.com/kinetic-run/kinetic/testkit/imagetest"
)

var ports = regexp.MustCompile(`127\.0\.0\.1:[0-9]+`)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// golden compares got with testdata/name.golden (rewritten with -update).
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		got = ports.ReplaceAllString(got, "127.0.0.1:PORT")
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	got = ports.ReplaceAllString(got, "127.0.0.1:PORT")
	if d := cmp.Diff(string(want), got); d != "" {
		t.Errorf("%s (-want +got):\n%s", path, d)
	}
}

// requests renders recorded calls for a golden file.
func requests(rs []gketest.Request) string {
	var b strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&b, "== %s\n", r.Method)
		if r.Body != "" {
			b.WriteString(r.Body + "\n")
		}
	}
	return b.String()
}

func printed(p *gke.Plan) string {
	var b strings.Builder
	p.Print(&b)
	return b.String()
}

type env struct {
	fake *gketest.Fake
	c    *gke.Clients
	cfg  gke.Config
	reg  *imagetest.Registry
}

// runnerBinaries writes two small stand-ins for the runner binaries next to a fake CLI
// path: the runner image is built and pushed from them as from the real ones.
func runnerBinaries(t testing.TB) image.RunnerSource {
	dir := t.TempDir()
	for _, p := range image.RunnerPlatforms {
		os.WriteFile(filepath.Join(dir, "kinetic-runner-"+strings.ReplaceAll(p, "/", "-")), []byte("runner for "+p), 0o755)
	}
	return image.RunnerSource{Exe: filepath.Join(dir, "kinetic")}
}

func setup(t *testing.T, zone string, o gketest.Options) *env {
	t.Helper()
	return setupTB(t, zone, o)
}

func setupTB(t testing.TB, zone string, o gketest.Options) *env {
	t.Helper()
	f := gketest.Start(t, o)
	c, err := gke.Dial(context.Background(), f.Endpoints)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	reg := imagetest.StartRegistry(t)
	return &env{fake: f, c: c, reg: reg, cfg: gke.Config{
		Project: "p", Zone: zone, Store: f.StoreURL(gkename.Bucket("p", "")), Poll: time.Millisecond,
		Registry: reg.Host + "/p/kn-kinetic-cluster",
		Runner:   gke.ImageRunner{Images: &image.Client{}, Source: runnerBinaries(t)},
	}}
}

func (e *env) up(t *testing.T) (*gke.Plan, error) {
	t.Helper()
	ctx := context.Background()
	p, err := gke.PlanUp(ctx, e.c, e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p, p.Apply(ctx, nil)
}

func TestUpFromNothingThenNoChange(t *testing.T) {
	e := setup(t, "us-central1-a", gketest.Options{})
	ctx := context.Background()
	p, err := gke.PlanUp(ctx, e.c, e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if m := e.fake.Mutations(); len(m) > 0 {
		t.Fatalf("planning changed something: %v", m)
	}
	golden(t, "plan_from_nothing", printed(p))
	e.fake.Reset()
	var out strings.Builder
	if err := p.Apply(ctx, &out); err != nil {
		t.Fatalf("apply: %v\n%s", err, out.String())
	}
	golden(t, "up_from_nothing", requests(e.fake.Requests()))

	cl := e.fake.Cluster("projects/p/locations/us-central1-a/clusters/kinetic-cluster")
	if cl.GetStatus() != containerpb.Cluster_RUNNING || cl.GetWorkloadIdentityConfig().GetWorkloadPool() != "p.svc.id.goog" ||
		!cl.GetAddonsConfig().GetGcsFuseCsiDriverConfig().GetEnabled() || cl.GetNodePools()[0].GetConfig().GetMachineType() != "e2-standard-4" {
		t.Errorf("cluster = %v", cl)
	}
	if !strings.HasPrefix(p.RunnerImage, e.reg.Host+"/p/kn-kinetic-cluster/kinetic-runner@sha256:") {
		t.Errorf("runner image = %q, want it by digest in %s", p.RunnerImage, e.reg.Host)
	}
	if got := e.fake.Counts(); got["clusters"] != 1 || got["node_pools"] != 1 || got["repositories"] != 1 || got["service_accounts"] != 1 {
		t.Errorf("counts = %v", got)
	}

	// A second up: every step ok, not one mutating request, nothing pushed.
	e.fake.Reset()
	e.reg.ResetRequests()
	p2, err := gke.PlanUp(ctx, e.c, e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if n := p2.Changes(); n != 0 {
		t.Errorf("second plan has %d changes:\n%s", n, printed(p2))
	}
	if err := p2.Apply(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if m := e.fake.Mutations(); len(m) != 0 {
		t.Errorf("second up made mutating requests:\n%s", requests(m))
	}
	if rs := e.reg.Requests(); len(rs) != 1 || !strings.HasPrefix(rs[0], "HEAD ") {
		t.Errorf("registry requests of the second up = %v, want one HEAD", rs)
	}
	golden(t, "up_again", printed(p2)+"\n"+requests(e.fake.Requests()))
}

func TestUpPartialFailureResumes(t *testing.T) {
	e := setup(t, "us-central1-a", gketest.Options{})
	ctx := context.Background()
	e.fake.FailNext("google.container.v1.ClusterManager/CreateCluster", status.Error(codes.ResourceExhausted, "Insufficient regional quota to satisfy request: resource \"CPUS\""))
	_, err := e.up(t)
	if err == nil || !strings.Contains(err.Error(), "create cluster kinetic-cluster") || !strings.Contains(err.Error(), "quota of CPUS is used up") || strings.Contains(err.Error(), "rpc error") {
		t.Fatalf("err = %v, want the cluster step's quota failure, worded", err)
	}
	// What was done before the failure stays; the next plan starts at the cluster.
	p, err := gke.PlanUp(ctx, e.c, e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "plan_after_failure", printed(p))
	e.fake.Reset()
	if err := p.Apply(ctx, nil); err != nil {
		t.Fatal(err)
	}
	golden(t, "up_resume", requests(e.fake.Mutations()))
	if p3, _ := gke.PlanUp(ctx, e.c, e.cfg); p3.Changes() != 0 {
		t.Errorf("after the resume:\n%s", printed(p3))
	}
}

func TestUpInterruptedResumes(t *testing.T) {
	e := setup(t, "us-central1-a", gketest.Options{OpPolls: 40})
	p, err := gke.PlanUp(context.Background(), e.c, e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { // Ctrl-C once the cluster operation is being polled
		for ctx.Err() == nil {
			for _, r := range e.fake.Requests() {
				if strings.HasSuffix(r.Method, "ClusterManager/GetOperation") {
					cancel()
				}
			}
			time.Sleep(time.Millisecond)
		}
	}()
	var out strings.Builder
	err = p.Apply(ctx, &out)
	cancel()
	var ie *gke.InterruptedError
	if !errors.As(err, &ie) || ie.Operation == "" || !strings.Contains(err.Error(), "cluster kinetic-cluster") || !strings.Contains(err.Error(), "run the same command again") {
		t.Fatalf("err = %v, want an InterruptedError naming the cluster and its operation", err)
	}
	for _, bad := range []string{"context canceled", "deadline exceeded"} {
		if strings.Contains(err.Error(), bad) {
			t.Errorf("Go error text reaches the user: %v", err)
		}
	}
	p2, err := gke.PlanUp(context.Background(), e.c, e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	got := printed(p2)
	if !strings.Contains(got, "~ wait     cluster kinetic-cluster") {
		t.Fatalf("the plan after Ctrl-C does not wait for the cluster:\n%s", got)
	}
	if err := p2.Apply(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if p3, _ := gke.PlanUp(context.Background(), e.c, e.cfg); p3.Changes() != 0 {
		t.Errorf("after the resume:\n%s", printed(p3))
	}
}

func TestDown(t *testing.T) {
	e := setup(t, "us-central1-a", gketest.Options{})
	ctx := context.Background()
	if _, err := e.up(t); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(ctx, e.cfg.Store)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Put(ctx, "jobs/j1/handle.json", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Get(ctx, "jobs/j1/handle.json"); err != nil {
		t.Fatalf("before down: %v", err)
	}
	st.Close()

	p, err := gke.PlanDown(ctx, e.c, e.cfg, gke.DownOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.fake.Reset()
	if err := p.Apply(ctx, nil); err != nil {
		t.Fatal(err)
	}
	golden(t, "down", printed(p)+"\n"+requests(e.fake.Mutations()))
	if got := e.fake.Counts(); got["clusters"]+got["repositories"]+got["service_accounts"] != 0 {
		t.Errorf("after down: %v", got)
	}
	// The bucket and its objects are kept.
	st, err = store.Open(ctx, e.cfg.Store)
	if err != nil {
		t.Fatalf("the bucket went without --force-destroy: %v", err)
	}
	if _, err := st.Get(ctx, "jobs/j1/handle.json"); err != nil {
		t.Errorf("object gone: %v", err)
	}
	st.Close()

	p, err = gke.PlanDown(ctx, e.c, e.cfg, gke.DownOptions{ForceDestroy: true})
	if err != nil {
		t.Fatal(err)
	}
	e.fake.Reset()
	if err := p.Apply(ctx, nil); err != nil {
		t.Fatal(err)
	}
	golden(t, "down_force_destroy", printed(p)+"\n"+requests(e.fake.Mutations()))
	if _, err := store.Open(ctx, e.cfg.Store); err == nil {
		t.Error("the bucket is still there after --force-destroy")
	}
	// Down again: nothing to do.
	p, _ = gke.PlanDown(ctx, e.c, e.cfg, gke.DownOptions{ForceDestroy: true})
	if p.Changes() != 0 {
		t.Errorf("down of nothing:\n%s", printed(p))
	}
}

func TestTPUOnlyZone(t *testing.T) {
	e := setup(t, "us-east5-b", gketest.Options{})
	if _, err := e.up(t); err != nil {
		t.Fatal(err)
	}
	p, _ := gke.PlanUp(context.Background(), e.c, e.cfg)
	_ = p
	cl := e.fake.Cluster("projects/p/locations/us-east5-b/clusters/kinetic-cluster")
	if mt := cl.GetNodePools()[0].GetConfig().GetMachineType(); mt != "n2d-highmem-4" {
		t.Errorf("system pool machine type %q, want n2d-highmem-4 (the smallest general-purpose type offered)", mt)
	}

	// The plan says which it chose and why.
	e2 := setup(t, "us-east5-b", gketest.Options{})
	p2, err := gke.PlanUp(context.Background(), e2.c, e2.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := printed(p2); !strings.Contains(got, "note: system pool machine type n2d-highmem-4: zone us-east5-b offers none of e2-standard-4") {
		t.Errorf("plan:\n%s", got)
	}

	// A zone with only accelerator types: a clear refusal naming the fix.
	e3 := setup(t, "us-south1-z", gketest.Options{Zones: map[string][]gketest.MachineType{"us-south1-z": {{Name: "ct6e-standard-4t", CPUs: 180, MemoryMB: 737280}}}})
	_, err = gke.PlanUp(context.Background(), e3.c, e3.cfg)
	if err == nil || !strings.Contains(err.Error(), "offers no general-purpose machine type") || !strings.Contains(err.Error(), "--zone") {
		t.Errorf("err = %v", err)
	}
}

func TestPools(t *testing.T) {
	e := setup(t, "us-central1-a", gketest.Options{})
	ctx := context.Background()
	if _, err := e.up(t); err != nil {
		t.Fatal(err)
	}
	add := func(o gke.PoolOptions) (*gke.Plan, error) {
		p, err := gke.PlanPoolAdd(ctx, e.c, e.cfg, o)
		if err != nil {
			return nil, err
		}
		return p, p.Apply(ctx, nil)
	}
	e.fake.Reset()
	var plans strings.Builder
	for _, o := range []gke.PoolOptions{
		{Accelerator: "tpu-v5p-16"}, // multi-host: 4 hosts of 2x2x4
		{Accelerator: "gpu-l4x2", MaxNodes: 3, MaxSet: true, Spot: true},
		{Accelerator: "a100", Reservation: "my-a100-reservation", MinNodes: 1},
		{Accelerator: "tpu-v5litepod-4:spot"},
	} {
		p, err := add(o)
		if err != nil {
			t.Fatalf("%+v: %v", o, err)
		}
		p.Print(&plans)
	}
	golden(t, "pool_add", plans.String()+"\n"+requests(e.fake.Mutations()))

	cl := e.fake.Cluster("projects/p/locations/us-central1-a/clusters/kinetic-cluster")
	byName := map[string]*containerpb.NodePool{}
	for _, np := range cl.GetNodePools() {
		byName[np.GetName()] = np
	}
	tpu := byName["tpu-v5p-16"]
	if pp := tpu.GetPlacementPolicy(); pp.GetType() != containerpb.NodePool_PlacementPolicy_COMPACT || pp.GetTpuTopology() != "2x2x4" ||
		tpu.GetConfig().GetMachineType() != "ct5p-hightpu-4t" || tpu.GetAutoscaling().GetMaxNodeCount() != 4 {
		t.Errorf("multi-host TPU pool = %v", tpu)
	}
	gpu := byName["gpu-l4x2-spot"]
	if a := gpu.GetConfig().GetAccelerators(); !gpu.GetConfig().GetSpot() || len(a) != 1 || a[0].GetAcceleratorCount() != 2 ||
		a[0].GetAcceleratorType() != "nvidia-l4" || a[0].GetGpuDriverInstallationConfig().GetGpuDriverVersion() != containerpb.GPUDriverInstallationConfig_LATEST {
		t.Errorf("spot GPU pool = %v", gpu)
	}
	res := byName["gpu-a100"].GetConfig().GetReservationAffinity()
	if res.GetConsumeReservationType() != containerpb.ReservationAffinity_SPECIFIC_RESERVATION || res.GetKey() != "compute.googleapis.com/reservation-name" || cmp.Diff([]string{"my-a100-reservation"}, res.GetValues()) != "" {
		t.Errorf("reservation = %v", res)
	}

	// The same pool again: nothing to do. A different one under that name: refused.
	e.fake.Reset()
	p, err := add(gke.PoolOptions{Accelerator: "tpu-v5p-16"})
	if err != nil || p.Changes() != 0 || len(e.fake.Mutations()) != 0 {
		t.Errorf("re-add: err %v, changes %d, mutations %v", err, p.Changes(), e.fake.Mutations())
	}
	if _, err := add(gke.PoolOptions{Accelerator: "gpu-l4x2", Spot: true}); err == nil || !strings.Contains(err.Error(), "exists with other settings") {
		t.Errorf("differing pool: %v", err)
	}

	pools, err := gke.ListPools(ctx, e.c, e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	var tbl strings.Builder
	gke.PrintPools(&tbl, pools)
	golden(t, "pool_list", tbl.String())

	p, err = gke.PlanPoolRemove(ctx, e.c, e.cfg, "gpu-a100")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Apply(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if n := e.fake.Counts()["node_pools"]; n != 4 {
		t.Errorf("node pools after remove = %d, want 4", n)
	}
	if _, err := gke.PlanPoolRemove(ctx, e.c, e.cfg, "gpu-a100"); err == nil || !strings.Contains(err.Error(), "pools: system") {
		t.Errorf("remove a missing pool: %v", err)
	}
	if _, err := gke.PlanPoolRemove(ctx, e.c, e.cfg, "system"); err == nil {
		t.Error("removing the system pool was allowed")
	}
}

func TestNodePoolForRefusals(t *testing.T) {
	for name, tc := range map[string]struct {
		o    gke.PoolOptions
		want string
	}{
		"unknown":              {gke.PoolOptions{Accelerator: "gpu-x9000"}, "--accelerator"},
		"cpu":                  {gke.PoolOptions{Accelerator: "cpu"}, "system pool"},
		"spot and reservation": {gke.PoolOptions{Accelerator: "gpu-l4", Spot: true, Reservation: "r"}, "exclude each other"},
		"slice partly":         {gke.PoolOptions{Accelerator: "tpu-v5p-16", MinNodes: 2}, "one slice of 4 hosts"},
		"min over max":         {gke.PoolOptions{Accelerator: "gpu-l4", MinNodes: 3, MaxNodes: 2, MaxSet: true}, "min ≤ max"},
		"bad name":             {gke.PoolOptions{Accelerator: "gpu-l4", Name: "GPU_pool"}, "pool name"},
	} {
		t.Run(name, func(t *testing.T) {
			_, _, err := gke.NodePoolFor(tc.o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to say %q", err, tc.want)
			}
		})
	}
}

func TestStatus(t *testing.T) {
	e := setup(t, "us-central1-a", gketest.Options{})
	ctx := context.Background()
	s, err := gke.GetStatus(ctx, e.c, e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if s.Ready() || s.ClusterStatus != "NOT_FOUND" {
		t.Errorf("status before up = %+v", s)
	}
	if _, err := e.up(t); err != nil {
		t.Fatal(err)
	}
	s, err = gke.GetStatus(ctx, e.c, e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	s.Print(&b)
	golden(t, "status", b.String())
}

func TestParseEndpoints(t *testing.T) {
	e, err := gke.ParseEndpoints("container=http://127.0.0.1:1, compute=http://127.0.0.1:2")
	if err != nil || e.Container != "http://127.0.0.1:1" || e.Compute != "http://127.0.0.1:2" {
		t.Errorf("%+v %v", e, err)
	}
	for _, bad := range []string{"container", "foo=http://x:1", "iam=127.0.0.1:3", "compute=ftp://h"} {
		if _, err := gke.ParseEndpoints(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func FuzzParseEndpoints(f *testing.F) {
	f.Add("container=http://127.0.0.1:1,iam=http://127.0.0.1:2")
	f.Add("=,=")
	f.Fuzz(func(t *testing.T, s string) {
		e, err := gke.ParseEndpoints(s)
		if err == nil {
			for _, v := range []string{e.Container, e.ArtifactRegistry, e.IAM, e.Compute} {
				if v != "" && !strings.HasPrefix(v, "http") {
					t.Errorf("accepted %q", v)
				}
			}
		}
	})
}

// TestUpOnAnExistingCluster: a cluster made elsewhere, without Workload Identity or the
// FUSE driver, gets one UpdateCluster for each and keeps its own pools.
func TestUpOnAnExistingCluster(t *testing.T) {
	e := setup(t, "us-central1-a", gketest.Options{})
	ctx := context.Background()
	op, err := e.c.Cluster.CreateCluster(ctx, &containerpb.CreateClusterRequest{Parent: "projects/p/locations/us-central1-a",
		Cluster: &containerpb.Cluster{Name: "kinetic-cluster", NodePools: []*containerpb.NodePool{{Name: "default-pool", InitialNodeCount: 3,
			Config: &containerpb.NodeConfig{MachineType: "n2-standard-4"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	for op.GetStatus() != containerpb.Operation_DONE {
		op, _ = e.c.Cluster.GetOperation(ctx, &containerpb.GetOperationRequest{Name: "projects/p/locations/us-central1-a/operations/" + op.GetName()})
	}
	p, err := gke.PlanUp(ctx, e.c, e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	got := printed(p)
	for _, want := range []string{"= ok       cluster kinetic-cluster (RUNNING)", "~ update   Workload Identity on cluster kinetic-cluster", "~ update   GCS FUSE CSI driver on cluster kinetic-cluster"} {
		if !strings.Contains(got, want) {
			t.Errorf("plan lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "node pool system") {
		t.Errorf("a system pool is added to a cluster that has pools:\n%s", got)
	}
	e.fake.Reset()
	if err := p.Apply(ctx, nil); err != nil {
		t.Fatal(err)
	}
	var updates int
	for _, r := range e.fake.Mutations() {
		if strings.HasSuffix(r.Method, "/UpdateCluster") {
			updates++
		}
	}
	if updates != 2 {
		t.Errorf("%d UpdateCluster calls, want 2", updates)
	}
	if p2, _ := gke.PlanUp(ctx, e.c, e.cfg); p2.Changes() != 0 {
		t.Errorf("after the updates:\n%s", printed(p2))
	}
}

// TestUpWithFirstPool: up --accelerator makes the cluster and then the pool, through
// pool add's step (golden plan); a second up finds both; a conflicting pool is refused.
func TestUpWithFirstPool(t *testing.T) {
	e := setup(t, "us-central1-a", gketest.Options{})
	ctx := context.Background()
	e.cfg.Pool = &gke.PoolOptions{Accelerator: "gpu-l4", MinNodes: 1}
	p, err := gke.PlanUp(ctx, e.c, e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "plan_up_with_pool", printed(p))
	if err := p.Apply(ctx, nil); err != nil {
		t.Fatal(err)
	}
	cl := e.fake.Cluster("projects/p/locations/us-central1-a/clusters/kinetic-cluster")
	var names []string
	for _, np := range cl.GetNodePools() {
		names = append(names, np.GetName())
		// A GPU pool grows to min+10 nodes, as the reference's (GPU_NODE_POOL_MAX_SCALE_UP).
		if np.GetName() == "gpu-l4" && (np.GetAutoscaling().GetMinNodeCount() != 1 || np.GetAutoscaling().GetMaxNodeCount() != 11 || np.GetConfig().GetMachineType() != "g2-standard-4") {
			t.Errorf("pool gpu-l4 = %v", np)
		}
	}
	if strings.Join(names, ",") != "system,gpu-l4" {
		t.Fatalf("pools %v, want system then gpu-l4", names)
	}
	e.fake.Reset()
	p, err = gke.PlanUp(ctx, e.c, e.cfg)
	if err != nil || p.Changes() != 0 || !strings.Contains(printed(p), "= ok       node pool gpu-l4") {
		t.Fatalf("second up: %v\n%s", err, printed(p))
	}
	e.cfg.Pool.MinNodes = 0
	e.cfg.Pool.MaxNodes, e.cfg.Pool.MaxSet = 3, true
	if _, err := gke.PlanUp(ctx, e.c, e.cfg); err == nil || !strings.Contains(err.Error(), "kinetic pool remove gpu-l4") {
		t.Fatalf("conflicting pool: %v", err)
	}
}

// TestTwoClustersDownOne: two clusters in one project each have their own bucket,
// repository and service account (the reference's per-cluster names); down of one
// leaves everything of the other, whose next up has nothing to do.
func TestTwoClustersDownOne(t *testing.T) {
	e := setup(t, "us-central1-a", gketest.Options{})
	ctx := context.Background()
	cfgOf := func(cluster string) gke.Config {
		c := e.cfg
		c.Cluster, c.Store, c.Registry = cluster, e.fake.StoreURL(gkename.Bucket("p", cluster)), e.reg.Host+"/p/"+gkename.Repository(cluster)
		return c
	}
	for _, name := range []string{"alpha", "beta"} {
		p, err := gke.PlanUp(ctx, e.c, cfgOf(name))
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Apply(ctx, nil); err != nil {
			t.Fatalf("up %s: %v", name, err)
		}
	}
	if got := e.fake.Counts(); got["clusters"] != 2 || got["repositories"] != 2 || got["service_accounts"] != 2 {
		t.Fatalf("two clusters made %v, want two of each", got)
	}
	p, err := gke.PlanDown(ctx, e.c, cfgOf("alpha"), gke.DownOptions{ForceDestroy: true})
	if err != nil {
		t.Fatal(err)
	}
	plan := printed(p)
	for _, want := range []string{"cluster alpha", "service account kn-alpha-jobs@p.iam.gserviceaccount.com", "store bucket gs://p-kn-alpha-jobs", "Artifact Registry repository kn-alpha"} {
		if !strings.Contains(plan, want) {
			t.Errorf("down plan lacks %q:\n%s", want, plan)
		}
	}
	if strings.Contains(plan, "beta") {
		t.Errorf("down of alpha touches beta:\n%s", plan)
	}
	if err := p.Apply(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if got := e.fake.Counts(); got["clusters"] != 1 || got["repositories"] != 1 || got["service_accounts"] != 1 {
		t.Errorf("after down of alpha: %v, want beta's cluster, repository and account", got)
	}
	e.fake.Reset()
	p, err = gke.PlanUp(ctx, e.c, cfgOf("beta"))
	if err != nil {
		t.Fatal(err)
	}
	if p.Changes() != 0 {
		t.Errorf("beta after down of alpha:\n%s", printed(p))
	}
	if st, err := store.Open(ctx, cfgOf("beta").Store); err != nil {
		t.Errorf("beta's store: %v", err)
	} else {
		st.Close()
	}
}
