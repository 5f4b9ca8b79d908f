package kubernetes

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/kinetic-run/kinetic/accel"
	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/errs"
	"github.com/kinetic-run/kinetic/image"
	"github.com/kinetic-run/kinetic/infra/gke/gkeconn"
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
	// (gke_PROJECT_ZONE_CLUSTER) when the kubeconfig has it, else "" (the kubeconfig's
	// current context, or GKEDirect).
	KubeContext string `json:"kube_context,omitempty"`
	// GKEDirect connects to the GKE cluster Project/Zone/Cluster without a kubeconfig:
	// endpoint and CA from the GKE API (cached), tokens from Application Default
	// Credentials (infra/gke/gkeconn). Set for GKE backends when no context is given and
	// the kubeconfig has no gke_PROJECT_ZONE_CLUSTER context.
	GKEDirect bool `json:"gke_direct,omitempty"`
	// Kubeconfig is this machine's kubeconfig file (configuration key kubeconfig, else
	// KUBECONFIG; "" means the client's default, ~/.kube/config). It is not in the handle:
	// a path on the submitting machine means nothing on another one.
	Kubeconfig string `json:"kubeconfig,omitempty"`
}

// ClusterOf returns the cluster connection facts for h, with kubeconfig as this
// machine's kubeconfig file. They come from the handle, not from the active profile, so
// a job submitted to cluster A is observed, attached and debugged on A whatever profile
// is active now.
//
// For a GKE backend the order is: the handle's context (kube_context at submission);
// else the kubeconfig's gke_PROJECT_ZONE_CLUSTER context, when `gcloud container
// clusters get-credentials` wrote one (not kinetic: HasGcloudContext) (it may carry a proxy or a private endpoint the
// user chose); else a direct connection (GKEDirect: GKE API and ADC, no kubeconfig).
func ClusterOf(h *job.Handle, kubeconfig string) Cluster {
	l := locationOf(h)
	c := Cluster{Backend: h.Backend, Project: l.Project, Zone: l.Zone, Cluster: l.Cluster, Namespace: l.Namespace,
		KubeContext: l.KubeContext, Kubeconfig: kubeconfig}
	if c.KubeContext == "" && IsGKE(h.Backend) && c.Project != "" && c.Zone != "" && c.Cluster != "" {
		if ctx := GKEContext(c.Project, c.Zone, c.Cluster); HasGcloudContext(kubeconfig, ctx) {
			c.KubeContext = ctx
		} else {
			c.GKEDirect = true
		}
	}
	return c
}

// GKECluster is the cluster a direct connection reaches.
func (c Cluster) GKECluster() gkeconn.Cluster {
	return gkeconn.Cluster{Project: c.Project, Zone: c.Zone, Name: c.Cluster}
}

// GKEConnector connects directly to GKE clusters with this machine's settings: the
// endpoint and CA cached under DataDir()/cache/gke, the GKE API endpoint overridden by
// gcp_endpoints' container= (tests and emulators).
func GKEConnector(s backend.Settings) *gkeconn.Connector {
	return &gkeconn.Connector{ContainerEndpoint: containerEndpoint(s.Get(string(KeyGCPEndpoints))),
		CacheDir: filepath.Join(config.DataDir(), "cache", "gke")}
}

// containerEndpoint is the container= URL of a gcp_endpoints value ("" if none).
func containerEndpoint(eps string) string {
	for _, part := range strings.Split(eps, ",") {
		if k, v, ok := strings.Cut(strings.TrimSpace(part), "="); ok && k == "container" {
			return v
		}
	}
	return ""
}

// GKEContext is the kubeconfig context `gcloud container clusters get-credentials`
// makes for a GKE cluster.
func GKEContext(project, zone, cluster string) string {
	return "gke_" + project + "_" + zone + "_" + cluster
}

// HasGcloudContext reports whether the kubeconfig has the context name and kinetic did
// not write it (`kinetic up --write-kubeconfig` writes it for kubectl; kinetic itself
// connects to that cluster directly, which needs no plugin and follows a changed CA).
func HasGcloudContext(kubeconfig, name string) bool {
	return HasContext(kubeconfig, name) && !gkeconn.Written(kubeconfig, name)
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
	clusterType := get(KeyClusterType)
	if clusterType == "" && name == PathwaysName && get(config.Backend) == K8sName {
		// A multi-host job submitted with backend k8s: the cluster is not GKE.
		clusterType = "generic"
	}
	return Options{
		Name:               name,
		ClusterType:        clusterType,
		Kubeconfig:         cl.Kubeconfig,
		Context:            cl.KubeContext,
		GKE:                gkeOf(cl, s),
		Namespace:          namespace,
		ServiceAccount:     get(KeyServiceAccount),
		RunnerImage:        get(KeyRunnerImage),
		StoreSecret:        get(KeyStoreSecret),
		CPU:                get(KeyPodCPU),
		Memory:             get(KeyPodMemory),
		UnschedulableGrace: dur(KeyUnschedulableGrace),
		PullGrace:          dur(KeyPullGrace),
		NodeLostGrace:      dur(KeyNodeLostGrace),
		WarmPods:           warmPods(get(KeyWarmPods)),
		WarmPodIdle:        dur(KeyWarmPodIdle),
		// Only "false" turns them off: an unset key keeps the devices.
		IgnoreAcceleratorResources: get(KeyAccelResources) == "false",
	}
}

