package protocol

import "time"

// Method names.
const (
	MethodHello         = "hello"
	MethodCancelRequest = "cancel_request"
	MethodRoot          = "root"
	MethodConfig        = "config"
	MethodSubmit        = "submit"
	MethodCall          = "call"
	MethodAttach        = "attach"
	MethodStatus        = "status"
	MethodWait          = "wait"
	MethodResult        = "result"
	MethodResultsMany   = "results_many"
	MethodCollected     = "collected"
	MethodLogs          = "logs"
	MethodTail          = "tail"
	MethodCancel        = "cancel"
	MethodDebugAttach   = "debug_attach"
	MethodDebugDetach   = "debug_detach"
	MethodCleanup       = "cleanup"
	MethodMap           = "map"
	MethodBatch         = "batch"
	MethodBatchWatch    = "batch_watch"
	MethodBatchCancel   = "batch_cancel"
	MethodBatchCleanup  = "batch_cleanup"
	MethodDataHash      = "data_hash"
	MethodList          = "list"
)

// Methods lists every method name.
var Methods = []string{
	MethodHello, MethodCancelRequest, MethodRoot, MethodConfig, MethodSubmit, MethodCall, MethodAttach,
	MethodStatus, MethodWait, MethodResult, MethodResultsMany, MethodCollected, MethodLogs, MethodTail,
	MethodCancel, MethodDebugAttach, MethodDebugDetach, MethodCleanup, MethodMap, MethodBatch,
	MethodBatchWatch, MethodBatchCancel, MethodBatchCleanup, MethodDataHash, MethodList,
}

// Empty is the request or response of a method that has no params or no result: {}.
type Empty struct{}

// HelloResponse answers hello: the same facts as the greeting.
type HelloResponse struct {
	Kinetic  string `json:"kinetic"`
	Protocol int    `json:"protocol"`
}

// CancelRequest (cancel_request) cancels an in-flight request, whose response is then a
// Cancelled error. The SDK sends it with the negated ID of the request (Ctrl-C).
type CancelRequest struct {
	RequestID int64 `json:"request_id"`
}

// CancelResponse says whether the request was still in flight.
type CancelResponse struct {
	Cancelled bool `json:"cancelled"`
}

// RootRequest (root) asks for the shipped root of a function defined in SourceFile,
// called from Cwd.
type RootRequest struct {
	SourceFile string `json:"source_file"`
	Cwd        string `json:"cwd"`
}

// RootResponse is the shipped root: the SDK pickles modules under it by value.
type RootResponse struct {
	Root string `json:"root"`
}

// ConfigRequest (config) asks for the resolved configuration. Config is accepted and
// ignored (older SDKs send it).
type ConfigRequest struct {
	Config map[string]string `json:"config,omitempty"`
}

// ConfigEntry is one key of the resolved configuration and where its value came from;
// config answers with every key, as a list.
type ConfigEntry struct {
	Key    string `json:"key"`
	Value  string `json:"value"`
	Source string `json:"source"`
}

// SubmitRequest (submit) is one call to run somewhere else; the response is its Handle.
type SubmitRequest struct {
	// Kind is "python-pickle" (Payload or the file PayloadPath holds the pickled (func,
	// args, kwargs)), "python-entry" (Entry) or "command" (Command).
	Kind string `json:"kind"`
	// Payload is the pickle itself (base64 in JSON): the SDK sends a small one in the
	// request rather than through a temporary file (a new file per call, written,
	// read and removed). PayloadPath wins when both are given.
	Payload     []byte   `json:"payload,omitempty"`
	PayloadPath string   `json:"payload_path,omitempty"`
	Entry       *Entry   `json:"entry,omitempty"`
	Command     []string `json:"command,omitempty"`

	FuncName    string `json:"func_name,omitempty"`
	DisplayName string `json:"display_name,omitempty"`
	// SourceFile defines the function (the shipped root is found from it); Cwd is the
	// submitter's working directory.
	SourceFile string `json:"source_file,omitempty"`
	Cwd        string `json:"cwd,omitempty"`
	// Python is the interpreter the local backend runs (the SDK sends sys.executable).
	Python string `json:"python,omitempty"`
	// PythonVersion is the client's Python minor version ("3.12", from
	// sys.version_info[:2]): bundled and prebuilt images get that Python. A client that
	// omits it (older SDKs) gets the version of Python, else of the python3 on the
	// server's PATH, else 3.11 (the images' Python before this field).
	PythonVersion string `json:"python_version,omitempty"`

	Accelerator string `json:"accelerator,omitempty"`
	// AcceleratorDefault says Accelerator is the documented default, not one the
	// caller named: with nothing configured the job then runs on this machine's CPU.
	AcceleratorDefault bool              `json:"accelerator_default,omitempty"`
	ContainerImage     string            `json:"container_image,omitempty"`
	CaptureEnv         []string          `json:"capture_env_vars,omitempty"`
	Environ            map[string]string `json:"environ,omitempty"`
	OutputDir          string            `json:"output_dir,omitempty"`
	Spot               bool              `json:"spot,omitempty"`
	// Timeout limits the call, in seconds (0 = none).
	Timeout float64 `json:"timeout,omitempty"`
	Debug   bool    `json:"debug,omitempty"`
	// DebugWait is in seconds (0 = the default).
	DebugWait float64   `json:"debug_wait,omitempty"`
	Data      []DataArg `json:"data,omitempty"`
	NoWorkdir bool      `json:"no_workdir,omitempty"`

	// Config are per-call configuration values (project, zone, cluster, namespace,
	// backend, store, ...), by configuration key.
	Config map[string]string `json:"config,omitempty"`
}

