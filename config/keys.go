package config

import (
	"os"
	"strings"
)

// Key names one setting. Its string form is the key used in the profiles file and in
// "kinetic config show"; its environment variable is KINETIC_ followed by the upper-cased key.
type Key string

// The settings config knows by name. The first four are the reference implementation's;
// the rest are ours, for the store, the image pipeline and the engine. A backend's own
// settings (the Kubernetes pod settings, the local backend's slots) are declared by the
// backend (Declare): config resolves and shows them without naming them.
const (
	Project       Key = "project"         // Google Cloud project
	Zone          Key = "zone"            // compute zone of the cluster
	Cluster       Key = "cluster"         // Kubernetes cluster name
	Namespace     Key = "namespace"       // Kubernetes namespace for jobs
	Backend       Key = "backend"         // where jobs run: local, gke, k8s, pathways
	Store         Key = "store"           // store URL: file://, mem://, gs://, s3://
	OutputDir     Key = "output_dir"      // where a job's outputs are written
	BaseImageRepo Key = "base_image_repo" // repository of the prebuilt base images
	ImageRegistry Key = "image_registry"  // registry bundled images are pushed to
	BaseImageCPU  Key = "base_image_cpu"  // base image of bundled builds for CPU jobs
	BaseImageGPU  Key = "base_image_gpu"  // base image of bundled builds for GPU jobs
	BaseImageTPU  Key = "base_image_tpu"  // base image of bundled builds for TPU jobs
	ImageBuilder  Key = "image_builder"   // how bundled images are built
	RuntimeLayer  Key = "runtime_layer"   // what bundled and prebuilt images get on their base
	Container     Key = "container"       // local backend: run jobs in a container engine
	KubeContext   Key = "kube_context"    // context within the kubeconfig
	GCSEndpoint   Key = "gcs_endpoint"    // GCS endpoint override (emulators, private endpoints)
	LWSImage      Key = "lws_image"       // LeaderWorkerSet controller image up installs
	Reservation   Key = "reservation"     // Compute Engine reservation pool add consumes
	ForceDestroy  Key = "force_destroy"   // down also deletes the store bucket

	// This machine's settings: how jobs run here and how the working directory is shipped.
	Python            Key = "python"               // the interpreter local jobs run with
	BuildPython       Key = "build_python"         // the interpreter whose pip installs into bundled images
	PackageRoot       Key = "package_root"         // the shipped root, instead of the one detected
	NoDefaultExcludes Key = "no_default_excludes"  // ship what the default excludes would leave out
	ContextSizeWarnMB Key = "context_size_warn_mb" // warn when the shipped root is larger (MiB; 0: never)
	UploadConfirmMB   Key = "upload_confirm_mb"    // kinetic run asks (or needs --yes) above this upload (MiB; 0: never)
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
	// owner is who declared the key (Setting.Owner); "" for config's own.
	owner string
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

// DefaultCluster is the cluster key's default, the reference's (and the name `kinetic up`
// gives a cluster: infra/gke/gkename.DefaultCluster, checked by the setup tests).
const DefaultCluster = "kinetic-cluster"

// keyTable is config's own keys in display order: the order of Keys, Entries and
// "kinetic config show", which list the declared keys after them.
var keyTable = []keyInfo{
	{key: Project, help: "Google Cloud project", fallback: fromEnv("GOOGLE_CLOUD_PROJECT")},
	{key: Zone, help: "compute zone of the cluster", fallback: fixed("us-central1-a")},
	{key: Cluster, help: "Kubernetes cluster name", fallback: fixed(DefaultCluster)},
	{key: Namespace, help: "Kubernetes namespace for jobs", fallback: fixed("default"), check: checkNamespace},
	{key: Backend, help: "where jobs run", choices: Backends, check: checkBackend},
	{key: Store, help: "store URL (file://, mem://, gs://, s3://) or an absolute path", fallback: defaultStore, check: checkStore},
	{key: OutputDir, help: "directory a job's outputs are written to"},
	{key: BaseImageRepo, help: "repository of the prebuilt base images"},
	{key: ImageRegistry, help: "registry bundled images are pushed to (HOST/PATH)"},
	{key: BaseImageCPU, help: "base image of bundled builds for CPU jobs"},
	{key: BaseImageGPU, help: "base image of bundled builds for GPU jobs"},
	{key: BaseImageTPU, help: "base image of bundled builds for TPU jobs"},
	{key: ImageBuilder, help: "bundled image builder: " + strings.Join(ImageBuilders, ", "), check: checkImageBuilder},
	{key: RuntimeLayer, help: "what bundled images, prebuilt bases and local environments with requirements get besides the job's requirements: jax (jax for the accelerator, keras, cloudpickle; docs/images.md) or none (the base's packages only)", fallback: fixed("jax"), check: checkRuntimeLayer},
	{key: Container, help: "local backend: run jobs inside the bundled image with " + strings.Join(Containers, ", "), check: checkContainer},
	{key: KubeContext, help: "context within the kubeconfig"},
	{key: GCSEndpoint, help: "GCS endpoint URL for gs:// stores (emulators, private endpoints)", fallback: emulatorHost, check: checkHTTPURL},
	{key: LWSImage, help: "the LeaderWorkerSet controller image kinetic up installs on GKE (default: the pinned release's, registry.k8s.io/lws/lws; a copy in your registry for nodes without internet)"},
	{key: Reservation, help: "a Compute Engine reservation that kinetic pool add (and up --accelerator) consumes; --reservation wins"},
	{key: ForceDestroy, help: "whether kinetic down also deletes the store bucket with every job record and output (default false: job records and outputs are kept)", fallback: fixed("false"), check: checkBool},
	{key: Python, help: "the Python interpreter local jobs run with (default: the one the SDK runs, else python3)", check: checkExecutable},
	{key: BuildPython, help: "the Python whose pip installs requirements into bundled images (default: python3)", check: checkExecutable},
	{key: PackageRoot, help: "the directory shipped as the job's working directory, instead of the detected project root (absolute, relative to the call's working directory, or ~/...)", check: checkLocalPath},
	{key: NoDefaultExcludes, help: "ship files the default excludes leave out (.git, __pycache__, virtualenvs …)", fallback: fixed("false"), check: checkBool},
	{key: ContextSizeWarnMB, help: "warn when the shipped working directory is larger than this many MiB (0: never)", fallback: fixed("100"), check: checkSizeMB},
	{key: UploadConfirmMB, help: "kinetic run asks before uploading a working directory and local Data larger than this many MiB together (on a terminal; elsewhere it needs --yes); 0: never ask. The SDK does not ask", fallback: fixed("1024"), check: checkSizeMB},
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

// Sources reported by Resolved.Source besides "env NAME" and "profile NAME".
const (
	SourceArgument = "argument"
	SourceDefault  = "default"
	SourceUnset    = "unset"
)

// Keys returns every key, in display order.
func Keys() []Key {
	all := allKeys()
	ks := make([]Key, len(all))
	for i, ki := range all {
		ks[i] = ki.key
	}
	return ks
}

func lookup(k Key) (keyInfo, bool) {
	for _, ki := range allKeys() {
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
