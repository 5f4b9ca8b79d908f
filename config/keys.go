package config

import (
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/kinetic-run/kinetic/infra/gke/gkename"
)

// Key names one setting. Its string form is the key used in the profiles file and in
// "kinetic config show"; its environment variable is KINETIC_ followed by the upper-cased key.
type Key string

// The settings Kinetic knows. The first four are the reference implementation's; the rest
// are ours, for the store, the backends and the image pipeline.
const (
	Project        Key = "project"               // Google Cloud project
	Zone           Key = "zone"                  // compute zone of the cluster
	Cluster        Key = "cluster"               // Kubernetes cluster name
	Namespace      Key = "namespace"             // Kubernetes namespace for jobs
	Backend        Key = "backend"               // where jobs run: local, gke, k8s, pathways
	Store          Key = "store"                 // store URL: file://, mem://, gs://, s3://
	OutputDir      Key = "output_dir"            // where a job's outputs are written
	BaseImageRepo  Key = "base_image_repo"       // repository of the prebuilt base images
	ImageRegistry  Key = "image_registry"        // registry bundled images are pushed to
	BaseImageCPU   Key = "base_image_cpu"        // base image of bundled builds for CPU jobs
	BaseImageGPU   Key = "base_image_gpu"        // base image of bundled builds for GPU jobs
	BaseImageTPU   Key = "base_image_tpu"        // base image of bundled builds for TPU jobs
	ImageBuilder   Key = "image_builder"         // how bundled images are built
	Container      Key = "container"             // local backend: run jobs in a container engine
	ServiceAccount Key = "service_account"       // Kubernetes service account of job pods
	Kubeconfig     Key = "kubeconfig"            // kubeconfig file for the k8s backends
	KubeContext    Key = "kube_context"          // context within the kubeconfig
	ClusterType    Key = "cluster_type"          // "gke" or "generic"
	GCSEndpoint    Key = "gcs_endpoint"          // GCS endpoint override (emulators, private endpoints)
	RunnerImage    Key = "runner_image"          // image holding the kinetic binary, injected into pods
	LWSImage       Key = "lws_image"             // LeaderWorkerSet controller image up installs
	Reservation    Key = "reservation"           // Compute Engine reservation pool add consumes
	ForceDestroy   Key = "force_destroy"         // down also deletes the store bucket
	StoreSecret    Key = "store_secret"          // Secret with store credentials mounted into pods
	PodCPU         Key = "pod_cpu"               // CPU request of CPU jobs without a count
	PodMemory      Key = "pod_memory"            // memory request and limit of job pods
	Unschedulable  Key = "unschedulable_grace"   // how long a pod may be unschedulable before FAILED
	PullGrace      Key = "image_pull_grace"      // how long image pulls may fail before FAILED
	NodeLostGrace  Key = "node_lost_grace"       // how long a job's node may be NotReady before FAILED
	AccelResources Key = "accelerator_resources" // "false" leaves GPU/TPU requests out of pods (tests, CPU dry runs)
	GCPEndpoints   Key = "gcp_endpoints"         // Google API endpoint overrides (tests, emulators)

	// This machine's settings: how jobs run here and how the working directory is shipped.
	LocalSlots        Key = "local_slots"          // local backend: jobs running at once
	Warm              Key = "warm"                 // local backend: warm forked Python workers
	WarmIdle          Key = "warm_idle"            // how long an idle warm worker server lives
	BatchIsolation    Key = "batch_isolation"      // local backend: how a batch's inputs are kept apart
	Python            Key = "python"               // the interpreter local jobs run with
	BuildPython       Key = "build_python"         // the interpreter whose pip installs into bundled images
	PackageRoot       Key = "package_root"         // the shipped root, instead of the one detected
	NoDefaultExcludes Key = "no_default_excludes"  // ship what the default excludes would leave out
	ContextSizeWarnMB Key = "context_size_warn_mb" // warn when the shipped root is larger (MiB; 0: never)
)

// keyInfo is everything the package knows about one key. Keeping it in one table means a
// new key is one line here, and resolution, validation, docs and CLI flags follow.
type keyInfo struct {
	key  Key
	help string
	// choices, when set, lists the accepted values at the end of help; they are known
	// only once the program has started (the registered backends).
	choices func() []string
	// fallback gives the value used when no argument, env var or profile sets the key,
	// and its source ("default", "env GOOGLE_CLOUD_PROJECT"); "" means unset.
	fallback func(getenv func(string) string) (value, source string)
	// derive, when set, gives the value from the keys resolved before it (earlier in
	// keyTable) when no argument, env var or profile sets the key; "" falls through to
	// fallback. Its source starts with "default: " and says why.
	derive func(prev map[Key]Entry) (value, source string)
	// check validates a value and returns its normal form; nil accepts anything.
	check func(string) (string, error)
}

func fixed(v string) func(func(string) string) (string, string) {
	return func(func(string) string) (string, string) { return v, SourceDefault }
}