// Entry is FILE.py::FUNC of an entry job.
type Entry struct {
	File string   `json:"file"`
	Func string   `json:"func"`
	Args []string `json:"args,omitempty"`
}

// DataArg is one Data(...) of a call, in sentinel order (python/kinetic/data.py).
type DataArg struct {
	Path              string `json:"path"`
	Fuse              bool   `json:"fuse,omitempty"`
	HFTrustRemoteCode bool   `json:"hf_trust_remote_code,omitempty"`
	Mount             string `json:"mount,omitempty"`
}

// Handle is a submitted job: every field is a string, and with Store any machine can
// attach to it. It is the response of submit and attach.
type Handle struct {
	JobID       string `json:"job_id"`
	Backend     string `json:"backend"`
	Project     string `json:"project"`
	ClusterName string `json:"cluster_name"`
	Zone        string `json:"zone"`
	Namespace   string `json:"namespace"`
	BucketName  string `json:"bucket_name"`
	K8sName     string `json:"k8s_name"`
	ImageURI    string `json:"image_uri"`
	Accelerator string `json:"accelerator"`
	FuncName    string `json:"func_name"`
	DisplayName string `json:"display_name"`
	CreatedAt   string `json:"created_at"`
	GroupID     string `json:"group_id,omitempty"`
	GroupKind   string `json:"group_kind,omitempty"`
	GroupIndex  string `json:"group_index,omitempty"`
	Debug       string `json:"debug,omitempty"`
	Spot        string `json:"spot,omitempty"`
	KubeContext string `json:"kube_context,omitempty"`
	ShippedRoot string `json:"shipped_root,omitempty"`
	Store       string `json:"store"`
	OutputDir   string `json:"output_dir,omitempty"`
}

// JobRequest names a job (attach, status, cancel, and the base of the other job
// methods). Store overrides the configured store (a handle always sends its own);
// Timeout is in seconds, 0 = none (as is one above a century: internal/seconds).
// NoWait is Python's timeout=0, "now" (docs/protocol.md): wait, result and debug_attach
// answer with what is the case at once (a job not finished is a Timeout error), cancel
// tells the job to stop and replies without waiting for it to stop, cleanup refuses a
// job still running. An engine older than NoWait ignores it and waits without limit.
type JobRequest struct {
	JobID   string  `json:"job_id"`
	Store   string  `json:"store,omitempty"`
	Timeout float64 `json:"timeout,omitempty"`
	NoWait  bool    `json:"no_wait,omitempty"`
	// PollInterval is the longest pause, in seconds, between two checks that a job told
	// to stop has stopped (cancel, cleanup: the SDK's cleanup_poll_interval; 0: the
	// backend's own).
	PollInterval float64 `json:"poll_interval,omitempty"`
	// Config are the configuration values that say where the job is when Store is not
	// given (attach(job_id, project=, cluster=)): the store of the profile of the cluster
	// they name, else the configured one.
	Config map[string]string `json:"config,omitempty"`
}

// StatusResponse is a job's state and, when FAILED, why (status, wait, cancel). An
// unknown job's status is NOT_FOUND, not an error.
type StatusResponse struct {
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
}

