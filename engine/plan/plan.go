// Package plan turns one call (a Request) into a job ready to write (a Job), in named
// steps, each a function of its own file with its own test, the way jobset writes one
// file per policy: settings → accelerator → placement (backend, this machine or a
// container) → call (payload, command, debug, time limit, working directory) →
// environment capture → data → tree → upload size → dependencies → image → handle. Bad input fails
// in the step that owns it, before anything is written. The engine writes and submits
// what Make returns; it is asked for what planning needs through Env.
package plan

import (
	"context"
	"path/filepath"
	"time"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/kinetic-run/kinetic/accel"
	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/deps"
	"github.com/kinetic-run/kinetic/image"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/pack"
	"github.com/kinetic-run/kinetic/store"
)

// Request is one call to run somewhere else.
type Request struct {
	// Kind is job.KindPickle, job.KindEntry or job.KindCommand.
	Kind string
	// Payload is the pickled (func, args, kwargs) of a KindPickle job; in a template
	// (engine.Template), the pickled function alone (stored once; each job of it
	// brings its arguments).
	Payload []byte
	// PayloadPath is a file holding Payload (the Python SDK hands over a temp file).
	PayloadPath string
	// Entry is FILE.py::FUNC for KindEntry (File as given, relative to Cwd or absolute).
	Entry *job.Entry
	// Command is the argv of a KindCommand job.
	Command []string

	FuncName    string
	DisplayName string
	// SourceFile is the file that defines the function: the shipped root is found from it.
	SourceFile string
	// Cwd is the submitter's working directory (default: this process's).
	Cwd string
	// Python is the interpreter the local backend runs (the SDK sends sys.executable, so
	// pickles load in the same Python that made them).
	Python string
	// PythonVersion is the client's Python minor version ("3.12"): the Python of the
	// image a job runs in. "" (an older client) means the version of Python (asked), else
	// of the python3 on PATH, else image.DefaultPython.
	PythonVersion string

	Accelerator string
	// AcceleratorDefault says Accelerator is the documented default (DefaultAccelerator,
	// the SDK's and kinetic run's), not one the caller named: with nothing configured
	// (no backend, project or profile) the job runs on this machine's CPU, and says so.
	AcceleratorDefault bool
	ContainerImage     string
	CaptureEnv         []string
	Environ            map[string]string // the submitter's environment, for CaptureEnv
	OutputDir          string
	Spot               bool
	// Timeout limits the call (0 = none): the job is stopped after it and FAILS with a
	// reason starting "timeout:" (docs/jobs.md).
	Timeout time.Duration
	// Debug starts debugpy in the job's Python and waits for a debugger before the call
	// (docs/debug.md); DebugWait bounds the wait in seconds (default DefaultDebugWait).
	Debug     bool
	DebugWait float64
	// Data are the Data(...) objects of the call, in sentinel order (see python/kinetic/data.py);
	// those with a Mount come from volumes=.
	Data []DataArg
	// NoWorkdir skips shipping the working directory.
	NoWorkdir bool
	// ConfirmUpload, if set, is asked before a job whose working directory and local
	// Data are larger than upload_confirm_mb is written (kinetic run: a prompt, or
	// --yes); an error stops the submission with nothing written.
	ConfirmUpload func(ctx context.Context, u UploadSize) error

	// Config are per-call arguments (project, zone, cluster, namespace, backend, store).
	Config map[config.Key]string
}

// DataArg is one Data(...) of a call.
type DataArg struct {
	Path              string
	Fuse              bool
	HFTrustRemoteCode bool
	Mount             string
}

// DefaultDebugWait is how long a debug job waits for a debugger, as the reference does.
const DefaultDebugWait = 10 * time.Minute

