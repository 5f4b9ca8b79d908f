// Package kubernetes runs jobs on a Kubernetes cluster (GKE or any other): one batch/v1
// Job per job, one Indexed Job per batch, one LeaderWorkerSet per multi-host job
// (Pathways). The runner starts from the job's own image when Kinetic built that image
// and added the runner to it (the handle's runner_in_image), else an init container
// copies it in from the runner image. Everything durable is in the store (gs:// or s3://,
// reachable from the pods); the cluster holds only what runs. Status comes from the Job
// and its pods and turns the states the cluster would keep for ever (an image that
// cannot be pulled, a pod that cannot be scheduled) into FAILED with a reason.
//
// See docs/kubernetes.md.
package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/batch/driver"
	"github.com/kinetic-run/kinetic/infra/gke/gkeconn"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
)

// Options configure the backend. The zero value of every duration means its default.
type Options struct {
	// Name is the handle's backend field: "gke" (GKE node selectors and tolerations) or
	// "k8s" (generic resource names only). ClusterType overrides the choice.
	Name string
	// ClusterType is "gke" or "generic"; "" follows Name.
	ClusterType string
	// Kubeconfig and Context select the cluster; both empty means in-cluster config,
	// then the default kubeconfig loading rules ($KUBECONFIG, ~/.kube/config).
	Kubeconfig, Context string
	// Namespace for new jobs ("default" if empty).
	Namespace string
	// ServiceAccount of job pods ("" leaves the namespace's default).
	ServiceAccount string
	// RunnerImage holds the static kinetic binary at job.RunnerPath: planning adds its
	// layer to the images Kinetic builds (RunnerImage, backend.RunnerImager), and an
	// init container copies it into the pods of any other image. Empty means
	// ResolveRunnerImage's; with neither,
	// submissions fail with the fix (there is no default image: the runner in the pod
	// must be the one built with the submitting client).
	RunnerImage string
	// ResolveRunnerImage, when RunnerImage is empty, gives the runner image at the first
	// submission (the engine passes image.RunnerImageFunc: the runner index this CLI
	// publishes to image_registry). It is called once per Backend, only when a job is
	// planned (RunnerImage) or submitted (Submit, StartGroup, the Pathways Submit):
	// observing jobs never publishes anything.
	ResolveRunnerImage func(context.Context) (string, error)
	// Image runs jobs whose handle names no image (default DefaultImage).
	Image string
	// ImagePullPolicy of the job's containers ("" is IfNotPresent).
	ImagePullPolicy string
	// StoreSecret names a Secret holding store credentials, mounted read-only at
	// /var/run/kinetic/store-credentials; GOOGLE_APPLICATION_CREDENTIALS points at its
	// key.json. Local credentials are never copied into a spec.
	StoreSecret string
	// CPU and Memory are the requests and limits of CPU jobs without a count
	// (default 250m CPU requested, no limit; no memory request).
	CPU, Memory string
	// TTL is ttlSecondsAfterFinished (default 600 s).
	TTL time.Duration
	// UnschedulableGrace is how long a pod may stay unschedulable before the job is
	// FAILED (default 10 minutes, room for a cluster autoscaler to add a node).
	UnschedulableGrace time.Duration
	// PullGrace is how long image pulls may fail before the job is FAILED (default 2
	// minutes); a registry that answers "not found" fails it at once.
	PullGrace time.Duration
	// NodeLostGrace is how long the node of a job's pod may be NotReady before the job
	// is FAILED and stopped (default DefaultNodeLostGrace).
	NodeLostGrace time.Duration
	// QPS and Burst of the API client (defaults 100 and 200: client-go's 5/10 is far
	// too low for batches).
	QPS   float32
	Burst int
	// IgnoreAcceleratorResources leaves GPU/TPU resources out of the pods (they ask for
	// CPU like a CPU job; node selectors stay): for tests and CPU-only dry runs of
	// accelerator jobs on a cluster that has no such devices.
	IgnoreAcceleratorResources bool
	// WarmPods is how many idle pods of one warm key may wait for the next job of that
	// key (warm.go); 0, the zero value, keeps none: every job gets a pod of its own. The
	// setting warm_pods defaults to DefaultWarmPods.
	WarmPods int
	// WarmPodIdle is how long a warm pod waits for the next job (default
	// DefaultWarmPodIdle).
	WarmPodIdle time.Duration
	// Config, if set, is used instead of loading a kubeconfig (tests).
	Config *rest.Config
	// GKE, when set (and Config is not), connects to a GKE cluster without a kubeconfig
	// (Kubeconfig and Context are then unused).
	GKE *GKEDirect
}