// WaitRequest (wait) waits for a job to end; StreamLogs sends its output as log events
// and StatusEvents its state changes as status events.
type WaitRequest struct {
	JobRequest
	StreamLogs   bool `json:"stream_logs,omitempty"`
	StatusEvents bool `json:"status_events,omitempty"`
}

// ResultRequest (result) waits for a job and reads its result; result.pkl is copied
// into ValueDir. Reading removes nothing: a client that wants the job cleaned up once it
// holds the value says so with collected.
type ResultRequest struct {
	WaitRequest
	ValueDir string `json:"value_dir,omitempty"`
	// InlineMax: a value of at most this many bytes comes in Result.Value instead of a
	// file in ValueDir.
	InlineMax int `json:"inline_max,omitempty"`
}

// CallRequest (call) is submit, then result of the job it submitted, in one request: a
// blocking call's two round trips in one, and no read of the job's handle back. An
// EventSubmitted carries the job's handle as soon as it is submitted (the SDK cancels the
// job on Ctrl-C with it); then come result's events, and result's reply. The Result's
// job fields (job_id, store, config) are not read: the job is the one submitted.
type CallRequest struct {
	SubmitRequest
	Result ResultRequest `json:"result"`
}

// Result is how a job ended, with its envelope (result.json) and the local copy of
// result.pkl (the value or the exception), when asked for.
type Result struct {
	State     string    `json:"state"`
	Reason    string    `json:"reason,omitempty"`
	Envelope  *Envelope `json:"envelope,omitempty"`
	ValuePath string    `json:"value_path,omitempty"`
	// Value is the pickled value (or exception) itself when it is at most the request's
	// InlineMax bytes (base64 in JSON).
	Value []byte `json:"value,omitempty"`
}

// Envelope is what the job reported about its call.
type Envelope struct {
	Success    bool   `json:"success"`
	Phase      string `json:"phase,omitempty"`
	Host       string `json:"host"`
	HasValue   bool   `json:"has_value"`
	ValueRepr  string `json:"value_repr,omitempty"`
	ExcType    string `json:"exc_type,omitempty"`
	ExcMessage string `json:"exc_message,omitempty"`
	Traceback  string `json:"traceback,omitempty"`
	ExitCode   *int   `json:"exit_code,omitempty"`
}

// ResultsManyRequest (results_many) reads the results of many finished jobs at once (a
// batch's results()); the response is one JobResult per ID, in order. Like result, it
// removes nothing.
type ResultsManyRequest struct {
	JobIDs    []string `json:"job_ids"`
	Store     string   `json:"store,omitempty"`
	ValueDir  string   `json:"value_dir,omitempty"`
	InlineMax int      `json:"inline_max,omitempty"`
	Timeout   float64  `json:"timeout,omitempty"`
}

// CollectedRequest (collected) acknowledges the values of successful jobs that the
// client has received (from result or results_many) and asks for their cleanup: each
// job is claimed for Collector (its tombstone, a batch's collection record) and, once
// the response is sent, cleaned up. A job another collector claimed first is left to
// it and reported in Taken. A client that dies before acknowledging loses nothing: the
// jobs stay whole until a collector acknowledges them.
type CollectedRequest struct {
	JobIDs []string `json:"job_ids"`
	Store  string   `json:"store,omitempty"`
	// Collector names the client process ("pid 4242 on host-a (alice)"), recorded in
	// the tombstones so that a later collector is told who took the results.
	Collector string `json:"collector,omitempty"`
}

// CollectedResponse says how many of the jobs this call claimed (cleaned up after the
// response) and which another collector had claimed first.
type CollectedResponse struct {
	Claimed int            `json:"claimed"`
	Taken   []TakenByOther `json:"taken,omitempty"`
}

// TakenByOther is a job whose result another collector claimed: who, and when.
type TakenByOther struct {
	JobID       string `json:"job_id"`
	CollectedBy string `json:"collected_by,omitempty"`
	CollectedAt string `json:"collected_at"`
}

// JobResult is one job's Result, or the Error that kept it from being read.
type JobResult struct {
	*Result
	JobID string `json:"job_id"`
	Error *Error `json:"error,omitempty"`
}

// LogsRequest (logs) reads a job's output; with Follow it streams it as log events
// until the job ends, and the response is {}.
type LogsRequest struct {
	JobRequest
	Follow bool `json:"follow"`
}

// LogsResponse is a job's output (logs, tail).
type LogsResponse struct {
	Logs string `json:"logs"`
}

