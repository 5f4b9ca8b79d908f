package kubernetes

import (
	"slices"
	"testing"

	"github.com/kinetic-run/kinetic/accel"
	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/job"
)

type settings map[config.Key]string

func (s settings) Get(k string) string { return s[config.Key(k)] }

func TestRegistered(t *testing.T) {
	for _, n := range []string{GKEName, K8sName, PathwaysName} {
		if _, ok := backend.Lookup(n); !ok || !slices.Contains(backend.Names(), n) {
			t.Errorf("%s is not registered", n)
		}
		if backend.RunsOnThisMachine(n) {
			t.Errorf("%s runs on this machine", n)
		}
	}
}

// TestClusterOf: the handle's context, else GKE's get-credentials name, else none.
func TestClusterOf(t *testing.T) {
	h := &job.Handle{Backend: GKEName, Project: "p", Zone: "z", ClusterName: "c", Namespace: "ns", KubeContext: "ctx"}
	if got := ClusterOf(h, "/kc"); got != (Cluster{Backend: GKEName, Project: "p", Zone: "z", Cluster: "c", Namespace: "ns", KubeContext: "ctx", Kubeconfig: "/kc"}) {
		t.Errorf("ClusterOf = %+v", got)
	}
	h.KubeContext = ""
	for name, want := range map[string]string{GKEName: "gke_p_z_c", PathwaysName: "gke_p_z_c", K8sName: ""} {
		h.Backend = name
		if got := ClusterOf(h, "").KubeContext; got != want {
			t.Errorf("%s: context %q, want %q", name, got, want)
		}
	}
}

// TestFactory: one backend per context and namespace; options from the settings, the
// namespace from the handle first.
func TestFactory(t *testing.T) {
	f, _ := backend.Lookup(K8sName)
	s := settings{config.Namespace: "cfg-ns", config.PodCPU: "2", config.PullGrace: "3m", config.AccelResources: "false"}
	a := backend.Env{Handle: &job.Handle{Backend: K8sName, KubeContext: "a", Namespace: "x"}, Settings: s}
	b := backend.Env{Handle: &job.Handle{Backend: K8sName, KubeContext: "a", Namespace: "y"}, Settings: s}
	if f.Key(a) == f.Key(b) {
		t.Errorf("two namespaces share the key %q", f.Key(a))
	}
	o := OptionsFor(PathwaysName, ClusterOf(&job.Handle{Backend: PathwaysName}, ""), settings{config.Namespace: "cfg-ns", config.Backend: K8sName, config.PodCPU: "2", config.PullGrace: "3m", config.AccelResources: "false"})
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
	if err := f.(backend.Planner).Plan(h, sp, settings{config.Kubeconfig: "/nonexistent"}); err != nil || h.Backend != PathwaysName {
		t.Fatalf("Plan = %+v, %v", h, err)
	}
}
