package kubernetes

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/kinetic-run/kinetic/accel"
	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/infra/gke/gkeconn"
	"github.com/kinetic-run/kinetic/job"
)

type settings map[config.Key]string

func (s settings) Get(k string) string { return s[config.Key(k)] }

func TestRegistered(t *testing.T) {
	for _, n := range []string{GKEName, K8sName, PathwaysName} {
		if _, ok := backend.Lookup(n); !ok || !slices.Contains(backend.Names(), n) {
			t.Errorf("%s is not registered", n)
		}
		if backend.SharesFiles(n) {
			t.Errorf("%s runs on this machine", n)
		}
	}
}

// TestClusterOf: the handle's context, else GKE's get-credentials context when the
// kubeconfig has it, else a direct GKE connection (no kubeconfig needed).
func TestClusterOf(t *testing.T) {
	h := &job.Handle{Backend: GKEName, Project: "p", Zone: "z", ClusterName: "c", Namespace: "ns", KubeContext: "ctx"}
	if got := ClusterOf(h, "/kc"); got != (Cluster{Backend: GKEName, Project: "p", Zone: "z", Cluster: "c", Namespace: "ns", KubeContext: "ctx", Kubeconfig: "/kc"}) {
		t.Errorf("ClusterOf = %+v", got)
	}
	h.KubeContext = ""
	dir := t.TempDir()
	withGcloud := filepath.Join(dir, "gcloud")
	os.WriteFile(withGcloud, []byte(`apiVersion: v1
kind: Config
clusters: [{name: gke_p_z_c, cluster: {server: "https://10.0.0.2"}}]
users: [{name: gke_p_z_c, user: {token: x}}]
contexts: [{name: gke_p_z_c, context: {cluster: gke_p_z_c, user: gke_p_z_c}}]
`), 0o600)
	t.Setenv("KUBECONFIG", filepath.Join(dir, "none"))
	type want struct {
		ctx    string
		direct bool
	}
	for _, kc := range []string{withGcloud, ""} {
		for name, w := range map[string]want{GKEName: {"gke_p_z_c", false}, PathwaysName: {"gke_p_z_c", false}, K8sName: {"", false}} {
			if kc == "" && w.ctx != "" {
				w = want{"", true} // no kubeconfig has the context: direct
			}
			h.Backend = name
			got := ClusterOf(h, kc)
			if got.KubeContext != w.ctx || got.GKEDirect != w.direct {
				t.Errorf("%s, kubeconfig %q: context %q direct %v, want %q %v", name, kc, got.KubeContext, got.GKEDirect, w.ctx, w.direct)
			}
		}
	}
	// A context kinetic wrote (`up --write-kubeconfig`, for kubectl): direct all the
	// same (no plugin needed here, a changed CA followed).
	ours := filepath.Join(dir, "ours")
	if _, err := gkeconn.WriteKubeconfig(gkeconn.KubeconfigAccess(ours), gkeconn.Cluster{Project: "p", Zone: "z", Name: "c"}, gkeconn.Info{Endpoint: "10.0.0.2", CA: []byte("ca")}); err != nil {
		t.Fatal(err)
	}
	h.Backend = GKEName
	if got := ClusterOf(h, ours); got.KubeContext != "" || !got.GKEDirect || !HasContext(ours, "gke_p_z_c") {
		t.Errorf("kinetic's own context: %+v, want direct", got)
	}
	// Direct: the options carry the cluster and the connector (gcp_endpoints' container=
	// reaches a fake), and the factory key names the cluster.
	h.Backend = GKEName
	t.Setenv("KINETIC_HOME", dir)
	o := OptionsFor(GKEName, ClusterOf(h, ""), settings{KeyGCPEndpoints: "compute=http://x:1,container=http://127.0.0.1:9"})
	if o.GKE == nil || o.GKE.Cluster != (gkeconn.Cluster{Project: "p", Zone: "z", Name: "c"}) || o.GKE.Connector.ContainerEndpoint != "http://127.0.0.1:9" ||
		o.GKE.Connector.CacheDir != filepath.Join(dir, "cache", "gke") {
		t.Errorf("direct options: %+v", o.GKE)
	}
	f, _ := backend.Lookup(GKEName)
	if k := f.Key(backend.Env{Handle: h, Settings: settings{}}); k != "gke:projects/p/locations/z/clusters/c|ns" {
		t.Errorf("key %q", k)
	}
}