// GKEDirect is a GKE cluster reached through the GKE API and Application Default
// Credentials: the endpoint and CA from the connector's cache, else one GetCluster call.
type GKEDirect struct {
	Cluster   gkeconn.Cluster
	Connector *gkeconn.Connector
}

// DefaultImage runs jobs whose handle names no image.
const DefaultImage = "python:3.11-slim"

// Backend is the Kubernetes backend over one store and one cluster.
type Backend struct {
	o   Options
	st  *store.Store
	cs  kubernetes.Interface
	dyn dynamic.Interface // LeaderWorkerSets; nil with NewForClient
	cfg *rest.Config      // nil with NewForClient

	runnerMu sync.Mutex // guards the one-time resolution of o.RunnerImage

	mu    sync.Mutex
	cache map[string]*cached // Job name → recent Job and pods, shared by a batch's children

	nodeCache nodeCache // recent Nodes (nodelost.go)

	warmMu  sync.Mutex
	offered map[string]bool // jobs whose warm pod this process has looked at (warm.go)

	fuseMu      sync.Mutex // whether the cluster has the GCS FUSE CSI driver (fuse.go)
	fuseChecked time.Time  // when it was last looked up (zero: never)
	fuseErr     error
	now         func() time.Time // the clock (tests move it)
}

// New connects to the cluster (lazily: no request is made to it until a job is
// submitted or observed; a direct GKE connection whose endpoint is not cached reads it
// from the GKE API here).
func New(st *store.Store, o Options) (*Backend, error) {
	o = o.withDefaults()
	if u := st.URL(); !store.FromPods(u) {
		return nil, fmt.Errorf("kubernetes backend: the store %s cannot be reached from pods: use a store of one of %s (--store, KINETIC_STORE or the profile's store)", u, store.PodSchemes())
	}
	cfg := o.Config
	if cfg == nil && o.GKE != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		var err error
		cfg, err = o.GKE.Connector.RESTConfig(ctx, o.GKE.Cluster)
		cancel()
		if err != nil {
			return nil, unavailable{err}
		}
	}
	if cfg == nil {
		var err error
		if cfg, err = restConfig(o.Kubeconfig, o.Context); err != nil {
			return nil, fmt.Errorf("kubernetes backend: %w: %v", backend.ErrUnavailable, err)
		}
	}
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = o.QPS, o.Burst
	cfg.UserAgent = "kinetic"
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes backend: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes backend: %w", err)
	}
	return &Backend{o: o, st: st, cs: cs, dyn: dyn, cfg: cfg, cache: map[string]*cached{}}, nil
}

// unavailable is backend.ErrUnavailable with only its cause's words (which name the fix).
type unavailable struct{ err error }

func (u unavailable) Error() string   { return u.err.Error() }
func (u unavailable) Unwrap() []error { return []error{backend.ErrUnavailable, u.err} }

// withDefaults fills in every option left at its zero value.
func (o Options) withDefaults() Options {
	if o.Name == "" {
		o.Name = K8sName
	}
	if o.ClusterType == "" {
		o.ClusterType = "generic"
		if o.Name == GKEName {
			o.ClusterType = "gke"
		}
	}
	if o.Namespace == "" {
		o.Namespace = "default"
	}
	if o.Image == "" {
		o.Image = DefaultImage
	}
	if o.TTL == 0 {
		o.TTL = 600 * time.Second
	}
	if o.UnschedulableGrace == 0 {
		o.UnschedulableGrace = 10 * time.Minute
	}
	if o.PullGrace == 0 {
		o.PullGrace = 2 * time.Minute
	}
	if o.WarmPodIdle == 0 {
		o.WarmPodIdle = DefaultWarmPodIdle
	}
	if o.QPS == 0 {
		o.QPS = 100
	}
	if o.Burst == 0 {
		o.Burst = 200
	}
	return o
}