// Env is what planning asks of its caller (the engine implements it).
type Env interface {
	// Resolve is the configuration with a call's explicit arguments on top.
	Resolve(args map[config.Key]string) (*config.Resolved, error)
	// Store opens (once) the store at url.
	Store(ctx context.Context, url string) (*store.Store, error)
	// PathPython is the interpreter the python3 on PATH runs ("" when none).
	PathPython() string
	// PythonVersion is the minor version ("3.12") of the interpreter python ("" = the
	// python3 on PATH); "" when there is none or it cannot say.
	PythonVersion(python string) string
	// ImagePython is the Python minor version a custom image's configuration names, ""
	// when it does not say or cannot be read (asked once per image per session; never
	// reads a layer).
	ImagePython(ctx context.Context, ref name.Reference) string
	// NoticeOnce tells a person msg, once per session (a notice ends with a newline).
	NoticeOnce(msg string)
	// Warning tells a person msg (a warning: secrets captured, a large tree).
	Warning(msg string)
	// EnsureImage looks up the bundled image req describes and builds and pushes it on
	// a miss (the engine adds the runner binary and the progress writer).
	EnsureImage(ctx context.Context, cfg *config.Resolved, req *image.BuildRequest) (image.Result, error)
	// AddRunner puts into img, the image of a job that runs where (the planned handle:
	// its backend and cluster) over st, the runner that backend's pods start, when they
	// start one of their own (backend.RunnerImager), pushes the result into the
	// repository into, and returns it and the runner image, by digest. img is one
	// Kinetic built (by digest, into its own repository) or one the user gave, in
	// into's registry (looked up first when given by tag). ok is false when the backend
	// starts none, or img could not be looked up, or the runner could not be added (the
	// engine says why, once): the pods then copy the runner in.
	AddRunner(ctx context.Context, where *job.Handle, st *store.Store, img name.Reference, into name.Repository) (w image.WithRunner, ok bool)
}

// Job is a call planned: validated, its tree scanned, its image resolved; nothing is
// written yet.
type Job struct {
	Cfg    *config.Resolved
	Store  *store.Store
	Spec   *job.Spec
	Handle *job.Handle
	// Payload is the function pickle (KindPickle).
	Payload []byte
	// Manifest is the shipped tree as scanned (nil when none is shipped), PackOpts how.
	Manifest *pack.Manifest
	PackOpts pack.Options
	// Env are the captured environment values (never in the spec or handle).
	Env  map[string]string
	Root string             // the shipped root ("" when no working directory is shipped)
	Reqs *deps.Requirements // the filtered requirements (nil: none)
	// InContainer says the job runs in a container (a cluster, or container= locally).
	InContainer bool
	// RunnerInImage is the runner image whose binary Spec.Image holds (the handle's
	// runner_in_image; "" when the pods copy the runner in).
	RunnerInImage string
	// ContainerImage is the user's container_image when Spec.Image is a copy of it with
	// the runner added (the handle's container_image).
	ContainerImage string

	id          string      // the job's ID
	acc         accel.Spec  // the accelerator
	where       *job.Handle // the backend and cluster it runs on
	filesShared bool        // its backend runs jobs on this machine
	cwd         string      // the submitter's working directory
}

// step is one named step of planning.
type step struct {
	name string
	run  func(ctx context.Context, env Env, req *Request, p *Job) error
}

// steps are the steps of Make, in order.
var steps = []step{
	{"settings", settings},
	{"accelerator", accelerator},
	{"placement", placement},
	{"call", call},
	{"environment capture", captureStep},
	{"data", dataStep},
	{"tree", tree},
	{"upload size", confirmUpload},
	{"dependencies", dependencies},
	{"image", imageStep},
	{"handle", handle},
}

// Make validates req and plans its job: the steps, in order; the first error stops it.
// It may change req (the python3 found on PATH is filled in).
func Make(ctx context.Context, env Env, req *Request) (*Job, error) {
	p := &Job{}
	for _, s := range steps {
		if err := s.run(ctx, env, req, p); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// PackCache holds the hash cache and pack index that make resubmits incremental.
func PackCache() string { return filepath.Join(config.DataDir(), "cache", "pack") }

// DefaultOutputDir is the output directory of job id in st when none is set.
func DefaultOutputDir(st *store.Store, id string) string { return store.DefaultOutputDir(st.URL(), id) }