// TailRequest (tail) reads the last N lines of a job's output.
type TailRequest struct {
	JobRequest
	N int `json:"n"`
}

// DebugAttachRequest (debug_attach) waits up to Timeout for a debug job's debugpy and
// connects to it through LocalPort (0 = any free port).
type DebugAttachRequest struct {
	JobRequest
	LocalPort int `json:"local_port"`
}

// DebugSession is a debugger's way into a debug job (docs/debug.md): Host and Port on
// this machine reach the job's debugpy; Launch is a VS Code attach configuration.
// SessionID is set when the session holds a forward open (debug_detach closes it).
type DebugSession struct {
	JobID      string         `json:"job_id"`
	Host       string         `json:"host"`
	Port       int            `json:"port"`
	LocalRoot  string         `json:"local_root"`
	RemoteRoot string         `json:"remote_root"`
	Marker     *DebugMarker   `json:"marker"`
	Launch     map[string]any `json:"launch"`
	Forwarded  bool           `json:"forwarded"`
	SessionID  string         `json:"session_id,omitempty"`
}

// DebugMarker is what the job's debugpy reported when it started listening.
type DebugMarker struct {
	Host        string    `json:"host"`
	Port        int       `json:"port"`
	RemoteRoot  string    `json:"remote_root"`
	Cwd         string    `json:"cwd,omitempty"`
	HostIndex   string    `json:"host_index"`
	PID         int       `json:"pid,omitempty"`
	Time        time.Time `json:"time"`
	WaitSeconds int       `json:"wait_seconds"`
	// AttachedAt: when a debugger attached (the other hosts of a multi-host job then
	// start); nil while the leader waits.
	AttachedAt *time.Time `json:"attached_at,omitempty"`
	// WentOnAt: when the leader, with no debugger attached within its wait, called the
	// function without one (debugpy still listens).
	WentOnAt *time.Time `json:"went_on_at,omitempty"`
}

// DebugDetachRequest (debug_detach) ends a debug session's forward.
type DebugDetachRequest struct {
	SessionID string `json:"session_id"`
}

// DebugDetachResponse says whether the session was open.
type DebugDetachResponse struct {
	Closed bool `json:"closed"`
}

// CleanupRequest (cleanup) removes a job's backend resources (K8s) and store objects
// (GCS). It is idempotent: an unknown job is already clean. The response is {}.
type CleanupRequest struct {
	JobRequest
	K8s bool `json:"k8s"`
	GCS bool `json:"gcs"`
}

// MapRequest (map) fans a function out over many inputs, one child job per input.
// Template is a submit request whose payload is the pickled function alone; InputsPath
// is a file of length-prefixed (8-byte big-endian) pickles of (args, kwargs).
type MapRequest struct {
	Template      SubmitRequest `json:"template"`
	InputsPath    string        `json:"inputs_path,omitempty"`
	MaxConcurrent int           `json:"max_concurrent,omitempty"`
	Retries       int           `json:"retries,omitempty"`
	FailFast      bool          `json:"fail_fast,omitempty"`
	// CancelRunningOnFail, with FailFast, cancels the children already running too
	// (otherwise they finish; the ones not started are cancelled).
	CancelRunningOnFail bool              `json:"cancel_running_on_fail,omitempty"`
	Name                string            `json:"name,omitempty"`
	Tags                map[string]string `json:"tags,omitempty"`
}

// MapResponse names the batch at once; submission goes on in the server.
type MapResponse struct {
	GroupID string `json:"group_id"`
	// Store is where the batch is (the SDK's handle reads it there, whatever profile
	// the call's project/cluster chose).
	Store string `json:"store"`
	// Running, in a recorded event only: every input runs without this engine (a unit
	// started, the second recorded event); before it, the batch needs the engine.
	Running bool `json:"running,omitempty"`
}

// BatchRequest (batch) reads a batch; with Status, every child's status too.
type BatchRequest struct {
	GroupID string `json:"group_id"`
	Store   string `json:"store,omitempty"`
	Status  bool   `json:"status"`
	// Config, as in JobRequest: attach_batch(group_id, project=, cluster=).
	Config map[string]string `json:"config,omitempty"`
}