// warmPods is the setting warm_pods as a count (the default when unset).
func warmPods(v string) int {
	if v == "" {
		return DefaultWarmPods
	}
	n, _ := strconv.Atoi(v)
	return n
}

func gkeOf(cl Cluster, s backend.Settings) *GKEDirect {
	if !cl.GKEDirect {
		return nil
	}
	return &GKEDirect{Cluster: cl.GKECluster(), Connector: GKEConnector(s)}
}

// factory makes the backends of one name: one per cluster context and namespace.
type factory struct{ name string }

func (f factory) cluster(env backend.Env) Cluster {
	return ClusterOf(env.Handle, env.Settings.Get(string(KeyKubeconfig)))
}

// Key implements backend.Factory.
func (f factory) Key(env backend.Env) string {
	c := f.cluster(env)
	if c.GKEDirect {
		return "gke:" + c.GKECluster().Path() + "|" + c.Namespace
	}
	return c.KubeContext + "|" + c.Namespace
}

// New implements backend.Factory.
func (f factory) New(env backend.Env) (backend.Backend, error) {
	o := OptionsFor(f.name, f.cluster(env), env.Settings)
	// The runner image: runner_image when set, else the index this CLI publishes to
	// image_registry at the first submission (one HEAD request once it is there).
	o.ResolveRunnerImage = image.RunnerImageFunc(&image.Client{}, image.RunnerImageRequest{
		Override: env.Settings.Get(string(KeyRunnerImage)),
		Registry: env.Settings.Get(string(config.ImageRegistry)),
		Source:   image.RunnerSource{Exe: env.Exe, CacheDir: filepath.Join(config.DataDir(), "cache", "runner"), Progress: os.Stderr},
		Progress: os.Stderr,
	})
	if f.name == PathwaysName {
		return NewPathways(env.Store, o)
	}
	return New(env.Store, o)
}

// Traits implements backend.Factory: a job's Kubernetes objects are named after it.
func (factory) Traits() backend.Traits { return backend.Traits{ObjectsNamedAfterJob: true} }

// Plan implements backend.Factory: a slice over several hosts runs on Pathways (one
// LeaderWorkerSet); a multi-host job submitted with backend k8s pins the kubeconfig's
// current context, or ClusterOf would take a Pathways handle with a project for a GKE
// cluster's context.
func (f factory) Plan(h *job.Handle, acc accel.Spec, s backend.Settings) error {
	if f.name == GKEName && h.Project == "" {
		// The project first, before the store's bucket or the registry need one: the
		// rest follows from it.
		return errs.Errorf(errs.InvalidArgument, "backend gke (from %s) needs a Google Cloud project: pass --project P, or set KINETIC_PROJECT, GOOGLE_CLOUD_PROJECT or a profile's project; `kinetic up --project P` creates the cluster there", backend.SourceOf(s, string(config.Backend)))
	}
	if acc.MultiHost() {
		h.Backend = PathwaysName
		if f.name == K8sName && h.KubeContext == "" {
			h.KubeContext = CurrentContext(s.Get(string(KeyKubeconfig)))
		}
	}
	return h.SetLocation(locationVersion, clusterLocation{Project: h.Project, Zone: h.Zone, Cluster: h.ClusterName, Namespace: h.Namespace, KubeContext: h.KubeContext})
}

// locationVersion is the version of clusterLocation this package writes.
const locationVersion = 1

// clusterLocation is where a job of these backends is (job.Handle.Location, version 1):
// the cluster it was submitted to. Handles written before it carry the same facts in
// their flat fields, which ClusterOf reads when there is no location.
type clusterLocation struct {
	Project     string `json:"project,omitempty"`
	Zone        string `json:"zone,omitempty"`
	Cluster     string `json:"cluster,omitempty"`
	Namespace   string `json:"namespace,omitempty"`
	KubeContext string `json:"kube_context,omitempty"`
}

// locationOf is where h's job is: its location when it has one this package reads,
// else (a handle written before locations, or a listing's) its flat fields.
func locationOf(h *job.Handle) clusterLocation {
	var l clusterLocation
	if v, err := h.LocationOf(&l); err == nil && v >= 1 {
		return l
	}
	return clusterLocation{Project: h.Project, Zone: h.Zone, Cluster: h.ClusterName, Namespace: h.Namespace, KubeContext: h.KubeContext}
}

// Preflight checks a backend reached through a kubeconfig (k8s, or gke/pathways with a
// kube_context): a kubeconfig that names a cluster.
func (f factory) Preflight(s backend.Settings) error {
	if f.name != K8sName && s.Get(string(config.KubeContext)) == "" {
		return nil
	}
	src := backend.SourceOf(s, string(config.Backend))
	if _, err := RESTConfig(s.Get(string(KeyKubeconfig)), s.Get(string(config.KubeContext))); err != nil {
		if strings.Contains(err.Error(), "no configuration has been provided") {
			return fmt.Errorf("backend %s (%s) runs jobs on a Kubernetes cluster, and no kubeconfig names one here (KUBECONFIG, ~/.kube/config, or kubeconfig in the profile): `gcloud container clusters get-credentials CLUSTER` or your cluster's own tool writes one; `kinetic up --backend k8s` then joins it", f.name, src)
		}
		return fmt.Errorf("backend %s (%s) runs jobs on a Kubernetes cluster, and %w; `kinetic up --backend k8s` joins the current kubectl context", f.name, src, err)
	}
	return nil
}

var (
	_ backend.Factory     = factory{}
	_ backend.Preflighter = factory{}
)