// TestFactory: one backend per context and namespace; options from the settings, the
// namespace from the handle first.
func TestFactory(t *testing.T) {
	f, _ := backend.Lookup(K8sName)
	s := settings{config.Namespace: "cfg-ns", KeyPodCPU: "2", KeyPullGrace: "3m", KeyAccelResources: "false"}
	a := backend.Env{Handle: &job.Handle{Backend: K8sName, KubeContext: "a", Namespace: "x"}, Settings: s}
	b := backend.Env{Handle: &job.Handle{Backend: K8sName, KubeContext: "a", Namespace: "y"}, Settings: s}
	if f.Key(a) == f.Key(b) {
		t.Errorf("two namespaces share the key %q", f.Key(a))
	}
	o := OptionsFor(PathwaysName, ClusterOf(&job.Handle{Backend: PathwaysName}, ""), settings{config.Namespace: "cfg-ns", config.Backend: K8sName, KeyPodCPU: "2", KeyPullGrace: "3m", KeyAccelResources: "false"})
	if o.Namespace != "cfg-ns" || o.CPU != "2" || o.PullGrace.Minutes() != 3 || !o.IgnoreAcceleratorResources || o.ClusterType != "generic" || o.Name != PathwaysName {
		t.Errorf("OptionsFor = %+v", o)
	}
}

// TestPlanPinsGenericContext: a multi-host job submitted with k8s runs on Pathways with
// the kubeconfig's current context recorded.
func TestPlanPinsGenericContext(t *testing.T) {
	f, _ := backend.Lookup(K8sName)
	sp, err := accel.Parse("tpu-v6e-16")
	if err != nil {
		t.Fatal(err)
	}
	h := &job.Handle{Backend: K8sName}
	// A kubeconfig that cannot be read has no current context: nothing pinned, no error.
	if err := f.Plan(h, sp, settings{KeyKubeconfig: "/nonexistent"}); err != nil || h.Backend != PathwaysName {
		t.Fatalf("Plan = %+v, %v", h, err)
	}
}

// TestTraits: every Kubernetes backend names a job's cluster objects after it (the
// engine records k8s_name), and none runs jobs on this machine.
func TestTraits(t *testing.T) {
	for _, n := range []string{GKEName, K8sName, PathwaysName} {
		f, _ := backend.Lookup(n)
		if tr := f.Traits(); tr != (backend.Traits{ObjectsNamedAfterJob: true}) {
			t.Errorf("%s: Traits = %+v", n, tr)
		}
	}
}

// TestLocation: a job planned now records its cluster in the handle's location, which
// ClusterOf reads (not the flat fields, the public view); a handle written by the
// previous version (no location: the cluster in the flat fields) still finds its cluster.
func TestLocation(t *testing.T) {
	f, _ := backend.Lookup(GKEName)
	h := &job.Handle{JobID: "job-1a2b3c4d", Backend: GKEName, Project: "p", Zone: "z", ClusterName: "c", Namespace: "ns", KubeContext: "ctx"}
	if err := f.Plan(h, accel.Spec{Kind: accel.CPU, Hosts: 1}, settings{}); err != nil {
		t.Fatal(err)
	}
	h2, err := job.DecodeHandle(h.Encode())
	if err != nil || h2.Location == "" {
		t.Fatalf("planned handle has no location: %v %+v", err, h2)
	}
	h2.ClusterName, h2.Namespace = "shown-elsewhere", "other" // the public view; the backend reads its own
	if c := ClusterOf(h2, ""); c.Cluster != "c" || c.Namespace != "ns" || c.KubeContext != "ctx" || c.Project != "p" {
		t.Errorf("ClusterOf a planned handle = %+v, want cluster c, namespace ns from the location", c)
	}
	old, err := job.DecodeHandle([]byte(`{"job_id":"job-1a2b3c4d","backend":"gke","project":"p","zone":"z","cluster_name":"c","namespace":"ns","kube_context":"ctx","k8s_name":"job-1a2b3c4d"}`))
	if err != nil {
		t.Fatal(err)
	}
	if c := ClusterOf(old, ""); c.Cluster != "c" || c.Namespace != "ns" || c.KubeContext != "ctx" || c.Project != "p" || c.Zone != "z" {
		t.Errorf("ClusterOf a handle of the previous version = %+v", c)
	}
}