// Batch is a batch's manifest with the children submitted so far and, when asked for,
// their statuses.
type Batch struct {
	GroupID            string            `json:"group_id"`
	Name               string            `json:"name,omitempty"`
	Tags               map[string]string `json:"tags"`
	FuncName           string            `json:"func_name"`
	Accelerator        string            `json:"accelerator"`
	Backend            string            `json:"backend"`
	Store              string            `json:"store"`
	CreatedAt          string            `json:"created_at"`
	TotalExpected      int               `json:"total_expected"`
	MaxConcurrent      int               `json:"max_concurrent"`
	Retries            int               `json:"retries"`
	FailFast           bool              `json:"fail_fast"`
	SubmissionComplete bool              `json:"submission_complete"`
	Stopped            string            `json:"stopped,omitempty"`
	Settled            bool              `json:"settled,omitempty"`
	Children           []BatchChild      `json:"children"`
	Statuses           []ChildStatus     `json:"statuses"`
}

// BatchChild is one input of a batch: its job is the last of its attempts.
type BatchChild struct {
	Index           int      `json:"index"`
	JobID           string   `json:"job_id,omitempty"`
	Attempts        []string `json:"attempts,omitempty"`
	SubmissionError string   `json:"submission_error,omitempty"`
}

// ChildStatus is one input's current state: its job's handle and status, or the error
// that kept it from being submitted. It is also the data of a child event.
type ChildStatus struct {
	Index int `json:"index"`
	// JobID is the child's job, also once its handle is gone (collected and cleaned up:
	// NOT_FOUND, as the API says).
	JobID  string  `json:"job_id,omitempty"`
	Handle *Handle `json:"handle,omitempty"`
	Status string  `json:"status,omitempty"`
	Reason string  `json:"reason,omitempty"`
	Error  string  `json:"submission_error,omitempty"`
	// Result is the child's result, value inline, when batch_watch was asked for values
	// (BatchWatchRequest.InlineMax) and the child's value is at most that many bytes.
	Result *Result `json:"result,omitempty"`
}

// GroupRequest names a batch (batch_watch, batch_cancel). batch_watch answers {} once
// every input is accounted for, after one child event per input; batch_cancel stops
// submission and cancels the unfinished children.
type GroupRequest struct {
	GroupID string `json:"group_id"`
	Store   string `json:"store,omitempty"`
}

// BatchWatchRequest (batch_watch) is a GroupRequest that may ask for values: with
// InlineMax > 0, a child event carries the child's result (Result) when its value is at
// most InlineMax bytes, read as the child ends, so that results() need not read it
// again (results_many) at the batch's end.
type BatchWatchRequest struct {
	GroupRequest
	InlineMax int `json:"inline_max,omitempty"`
	// Batched asks for one EventChildren per round of the watch instead of an
	// EventChild per input: a thousand-input map's reports in a few dozen messages.
	Batched bool `json:"batched,omitempty"`
}

// Children is EventChildren's data: the inputs a round of batch_watch found ended.
type Children struct {
	Children []ChildStatus `json:"children"`
}

// BatchCleanupRequest (batch_cleanup) cleans up every child; with GCS the manifest goes
// too.
type BatchCleanupRequest struct {
	GroupRequest
	K8s bool `json:"k8s"`
	GCS bool `json:"gcs"`
	// UnlessStarted leaves a batch whose unit started (its local workers were let run,
	// its Indexed Job exists) as it is and says so (BatchCleanupResponse.Started): the
	// SDK asks this way when its engine died during a map before saying it started.
	UnlessStarted bool `json:"unless_started,omitempty"`
}

// BatchCleanupResponse says whether batch_cleanup with unless_started found the batch
// started (then nothing was removed).
type BatchCleanupResponse struct {
	Started bool `json:"started,omitempty"`
}

// DataHashRequest (data_hash) hashes a local path as Data.content_hash() does.
type DataHashRequest struct {
	Path string `json:"path"`
}

// DataHashResponse is the content hash.
type DataHashResponse struct {
	Hash string `json:"hash"`
}

// ListRequest (list) lists the jobs of a store (default: the configured one), newest
// first; the response is a list of ListedJob.
type ListRequest struct {
	Store string `json:"store,omitempty"`
	// Config are per-call configuration values (project, zone, cluster, namespace), by
	// configuration key: list_jobs(project=, zone=, cluster=, namespace=).
	Config map[string]string `json:"config,omitempty"`
}

// ListedJob is one row of list.
type ListedJob struct {
	Handle *Handle `json:"handle"`
	Status string  `json:"status"`
	Reason string  `json:"reason,omitempty"`
}
