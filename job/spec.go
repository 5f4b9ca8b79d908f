package job

import (
	"encoding/json"
	"fmt"
)

// Kinds of work a job can carry.
const (
	KindPickle  = "python-pickle" // a cloudpickled (func, args, kwargs) from the Python SDK
	KindEntry   = "python-entry"  // FILE.py::FUNC with literal arguments, from the CLI
	KindCommand = "command"       // an argv, from `kinetic run -- CMD ...`
)

// RunnerPath is where the kinetic runner binary is in the containers Kinetic starts: the
// runner image keeps it there (the Kubernetes backends' init container runs it to copy
// itself into the pod), and the local backend mounts this machine's binary there.
// Bundled and base images do not carry it: no pod runs it from them.
const RunnerPath = "/kinetic/bin/kinetic"

// Spec is spec.json: everything the runner needs to run the job, and nothing secret
// (captured environment values travel in env.json, never here).
type Spec struct {
	Version int    `json:"version"`
	JobID   string `json:"job_id"`
	Kind    string `json:"kind"`
	// Payload is the pickled call for KindPickle.
	Payload *BlobRef `json:"payload,omitempty"`
	// Args are the pickled (args, kwargs) of a batch child; Payload is then the pickled
	// function alone.
	Args *BlobRef `json:"args,omitempty"`
	// ArgsInline carries small arguments (up to InlineArgs bytes) in the spec itself (one
	// object less per input).
	ArgsInline []byte `json:"args_inline,omitempty"`
	// Workdir is the packaged working directory, if any.
	Workdir *BlobRef `json:"workdir,omitempty"`
	// Cwd is the submitter's working directory relative to the shipped root.
	Cwd string `json:"cwd,omitempty"`
	// Entry is the FILE::FUNC call for KindEntry.
	Entry *Entry `json:"entry,omitempty"`
	// Command is the argv for KindCommand.
	Command []string `json:"command,omitempty"`
	// Data are the call's Data(...) references; the i-th replaces the sentinel
	// "\x00kinetic-data:i\x00" in the arguments, or is mounted at its Mount path.
	Data []DataRef `json:"data,omitempty"`
	// EnvNames lists the captured variable names (values are in env.json).
	EnvNames  []string `json:"env_names,omitempty"`
	OutputDir string   `json:"output_dir,omitempty"`
	// Python is the interpreter to run on the local backend ("" = python3 on PATH).
	Python string `json:"python,omitempty"`
	// Requirements are the filtered requirement lines (with index directives, in order)
	// and Constraints the -c lines; EnvKey identifies the environment they make.
	Requirements []string `json:"requirements,omitempty"`
	Constraints  []string `json:"constraints,omitempty"`
	EnvKey       string   `json:"env_key,omitempty"`
	// RequirementsSource is the dependency file they came from, for messages.
	RequirementsSource string `json:"requirements_source,omitempty"`
	Accelerator        string `json:"accelerator,omitempty"`
	// Spot says the job runs on spot (preemptible) capacity.
	Spot bool `json:"spot,omitempty"`
	// Image is the container image the job runs in, for backends that run containers
	// (Kubernetes; the local backend when Container is set): a digest reference for
	// bundled images, the published base for prebuilt, the user's reference for custom.
	// "" means no container (the local backend's virtualenv path). The runner is not
	// expected inside it: backends inject the kinetic binary (RunnerPath), unless
	// planning put it in (Handle.RunnerInImage: then Image is the image with it, by
	// digest, a bundled image's or a custom image's in Kinetic's repository).
	Image string `json:"image,omitempty"`
	// ImageMode is how Image was chosen: "bundled", "prebuilt" or "custom".
	ImageMode string `json:"image_mode,omitempty"`
	// ContainerImage is the user's container_image of a custom image, as given (Image
	// may be Kinetic's copy of it with the runner added): messages name this.
	ContainerImage string `json:"container_image,omitempty"`
	// InstallAtStart tells the runner to install Requirements before the call (prebuilt
	// images: uv when the image has it, else pip), into a directory on PYTHONPATH.
	InstallAtStart bool `json:"install_at_start,omitempty"`
	// Container is the engine ("podman" or "docker") the local backend runs Image with;
	// "" runs the job directly on the machine.
	Container string `json:"container,omitempty"`
	// TimeoutSeconds limits the call (timeout= on run; 0 = none): the runner stops it
	// after that long and the job FAILS with a reason starting "timeout:".
	TimeoutSeconds int `json:"timeout_seconds,omitempty"`
	// Debug, if set, makes the runner start debugpy in the job's Python and wait for a
	// debugger before the call (docs/debug.md).
	Debug *DebugSpec `json:"debug,omitempty"`
}

// DebugSpec is how a debug job waits for its debugger.
type DebugSpec struct {
	// WaitSeconds bounds the wait for a debugger to attach; after it the job fails.
	WaitSeconds int `json:"wait_seconds"`
}

// BlobRef points at content in the store and says how to check it.
type BlobRef struct {
	Key    string `json:"key"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
	Format string `json:"format,omitempty"` // FormatManifest for working directories
}

// FormatManifest marks a working directory shipped as a pack manifest (package pack).
const FormatManifest = "kinetic-manifest/v1"

// Entry is a FILE.py::FUNC call with arguments given on the command line.
type Entry struct {
	File string   `json:"file"`
	Func string   `json:"func"`
	Args []string `json:"args,omitempty"`
	// Kwargs are the keyword arguments (`kinetic run F.py::f name=value`): each value is
	// read as Args' are (a Python literal, else a string).
	Kwargs map[string]string `json:"kwargs,omitempty"`
}

// SpecVersion is the spec format this runner writes and reads.
const SpecVersion = 1

// DecodeSpec parses and checks spec.json.
func DecodeSpec(b []byte) (*Spec, error) {
	var s Spec
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("spec.json: %w", err)
	}
	if s.Version != SpecVersion {
		return nil, fmt.Errorf("spec.json has version %d, this runner reads version %d: use the same kinetic version to submit and run", s.Version, SpecVersion)
	}
	switch s.Kind {
	case KindPickle:
		if s.Payload == nil {
			return nil, fmt.Errorf("spec.json: %s job without a payload", s.Kind)
		}
	case KindEntry:
		if s.Entry == nil {
			return nil, fmt.Errorf("spec.json: %s job without an entry", s.Kind)
		}
	case KindCommand:
		if len(s.Command) == 0 {
			return nil, fmt.Errorf("spec.json: command job without a command")
		}
	default:
		return nil, fmt.Errorf("spec.json: unknown kind %q", s.Kind)
	}
	if s.Debug != nil && s.Debug.WaitSeconds <= 0 {
		return nil, fmt.Errorf("spec.json: debug wait_seconds is %d, want a positive number of seconds", s.Debug.WaitSeconds)
	}
	return &s, nil
}

// Encode returns the spec as JSON.
func (s *Spec) Encode() []byte {
	b, _ := json.MarshalIndent(s, "", "  ")
	return append(b, '\n')
}

// InlineArgs is the size up to which a batch input travels inside its spec
// (Spec.ArgsInline) rather than as its own object.
const InlineArgs = 16 << 10
