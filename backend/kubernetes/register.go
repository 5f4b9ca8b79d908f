package kubernetes

import (
	"os"
	"path/filepath"
	"time"

	"github.com/kinetic-run/kinetic/accel"
	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/image"
	"github.com/kinetic-run/kinetic/job"
)

// The names this package registers: the handle's backend field of its jobs.
const (
	// GKEName runs jobs on Google Kubernetes Engine (GKE node selectors and
	// tolerations; the kube context gcloud names when the handle records none).
	GKEName = "gke"
	// K8sName runs jobs on any Kubernetes cluster (generic resource names only).
	K8sName = "k8s"
	// PathwaysName runs multi-host jobs, one LeaderWorkerSet each; jobs of the other
	// two names whose accelerator spans several hosts are sent here.
	PathwaysName = "pathways"
)

func init() {
	for _, n := range []string{GKEName, K8sName, PathwaysName} {
		backend.Register(n, factory{name: n})
	}
}

// Cluster is how to reach the cluster that holds a job: the facts recorded in its handle
// at submission, plus the kubeconfig file of this machine.
type Cluster struct {
	Backend   string `json:"backend"`
	Project   string `json:"project,omitempty"`
	Zone      string `json:"zone,omitempty"`
	Cluster   string `json:"cluster,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	// KubeContext is the kubeconfig context to use: the handle's, else for GKE backends
	// the context `gcloud container clusters get-credentials` names
	// (gke_PROJECT_ZONE_CLUSTER), else "" (the kubeconfig's current context).
	KubeContext string `json:"kube_context,omitempty"`
	// Kubeconfig is this machine's kubeconfig file (configuration key kubeconfig, else
	// KUBECONFIG; "" means the client's default, ~/.kube/config). It is not in the handle:
	// a path on the submitting machine means nothing on another one.
	Kubeconfig string `json:"kubeconfig,omitempty"`
}

// ClusterOf returns the cluster connection facts for h, with kubeconfig as this
// machine's kubeconfig file. They come from the handle, not from the active profile, so
// a job submitted to cluster A is observed, attached and debugged on A whatever profile
// is active now.
func ClusterOf(h *job.Handle, kubeconfig string) Cluster {
	c := Cluster{Backend: h.Backend, Project: h.Project, Zone: h.Zone, Cluster: h.ClusterName, Namespace: h.Namespace,
		KubeContext: h.KubeContext, Kubeconfig: kubeconfig}
	if c.KubeContext == "" && IsGKE(h.Backend) && c.Project != "" && c.Zone != "" && c.Cluster != "" {
		c.KubeContext = GKEContext(c.Project, c.Zone, c.Cluster)
	}
	return c
}

// GKEContext is the kubeconfig context `gcloud container clusters get-credentials`
// makes for a GKE cluster.
func GKEContext(project, zone, cluster string) string {
	return "gke_" + project + "_" + zone + "_" + cluster
}

// IsGKE reports whether name is a backend on Google Kubernetes Engine.
func IsGKE(name string) bool { return name == GKEName || name == PathwaysName }

// OptionsFor are the options of the backend called name for a job on cluster cl, from
// this machine's settings s: the namespace is the handle's, else the configured one;
// the pod settings are this machine's.
func OptionsFor(name string, cl Cluster, s backend.Settings) Options {
	get := func(k config.Key) string { return s.Get(string(k)) }
	namespace := cl.Namespace
	if namespace == "" {
		namespace = get(config.Namespace)
	}
	dur := func(k config.Key) time.Duration {
		d, _ := time.ParseDuration(get(k))
		return d
	}
	clusterType := get(config.ClusterType)
	if clusterType == "" && name == PathwaysName && get(config.Backend) == K8sName {
		// A multi-host job submitted with backend k8s: the cluster is not GKE.
		clusterType = "generic"
	}
	return Options{
		Name:               name,
		ClusterType:        clusterType,
		Kubeconfig:         cl.Kubeconfig,
		Context:            cl.KubeContext,
		Namespace:          namespace,
		ServiceAccount:     get(config.ServiceAccount),
		RunnerImage:        get(config.RunnerImage),
		StoreSecret:        get(config.StoreSecret),
		CPU:                get(config.PodCPU),
		Memory:             get(config.PodMemory),
		UnschedulableGrace: dur(config.Unschedulable),
		PullGrace:          dur(config.PullGrace),
		NodeLostGrace:      dur(config.NodeLostGrace),
		// Only "false" turns them off: an unset key keeps the devices.
		IgnoreAcceleratorResources: get(config.AccelResources) == "false",
	}
}

// factory makes the backends of one name: one per cluster context and namespace.
type factory struct{ name string }

func (f factory) cluster(env backend.Env) Cluster {
	return ClusterOf(env.Handle, env.Settings.Get(string(config.Kubeconfig)))
}

// Key implements backend.Factory.
func (f factory) Key(env backend.Env) string {
	c := f.cluster(env)
	return c.KubeContext + "|" + c.Namespace
}

// New implements backend.Factory.
func (f factory) New(env backend.Env) (backend.Backend, error) {
	o := OptionsFor(f.name, f.cluster(env), env.Settings)
	// The runner image: runner_image when set, else the index this CLI publishes to
	// image_registry at the first submission (one HEAD request once it is there).
	o.ResolveRunnerImage = image.RunnerImageFunc(&image.Client{}, image.RunnerImageRequest{
		Override: env.Settings.Get(string(config.RunnerImage)),
		Registry: env.Settings.Get(string(config.ImageRegistry)),
		Source:   image.RunnerSource{Exe: env.Exe, CacheDir: filepath.Join(config.DataDir(), "cache", "runner"), Progress: os.Stderr},
		Progress: os.Stderr,
	})
	if f.name == PathwaysName {
		return NewPathways(env.Store, o)
	}
	return New(env.Store, o)
}

// Plan implements backend.Planner: a slice over several hosts runs on Pathways (one
// LeaderWorkerSet); a multi-host job submitted with backend k8s pins the kubeconfig's
// current context, or ClusterOf would take a Pathways handle with a project for a GKE
// cluster's context.
func (f factory) Plan(h *job.Handle, acc accel.Spec, s backend.Settings) error {
	if !acc.MultiHost() {
		return nil
	}
	h.Backend = PathwaysName
	if f.name == K8sName && h.KubeContext == "" {
		h.KubeContext = CurrentContext(s.Get(string(config.Kubeconfig)))
	}
	return nil
}

var _ backend.Planner = factory{}