// fromEnv falls back to a variable other tools already set, so a user with a working
// gcloud or kubectl setup needs no Kinetic-specific configuration.
func fromEnv(name string) func(func(string) string) (string, string) {
	return func(getenv func(string) string) (string, string) {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			return v, "env " + name
		}
		return "", ""
	}
}

// keyTable is in display order: the order of Keys, Entries and "kinetic config show".
var keyTable = []keyInfo{
	{key: Project, help: "Google Cloud project", fallback: fromEnv("GOOGLE_CLOUD_PROJECT")},
	{key: Zone, help: "compute zone of the cluster", fallback: fixed("us-central1-a")},
	{key: Cluster, help: "Kubernetes cluster name", fallback: fixed(gkename.DefaultCluster)},
	{key: Namespace, help: "Kubernetes namespace for jobs", fallback: fixed("default"), check: checkNamespace},
	{key: Backend, help: "where jobs run", choices: Backends, derive: gkeBackend, fallback: fixed(DefaultBackend), check: checkBackend},
	{key: Store, help: "store URL (file://, mem://, gs://, s3://) or an absolute path", derive: gkeStore, fallback: defaultStore, check: checkStore},
	{key: OutputDir, help: "directory a job's outputs are written to"},
	{key: BaseImageRepo, help: "repository of the prebuilt base images"},
	{key: ImageRegistry, help: "registry bundled images are pushed to (HOST/PATH)", derive: gkeRegistry},
	{key: BaseImageCPU, help: "base image of bundled builds for CPU jobs"},
	{key: BaseImageGPU, help: "base image of bundled builds for GPU jobs"},
	{key: BaseImageTPU, help: "base image of bundled builds for TPU jobs"},
	{key: ImageBuilder, help: "bundled image builder: " + strings.Join(ImageBuilders, ", "), check: checkImageBuilder},
	{key: Container, help: "local backend: run jobs inside the bundled image with " + strings.Join(Containers, ", "), check: checkContainer},
	{key: ServiceAccount, help: "Kubernetes service account of job pods"},
	{key: Kubeconfig, help: "kubeconfig file for the Kubernetes backends", fallback: fromEnv("KUBECONFIG")},
	{key: KubeContext, help: "context within the kubeconfig"},
	{key: ClusterType, help: "kind of cluster: " + strings.Join(ClusterTypes, ", "), check: checkClusterType},
	{key: GCSEndpoint, help: "GCS endpoint URL for gs:// stores (emulators, private endpoints)", fallback: emulatorHost, check: checkHTTPURL},
	{key: LWSImage, help: "the LeaderWorkerSet controller image kinetic up installs on GKE (default: the pinned release's, registry.k8s.io/lws/lws; a copy in your registry for nodes without internet)"},
	{key: Reservation, help: "a Compute Engine reservation that kinetic pool add (and up --accelerator) consumes; --reservation wins"},
	{key: ForceDestroy, help: "whether kinetic down also deletes the store bucket with every job record and output (the reference's default is true; ours is false: outputs are never expired)", fallback: fixed("false"), check: checkBool},
	{key: RunnerImage, help: "image holding the kinetic runner at /kinetic/bin/kinetic, copied into job pods (default: the one this CLI publishes to image_registry)"},
	{key: StoreSecret, help: "Kubernetes Secret with store credentials (key.json or credentials) mounted into job pods"},
	{key: PodCPU, help: "CPU request of job pods without a CPU count (Kubernetes quantity)", fallback: fixed("250m"), check: checkQuantity},
	{key: PodMemory, help: "memory request and limit of job pods (Kubernetes quantity, e.g. 4Gi)", check: checkQuantity},
	{key: Unschedulable, help: "how long a job's pod may stay unschedulable before the job is FAILED", fallback: fixed("10m"), check: checkDuration},
	{key: PullGrace, help: "how long a job's image pulls may fail before the job is FAILED", fallback: fixed("2m"), check: checkDuration},
	{key: NodeLostGrace, help: "how long a running job's node may be NotReady before the job is FAILED", fallback: fixed("5m"), check: checkDuration},
	{key: AccelResources, help: "whether job pods request their GPUs/TPUs; false runs them as CPU pods (tests, dry runs on clusters without the devices)", fallback: fixed("true"), check: checkBool},
	{key: GCPEndpoints, help: "Google API endpoints for tests and emulators only: container=URL,artifactregistry=URL,iam=URL,compute=URL,serviceusage=URL (plain, unauthenticated; used by up/down/status/pool for GKE)"},
	{key: LocalSlots, help: "local backend: how many jobs run at once on this machine", fallback: cpus, check: checkPositiveInt},
	{key: Warm, help: "local backend: run Python calls in warm forked workers (docs/warm-workers.md)", fallback: fixed("true"), check: checkBool},
	{key: BatchIsolation, help: "local backend: how the inputs of a batch run: worker (one after another in a long-lived Python per worker; module state carries), process (each in a child forked from it) or job (each a job of its own, docs/warm-workers.md)", fallback: fixed("worker"), check: checkIsolation},
	{key: WarmIdle, help: "how long a warm worker server waits without work before it exits", fallback: fixed("10m"), check: checkDuration},
	{key: Python, help: "the Python interpreter local jobs run with (default: the one the SDK runs, else python3)", check: checkExecutable},
	{key: BuildPython, help: "the Python whose pip installs requirements into bundled images (default: python3)", check: checkExecutable},
	{key: PackageRoot, help: "the directory shipped as the job's working directory, instead of the detected project root", check: checkAbsPath},
	{key: NoDefaultExcludes, help: "ship files the default excludes leave out (.git, __pycache__, virtualenvs …)", fallback: fixed("false"), check: checkBool},
	{key: ContextSizeWarnMB, help: "warn when the shipped working directory is larger than this many MiB (0: never)", fallback: fixed("100"), check: checkSizeMB},
}

