package backend

import (
	"fmt"
	"sync"

	"github.com/kinetic-run/kinetic/accel"
	"github.com/kinetic-run/kinetic/config/backendnames"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
)

// The registry: every backend package registers its factories by name in an init, as
// gocloud's blob drivers register their URL schemes with blob.DefaultURLMux, and a
// program links in the backends it wants with blank imports (cmd/kinetic links
// backend/local and backend/kubernetes). The engine finds the factory for the name a
// job's handle records; config accepts exactly the registered names.

// Settings are the resolved configuration values of this machine, by configuration key
// (config.Key as a string). A backend reads the keys it owns (the Kubernetes pod
// settings, the kubeconfig file) through it, so backend needs nothing of config but the
// list of accepted names (config/backendnames).
type Settings interface {
	Get(key string) string
}

// SourceOf is where s's value of key came from ("env KINETIC_BACKEND", "profile dev"),
// when s says (a resolved configuration does), else "the configuration": for errors that
// name it.
func SourceOf(s Settings, key string) string {
	if ss, ok := s.(interface{ Source(key string) string }); ok {
		return ss.Source(key)
	}
	return "the configuration"
}

// Env is what a factory builds a backend from.
type Env struct {
	// Handle says where the job runs: the backend name the factory was looked up by
	// (Backend; "" for the local backend of old handles) and the cluster the job was
	// submitted to (Project, Zone, ClusterName, Namespace, KubeContext). For a listing
	// it is a handle with only Backend and Namespace.
	Handle *job.Handle
	// Store holds the jobs the backend runs.
	Store *store.Store
	// Settings are this machine's resolved configuration.
	Settings Settings
	// Exe is the kinetic executable a backend starts on this machine ("" means this
	// process's own).
	Exe string
}

// Factory builds the backends registered under one name, and answers the engine's
// planning questions about them, so that the engine asks instead of type-asserting.
type Factory interface {
	// Key tells apart the backends the factory makes for different handles over one
	// store (a Kubernetes cluster's context and namespace). The engine makes one backend
	// per name, key and store, and reuses it: a backend may remember things between
	// calls.
	Key(env Env) string
	// New makes the backend for env.
	New(env Env) (Backend, error)
	// Plan settles, when a job is planned, which backend runs it and what its handle
	// records about where it runs. It gets the job's accelerator and a handle with the
	// configured backend's name (Backend) and the cluster fields of the configuration
	// (Project, Zone, ClusterName, Namespace, KubeContext). It may name another
	// registered backend in h.Backend (the Kubernetes backends send a slice over several
	// hosts to Pathways), fill in the cluster fields (a generic cluster's current
	// context), or refuse the job with an error a person can act on (the local backend
	// runs one host). A backend with nothing to settle returns nil.
	Plan(h *job.Handle, acc accel.Spec, s Settings) error
	// Traits are the facts about the backends of this name the engine plans with.
	Traits() Traits
}

// Preflighter is a Factory that checks, before a job is planned, the one thing its
// backends cannot work without (a kubeconfig that names a cluster), so that a person
// meets that error first, not one about a registry or a store (`kinetic run`).
type Preflighter interface {
	Preflight(s Settings) error
}

// Traits are what a factory says about the jobs its backends run, as two independent
// facts the engine plans from (so that a backend of a kind already known adds no engine
// code: docs/architecture.md, "Adding a backend"):
//
//	                   SharesFiles  ThisMachinesHardware
//	local              yes          yes
//	slurm              yes          no   (nodes that mount this machine's paths)
//	gke, k8s, pathways no           no   (pods from a container image)
type Traits struct {
	// SharesFiles: the machines the jobs run on see this machine's file systems (this
	// machine itself, or nodes that mount the same paths). The engine builds no image
	// for such a job unless it asks for a container (container=): its Python
	// environment is a virtualenv on those files, and a Data(..., fuse=True) directory
	// is used in place instead of uploaded. Without it, jobs run from a container image.
	SharesFiles bool
	// ThisMachinesHardware: the jobs run with this machine's hardware, so a GPU or TPU
	// job runs on its CPU (the engine says so once), its virtualenv gets the CPU's
	// runtime layer, and a job waits for this machine's slots. Without it, a job's
	// machines have the accelerator it asks for, and its environment gets that
	// accelerator's runtime layer (jax for CUDA on a GPU).
	ThisMachinesHardware bool
	// ObjectsNamedAfterJob: the backend names what it makes for a job in a cluster (a
	// Kubernetes Job, its pods, a Slurm job) after the job's ID, which the engine
	// records in the handle's k8s_name.
	ObjectsNamedAfterJob bool
}

var (
	regMu     sync.RWMutex
	factories = map[string]Factory{}
)

// Register makes f the factory of backend name. Call it from the backend package's init.
// It panics if f is nil or name is empty or already registered.
func Register(name string, f Factory) {
	if f == nil {
		panic(fmt.Sprintf("backend.Register(%q): nil factory", name))
	}
	regMu.Lock()
	defer regMu.Unlock()
	backendnames.Add(name) // panics on an empty or repeated name
	factories[name] = f
}

// Lookup returns the factory registered under name.
func Lookup(name string) (Factory, bool) {
	regMu.RLock()
	defer regMu.RUnlock()
	f, ok := factories[name]
	return f, ok
}

// Names returns the registered backend names, sorted.
func Names() []string { return backendnames.List() }

// TraitsOf returns the traits of the backend registered as name (none for a name not
// registered).
func TraitsOf(name string) Traits {
	f, ok := Lookup(name)
	if !ok {
		return Traits{}
	}
	return f.Traits()
}

// SharesFiles reports whether the backend registered as name runs jobs on machines that
// share this machine's file systems (Traits.SharesFiles): planned without an image.
func SharesFiles(name string) bool { return TraitsOf(name).SharesFiles }

// OnThisMachinesHardware reports whether the backend registered as name runs jobs with
// this machine's hardware (Traits.ThisMachinesHardware).
func OnThisMachinesHardware(name string) bool { return TraitsOf(name).ThisMachinesHardware }