// NewForClient is New with a ready clientset (tests, fault injection).
func NewForClient(st *store.Store, cs kubernetes.Interface, o Options) (*Backend, error) {
	o.Config = &rest.Config{Host: "http://unused.invalid"}
	b, err := New(st, o)
	if err != nil {
		return nil, err
	}
	b.cs, b.cfg, b.dyn = cs, nil, nil
	return b, nil
}

// restConfig loads an explicit kubeconfig/context, else in-cluster config, else the
// default loading rules.
func restConfig(kubeconfig, context string) (*rest.Config, error) {
	if kubeconfig == "" && context == "" {
		if cfg, err := rest.InClusterConfig(); err == nil {
			return cfg, nil
		} else if !errors.Is(err, rest.ErrNotInCluster) {
			return nil, err
		}
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if kubeconfig != "" {
		rules.ExplicitPath = kubeconfig
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: context}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("no usable kubeconfig (set kubeconfig / kube_context in the profile, or KUBECONFIG): %w", err)
	}
	return cfg, nil
}

// HasContext reports whether the kubeconfig (the default loading rules when
// kubeconfig is "") has the context name.
func HasContext(kubeconfig, name string) bool {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if kubeconfig != "" {
		rules.ExplicitPath = kubeconfig
	}
	raw, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).RawConfig()
	if err != nil {
		return false
	}
	_, ok := raw.Contexts[name]
	return ok
}

// CurrentContext is the current context of the kubeconfig (the default loading rules
// when kubeconfig is ""), or "" if there is none.
func CurrentContext(kubeconfig string) string {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if kubeconfig != "" {
		rules.ExplicitPath = kubeconfig
	}
	raw, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).RawConfig()
	if err != nil {
		return ""
	}
	return raw.CurrentContext
}

// Name implements backend.Backend.
func (b *Backend) Name() string { return b.o.Name }

// Namespace is where the backend creates jobs.
func (b *Backend) Namespace() string { return b.o.Namespace }

var (
	_ backend.Backend  = (*Backend)(nil)
	_ backend.Observer = (*Backend)(nil)
	_ driver.Driver    = (*Backend)(nil)

	_ backend.RunnerImager = (*Backend)(nil)
	_ backend.RunnerImager = (*Pathways)(nil)
)

// ctxTimeout bounds one API call, so a dead apiserver gives an error, not a hang.
func ctxTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, 30*time.Second)
}

// ensureRunnerImage resolves o.RunnerImage once (Options.ResolveRunnerImage) before the
// first pod spec is made; a failure is returned and retried by the next submission.
func (b *Backend) ensureRunnerImage(ctx context.Context) error {
	b.runnerMu.Lock()
	defer b.runnerMu.Unlock()
	if b.o.RunnerImage != "" {
		return nil
	}
	if b.o.ResolveRunnerImage == nil {
		return errors.New("no runner image: set image_registry (the CLI publishes the runner image there; `kinetic up --backend k8s --registry HOST/PATH`) or runner_image")
	}
	img, err := b.o.ResolveRunnerImage(ctx)
	if err != nil {
		return fmt.Errorf("runner image: %w", err)
	}
	b.o.RunnerImage = img
	return nil
}

// ensureRunnerImageFor is ensureRunnerImage for the pods of h: nothing to resolve when
// they start the runner from their own image.
func (b *Backend) ensureRunnerImageFor(ctx context.Context, h *job.Handle) error {
	if b.runnerInImage(h) {
		return nil
	}
	return b.ensureRunnerImage(ctx)
}

// RunnerImage is the runner image pods get (resolving it first if needed); it
// implements backend.RunnerImager.
func (b *Backend) RunnerImage(ctx context.Context) (string, error) {
	if err := b.ensureRunnerImage(ctx); err != nil {
		return "", err
	}
	return b.o.RunnerImage, nil
}

// RESTConfig is the client configuration New uses for kubeconfig and context (both
// empty: in-cluster, then the default loading rules), for `kinetic up` and `doctor`.
func RESTConfig(kubeconfig, context string) (*rest.Config, error) {
	return restConfig(kubeconfig, context)
}