// projectChosen reports whether the project was configured for Kinetic: by argument,
// KINETIC_PROJECT or a profile. GOOGLE_CLOUD_PROJECT alone is not a choice of GKE: many
// shells set it for other tools.
func projectChosen(e Entry) bool {
	return e.Value != "" && (e.Source == SourceArgument || e.Source == "env "+Project.EnvVar() ||
		strings.HasPrefix(e.Source, "profile "))
}

// gkeBackend: with a project configured for Kinetic and no backend set anywhere, jobs
// go to GKE (the reference's configuration: a project, zone and cluster, GKE implied).
// A program that links no gke backend stays local.
func gkeBackend(prev map[Key]Entry) (string, string) {
	p := prev[Project]
	if !projectChosen(p) || !slices.Contains(Backends(), "gke") {
		return "", ""
	}
	return "gke", "default: project set (" + p.Source + ")"
}

// onGKE reports whether the backend resolved to a GKE one with a project.
func onGKE(prev map[Key]Entry) bool {
	b := prev[Backend].Value
	return (b == "gke" || b == "pathways") && prev[Project].Value != ""
}

// gkeStore: on GKE with a project and no store set, the bucket `kinetic up` makes for it.
func gkeStore(prev map[Key]Entry) (string, string) {
	if !onGKE(prev) {
		return "", ""
	}
	p := prev[Project].Value
	return gkename.Store(p), "default: the bucket `kinetic up` makes for project " + p
}

// gkeRegistry: on GKE with a project and zone and no registry set, the repository
// `kinetic up` makes for them.
func gkeRegistry(prev map[Key]Entry) (string, string) {
	if !onGKE(prev) {
		return "", ""
	}
	r := gkename.Registry(prev[Project].Value, prev[Zone].Value)
	if r == "" {
		return "", ""
	}
	return r, "default: the repository `kinetic up` makes for project " + prev[Project].Value + " in " + gkename.Region(prev[Zone].Value)
}

// emulatorHost falls back to STORAGE_EMULATOR_HOST, the Google client's variable, which
// may be host:port (plain HTTP) or a URL.
func emulatorHost(getenv func(string) string) (string, string) {
	v := strings.TrimSpace(getenv("STORAGE_EMULATOR_HOST"))
	if v == "" {
		return "", ""
	}
	if !strings.Contains(v, "://") {
		v = "http://" + v
	}
	return v, "env STORAGE_EMULATOR_HOST"
}

// cpus is the default number of local slots: one job per CPU.
func cpus(func(string) string) (string, string) {
	return strconv.Itoa(runtime.NumCPU()), SourceDefault + " (CPUs)"
}

// Sources reported by Resolved.Source besides "env NAME" and "profile NAME".
const (
	SourceArgument = "argument"
	SourceDefault  = "default"
	SourceUnset    = "unset"
)

// Keys returns every key, in display order.
func Keys() []Key {
	ks := make([]Key, len(keyTable))
	for i, ki := range keyTable {
		ks[i] = ki.key
	}
	return ks
}

func lookup(k Key) (keyInfo, bool) {
	for _, ki := range keyTable {
		if ki.key == k {
			return ki, true
		}
	}
	return keyInfo{}, false
}

// Known reports whether k is one of Keys.
func Known(k Key) bool { _, ok := lookup(k); return ok }

// EnvVar is the environment variable that sets k: KINETIC_ZONE for Zone.
func (k Key) EnvVar() string { return "KINETIC_" + strings.ToUpper(string(k)) }

// Help is a short description of k, for flag help and docs.
func (k Key) Help() string {
	ki, _ := lookup(k)
	if ki.choices != nil {
		return ki.help + ": " + strings.Join(ki.choices(), ", ")
	}
	return ki.help
}

// Default is k's value when nothing sets it (the environment's fallbacks included), ""
// when it has none: what a prompt offers.
func Default(k Key) string {
	info, ok := lookup(k)
	if !ok || info.fallback == nil {
		return ""
	}
	v, _ := info.fallback(os.Getenv)
	return v
}
