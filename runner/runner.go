// Package runner is what runs on the worker (`kinetic runner`): it fetches the job's
// spec, payload and working directory from the store, verifies their SHA-256,
// materialises the tree, applies the captured environment and KINETIC_OUTPUT_DIR, runs
// the call (the embedded Python bootstrap, or a command), mirrors the output into the
// store, and uploads the result envelope. Every failure names the phase it happened in.
package runner

import (
	"bytes"
	"cmp"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kinetic-run/kinetic/internal/calltrace"
	"github.com/kinetic-run/kinetic/internal/mountns"
	"github.com/kinetic-run/kinetic/internal/seconds"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/jobview"
	"github.com/kinetic-run/kinetic/pack"
	"github.com/kinetic-run/kinetic/store"
)

//go:embed bootstrap.py
var bootstrap []byte

// Options say which job to run and where.
type Options struct {
	StoreURL string
	// Store, if set, is StoreURL already open (a worker that runs many jobs opens it
	// once); Run does not close it.
	Store *store.Store
	JobID string
	// Workspace is a private directory for this job (created if missing).
	Workspace string
	// Host is this worker's index in a multi-host job ("0" otherwise).
	Host string
	// Hosts is the number of hosts of a multi-host job (0 or 1 otherwise): the leader
	// (host 0) ends the job only once every other host has ended (waitHosts).
	Hosts int
	// Stdout receives the job's output as well as the store (e.g. for kubectl logs).
	Stdout io.Writer
	// WarmDir, if set, turns on warm workers for Python calls: fork servers, one per
	// interpreter, keep their sockets and locks there and hand each call a fresh forked
	// child instead of a cold interpreter (docs/warm-workers.md). "" (the default, and
	// what a pod's runner uses, and the local backend's with the setting warm=false)
	// starts every call cold.
	WarmDir string
	// WarmIdle is how long a warm worker server started for this job waits without work
	// before it exits (0 means DefaultWarmIdle).
	WarmIdle time.Duration
	// MinimalEnv gives the call only this machine's essentials of the runner's own
	// environment (LocalEnvKept: PATH, HOME, the locale, TMPDIR, what the interpreter
	// reads at start, Kinetic's own KINETIC_*), then the captured variables and what the
	// runner sets: a job on this machine sees what a pod would (the local backend sets
	// it; a pod's runner passes the pod's environment whole).
	MinimalEnv bool
	// Python, if set, is the interpreter Python jobs run with (the setting python),
	// instead of the one the job recorded (the SDK's) or python3.
	Python string
	// EnvDir, if set, is where environments for jobs with requirements are built and
	// cached by environment key (the local backend). "" means the requirements are
	// already in the image (bundled mode) and nothing is installed.
	EnvDir string
	// TreeDir, if set, is a directory private to this worker where the shipped tree is
	// kept between jobs: a job whose tree is already there, unchanged since it was made
	// (checked file by file), starts in it without materialising it again.
	TreeDir string
	// TreeCache, if set, is a directory private to a long-lived supervisor where the
	// shipped tree of its last single job is kept for the next one, as TreeDir keeps a
	// batch's: a job that ships the same tree, which the last job left unchanged
	// (checked file by file), starts in it without materialising it again. The common
	// case is a call repeated on an unchanged project: the tree and its directory were
	// about a tenth of a local call (docs/benchmarks.md, "Tenth round"). Debug jobs and
	// containers get a tree of their own.
	TreeCache string
	// LeaseSpare, for a long-lived process that runs call after call (the local
	// backend's supervisors), keeps a spare child of the warm server leased between
	// calls: the next call hands its request to that child directly, one hop and one
	// connection fewer (warmserver.py, "A lease").
	LeaseSpare bool
	// InPlaceData lets local Data with fuse=True be used where it lies (the local backend,
	// on the machine that submitted it).
	InPlaceData bool
	// FusePaths maps the number (job.DataRef.SlotAt) of each Data that is mounted in this
	// pod with GCS FUSE to where it is: the runner reads it there and downloads nothing.
	FusePaths map[string]string
	// PrivateMounts shows volumes to the job in a mount namespace of its own rather
	// than linking them at their paths: the local backend, where the paths are this
	// machine's (internal/mountns). Such a job starts cold.
	PrivateMounts bool
	// DebugPort is the port debugpy listens on (127.0.0.1) in a debug job; 0 means any
	// free port. The port it got is recorded in debug.json (docs/debug.md).
	DebugPort int
	// Grace is how long a cancelled call gets between SIGTERM and SIGKILL (0 means
	// DefaultGrace). The local backend passes its own.
	Grace time.Duration
	// Session starts the call in a session of its own (not only a process group), so
	// nothing it starts shares the runner's: a warm pod's runner (warmpod.go).
	Session bool
	// BeforeResult, if set, is called once the call has ended (its process group
	// killed) and before the leader uploads the result envelope: a warm pod's runner
	// says there that it will take another job, so whoever sees the result finds that.
	BeforeResult func()
}

// DefaultGrace is the grace period of a cancelled call when Options.Grace is 0.
const DefaultGrace = 10 * time.Second

// grace is o.Grace or its default.
func (o Options) grace() time.Duration {
	if o.Grace > 0 {
		return o.Grace
	}
	return DefaultGrace
}

// phaseError is a failure of the runner itself in a given phase.
type phaseError struct {
	phase string
	err   error
}

func (e *phaseError) Error() string { return e.phase + ": " + e.err.Error() }
func (e *phaseError) Unwrap() error { return e.err }

func inPhase(phase string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
		err = fmt.Errorf("%w%s", err, fdLimitSaid())
	}
	return &phaseError{phase, err}
}

// Run runs the job and uploads its envelope. It returns the envelope it uploaded; an
// error means the envelope itself could not be written.
func Run(ctx context.Context, o Options) (*job.Envelope, error) {
	o, err := o.normalized()
	if err != nil {
		return nil, err
	}
	st, closeStore, err := o.openStore(ctx)
	if err != nil {
		return nil, err
	}
	defer closeStore()
	rctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	guard := newDiskGuard(o.Workspace, stop)
	defer func() { <-guard.release() }()
	sink := o.logSink(ctx, st, guard)
	// Neither writer ever fails: the call's output pipe is always drained.
	out := io.MultiWriter(sink, &lenientWriter{w: o.Stdout, what: "the job's output log", guard: guard})
	started := time.Now().UTC()
	var called time.Time
	env, value, runErr := runAllHosts(rctx, st, o, out, &called)
	if runErr != nil {
		env, runErr = failed(rctx, o, out, runErr)
	}
	env.StartedAt, env.CalledAt, env.FinishedAt = started, called, time.Now().UTC()
	guard.release() // the job's code has stopped: its space is for the final writes
	sinkErr := sink.Close()
	if value != nil {
		defer value.Close()
	}
	if errors.Is(runErr, errJobEnded) || runErr != nil && ctx.Err() != nil && finalStatus(st, o.JobID) {
		// Stopped because the job was already judged (cancelled, or failed by another
		// host of a multi-host job): that verdict stands, and an envelope saying
		// "stopped" would only hide it from result().
		return env, sinkErr
	}
	calltrace.Mark("run.logs.closed", o.JobID)
	if o.BeforeResult != nil {
		o.BeforeResult()
	}
	if err := writeResult(ctx, st, o, guard, env, value); err != nil {
		return env, err
	}
	var full *errNoSpace
	if sinkErr != nil && !errors.As(runErr, &full) { // a full disk is already the job's failure
		return env, &LogsError{sinkErr}
	}
	return env, nil
}

// normalized is o with its defaults, checked.
func (o Options) normalized() (Options, error) {
	if o.Host == "" {
		o.Host = "0"
	}
	if n, err := strconv.Atoi(o.Host); err != nil || n < 0 {
		return o, fmt.Errorf("runner: host index %q is not a non-negative number", o.Host)
	}
	if o.Stdout == nil {
		o.Stdout = io.Discard
	}
	return o, nil
}

// openStore is o.Store, or the store at o.StoreURL opened (and closed by closeStore).
func (o Options) openStore(ctx context.Context) (st *store.Store, closeStore func(), err error) {
	if o.Store != nil {
		return o.Store, func() {}, nil
	}
	if st, err = store.Open(ctx, o.StoreURL); err != nil {
		return nil, nil, err
	}
	return st, func() { st.Close() }, nil
}

// leader says whether this is host 0: the job (the leader of a multi-host job, or its
// only host). The other hosts of a multi-host job keep their output and failures under
// their own keys, so that only the leader's value is the job's result.
func (o Options) leader() bool { return o.Host == "0" }

// logSink is where the job's output goes in the store: its log, or a worker host's.
func (o Options) logSink(ctx context.Context, st *store.Store, guard *diskGuard) *LogSink {
	sink := NewLogSink(context.WithoutCancel(ctx), st, o.JobID, 0)
	if !o.leader() {
		sink = newLogSink(context.WithoutCancel(ctx), st, func(seq int) string { return store.HostLogChunkKey(o.JobID, o.Host, seq) }, 0)
	}
	sink.onError = func(err error, lost int) { guard.report("the job's logs (in the store "+st.URL()+")", err, lost) }
	sink.writeFinal = guard.writeFinal
	return sink
}

// runAllHosts is run; for the leader of a multi-host job whose call succeeded, the job
// ends when all its hosts have (its value is the job's).
func runAllHosts(ctx context.Context, st *store.Store, o Options, out io.Writer, called *time.Time) (*job.Envelope, *callValue, error) {
	env, value, runErr := run(ctx, st, o, out, called)
	calltrace.Mark("run.returned", o.JobID)
	if runErr != nil || !o.leader() || !env.Success || o.Hosts <= 1 {
		return env, value, runErr
	}
	if runErr = waitHosts(ctx, st, o, out); runErr != nil && value != nil {
		value.Close()
		value = nil
	}
	return env, value, runErr
}

// failed is the envelope of a job that failed with runErr outside its call, and the
// error as said: in the phase it happened in, in the user's words when ctx stopped it.
func failed(ctx context.Context, o Options, out io.Writer, runErr error) (*job.Envelope, error) {
	var pe *phaseError
	phase := job.PhaseSystem
	if errors.As(runErr, &pe) {
		phase = pe.phase
	}
	var to *errTimedOut
	if ctx.Err() != nil && !errors.As(runErr, &to) && !errors.Is(runErr, errJobEnded) {
		// Stopped mid-step (a download cut short, say): Go's words for that are
		// not the user's; say what stopped it.
		runErr = inPhase(phase, stopped(ctx))
	}
	if !errors.Is(runErr, errJobEnded) { // already said
		fmt.Fprintf(out, "kinetic: %v\n", runErr)
	}
	env := &job.Envelope{Success: false, Phase: phase, Host: o.Host, ExcType: "kinetic.RunnerError", ExcMessage: runErr.Error()}
	if errors.As(runErr, &to) {
		env.ExcType, env.ExcMessage = job.TimeoutExcType, to.Error()
	}
	return env, runErr
}

// writeResult stores the value (if kept) and then the envelope: the leader's as the
// job's. A worker's envelope says it ended: its failure fails the job at once (the
// backend reads it), even while the leader still runs; its success lets the leader end
// the job (waitHosts). Only a failure's value (the exception) is kept: the job's value
// is the leader's.
func writeResult(ctx context.Context, st *store.Store, o Options, guard *diskGuard, env *job.Envelope, value *callValue) error {
	wctx := context.WithoutCancel(ctx)
	valueKey, envKey, keepValue := store.ResultKey(o.JobID), store.EnvelopeKey(o.JobID), value != nil
	if !o.leader() {
		valueKey, envKey = store.HostResultKey(o.JobID, o.Host), store.HostEnvelopeKey(o.JobID, o.Host)
		keepValue = value != nil && !env.Success
	}
	if keepValue {
		if err := guard.writeFinal(func() error { return value.store(wctx, st, valueKey) }); err != nil {
			return err
		}
	}
	if err := guard.writeFinal(func() error { return st.Put(wctx, envKey, env.Encode()) }); err != nil {
		return err
	}
	if o.leader() {
		calltrace.Mark("run.result.written", o.JobID)
	}
	return nil
}

// LogsError is Run's error when only the job's logs could not all be stored: the
// envelope (and the value) were. A job whose envelope says it succeeded has succeeded:
// readers take that envelope as its end as soon as it is there (docs/local-backend.md,
// "A job's end").
type LogsError struct{ Err error }

func (e *LogsError) Error() string { return "logs: " + e.Err.Error() }
func (e *LogsError) Unwrap() error { return e.Err }

// run does the work; it returns the envelope and the result file to upload, or an error
// in a phase before the call could produce an envelope.
// called is set when the function or command starts.
func run(ctx context.Context, st *store.Store, o Options, out io.Writer, called *time.Time) (*job.Envelope, *callValue, error) {
	r := &jobRun{st: st, o: o, out: out}
	defer r.cleanup()
	for _, s := range prepareSteps {
		if err := s.run(r, ctx); err != nil {
			return nil, nil, err
		}
	}
	if r.spec.Kind == job.KindCommand {
		return r.callCommand(ctx, called)
	}
	for _, s := range pythonSteps {
		if err := s.run(r, ctx); err != nil {
			return nil, nil, err
		}
	}
	return r.callPython(ctx, called)
}

// jobRun is one run: its steps, in prepareSteps' then pythonSteps' order, share what
// they made.
type jobRun struct {
	st  *store.Store
	o   Options
	out io.Writer

	spec        *job.Spec
	work        string // the shipped root
	outDir      string // the call's output directory
	payloadPath string
	argsPath    string
	dataMap     string
	cwd         string
	environ     []string
	mounts      []mountns.Mount
	py          string   // the interpreter
	stops       []func() // run when run returns
}

// runStep is one named step of run.
type runStep struct {
	name string
	run  func(*jobRun, context.Context) error
}

// prepareSteps are the steps of every job before its call, in order.
var prepareSteps = []runStep{
	{"spec", (*jobRun).fetchSpec},
	{"directories", (*jobRun).makeDirs},
	{"payload", (*jobRun).payload},
	{"tree", (*jobRun).tree},
	{"arguments", (*jobRun).args},
	{"working directory", (*jobRun).workingDir},
	{"environment", (*jobRun).env},
}

// pythonSteps are the further steps of a Python call (not a command), in order.
var pythonSteps = []runStep{
	{"entry", (*jobRun).entry},
	{"data", (*jobRun).data},
	{"interpreter", (*jobRun).interpreter},
	{"install at start", (*jobRun).installAtStart},
	{"debugger", (*jobRun).debugger},
}

func (r *jobRun) cleanup() {
	for _, stop := range r.stops {
		stop()
	}
}

// fetchSpec downloads the job's spec.
func (r *jobRun) fetchSpec(ctx context.Context) error {
	raw, err := r.st.Get(ctx, store.SpecKey(r.o.JobID))
	if err != nil {
		return inPhase(job.PhaseDownload, err)
	}
	if r.spec, err = job.DecodeSpec(raw); err != nil {
		return inPhase(job.PhaseDownload, damagedJSON(r.o.JobID, "spec.json", raw, err))
	}
	return nil
}

// makeDirs makes the shipped root (unless the tree lives in TreeDir or TreeCache) and
// the output directory.
func (r *jobRun) makeDirs(context.Context) error {
	r.work = filepath.Join(r.o.Workspace, "root")
	r.outDir = filepath.Join(r.o.Workspace, "out")
	dirs := []string{r.work, r.outDir}
	if r.spec.Debug != nil {
		r.o.TreeCache = "" // a debugger maps the job's own root
	}
	if (r.o.TreeDir != "" || r.o.TreeCache != "") && r.spec.Workdir != nil && r.spec.Workdir.Format == job.FormatManifest {
		dirs = dirs[1:] // the tree lives in TreeDir or TreeCache
	}
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return inPhase(job.PhaseDownload, err)
		}
	}
	return nil
}

// payload downloads and verifies a pickle's payload, or writes an entry's.
func (r *jobRun) payload(ctx context.Context) error {
	var err error
	switch r.spec.Kind {
	case job.KindPickle:
		if r.payloadPath, err = fetchPayload(ctx, r.st, r.spec.Payload, r.o); err != nil {
			return err
		}
	case job.KindEntry:
		b, _ := json.Marshal(r.spec.Entry)
		r.payloadPath = filepath.Join(r.o.Workspace, "entry.json")
		if err := os.WriteFile(r.payloadPath, b, 0o600); err != nil {
			return inPhase(job.PhaseDownload, err)
		}
	}
	calltrace.Mark("run.payload", r.o.JobID)
	return nil
}

// tree extracts the shipped tree.
func (r *jobRun) tree(ctx context.Context) error {
	var err error
	if r.work, err = extractTree(ctx, r.st, r.spec.Workdir, r.o, r.work); err != nil {
		return err
	}
	calltrace.Mark("run.tree", r.o.JobID)
	return nil
}

// args writes the call's arguments, inline in the spec or fetched, to args.pkl.
func (r *jobRun) args(ctx context.Context) error {
	b := r.spec.ArgsInline
	if b == nil && r.spec.Args == nil {
		return nil
	}
	if b == nil {
		var err error
		if b, err = r.st.GetVerified(ctx, r.spec.Args.Key, r.spec.Args.SHA256); err != nil {
			return inPhase(job.PhaseVerify, err)
		}
	}
	r.argsPath = filepath.Join(r.o.Workspace, "args.pkl")
	if err := os.WriteFile(r.argsPath, b, 0o600); err != nil {
		return inPhase(job.PhaseDownload, err)
	}
	return nil
}

// workingDir makes the call's working directory, inside the shipped root.
func (r *jobRun) workingDir(context.Context) error {
	var err error
	if r.cwd, err = within(r.work, r.spec.Cwd); err != nil {
		return inPhase(job.PhasePlan, err)
	}
	if err := os.MkdirAll(r.cwd, 0o755); err != nil {
		return inPhase(job.PhasePlan, err)
	}
	return nil
}

// env builds the call's environment.
func (r *jobRun) env(ctx context.Context) error {
	var err error
	if r.environ, err = buildEnv(ctx, r.st, r.spec, r.o); err != nil {
		return inPhase(job.PhaseEnv, err)
	}
	return nil
}

// entry rewrites an entry's payload with its file inside the shipped root.
func (r *jobRun) entry(context.Context) error {
	if r.spec.Kind != job.KindEntry {
		return nil
	}
	file, err := within(r.work, r.spec.Entry.File)
	if err != nil {
		return inPhase(job.PhasePlan, err)
	}
	b, _ := json.Marshal(job.Entry{File: file, Func: r.spec.Entry.Func, Args: r.spec.Entry.Args, Kwargs: r.spec.Entry.Kwargs})
	if err := os.WriteFile(r.payloadPath, b, 0o600); err != nil {
		return inPhase(job.PhaseDownload, err)
	}
	return nil
}

// data materialises the call's Data.
func (r *jobRun) data(ctx context.Context) error {
	if len(r.spec.Data) == 0 {
		return nil
	}
	var err error
	if r.dataMap, r.mounts, err = materializeData(ctx, r.st, r.spec, r.o, r.out); err != nil {
		return inPhase(job.PhaseData, err)
	}
	return nil
}

// interpreter is the Python environment of the call (built or reused for its
// requirements).
func (r *jobRun) interpreter(ctx context.Context) error {
	var err error
	if r.py, err = environment(ctx, r.spec, r.o, r.out); err != nil {
		return inPhase(job.PhaseInstall, err)
	}
	return nil
}

// installAtStart installs the requirements of a job on a prebuilt image.
func (r *jobRun) installAtStart(ctx context.Context) error {
	if !r.spec.InstallAtStart || len(r.spec.Requirements) == 0 {
		return nil
	}
	var err error
	if r.environ, err = installAtStart(ctx, r.spec, r.py, r.o, r.environ, r.out); err != nil {
		return inPhase(job.PhaseInstall, err)
	}
	return nil
}

// debugger starts a debug job's session (watched until run returns), or has a worker
// host wait for the leader's debugger.
func (r *jobRun) debugger(ctx context.Context) error {
	if dbg := newDebugSession(r.spec, r.o, r.outDir); dbg != nil {
		r.environ = append(r.environ, dbg.env...)
		wctx, stop := context.WithCancel(ctx)
		r.stops = append(r.stops, stop)
		go dbg.watch(wctx, r.st, r.spec, r.o, r.work, r.cwd, r.out)
		return nil
	}
	if r.spec.Debug != nil && r.o.Host != "0" {
		return waitLeaderDebugger(ctx, r.st, r.spec, r.o, r.out)
	}
	return nil
}

// callCommand runs a command job, within its time limit.
func (r *jobRun) callCommand(ctx context.Context, called *time.Time) (*job.Envelope, *callValue, error) {
	*called = time.Now().UTC()
	cctx, cancel := callLimit(ctx, r.spec)
	defer cancel()
	return overLimit(cctx)(runCommand(cctx, r.spec, r.cwd, r.environ, r.out, r.o.Host, r.o.grace(), r.o.Session))
}

// callPython runs the Python call, within its time limit.
func (r *jobRun) callPython(ctx context.Context, called *time.Time) (*job.Envelope, *callValue, error) {
	*called = time.Now().UTC()
	calltrace.Mark("run.call", r.o.JobID)
	cctx, cancel := callLimit(ctx, r.spec)
	defer cancel()
	rest := []string{r.payloadPath, r.outDir, r.work, r.cwd, r.argsPath, r.dataMap}
	return overLimit(cctx)(runPython(cctx, r.spec, r.py, rest, r.cwd, r.outDir, r.o, r.environ, r.out, r.mounts))
}

// extractTree puts the shipped tree w (nil: none) at work, or in o.TreeDir when the
// worker keeps one (reused while unchanged), and returns where it is.
func extractTree(ctx context.Context, st *store.Store, w *job.BlobRef, o Options, work string) (string, error) {
	switch {
	case w == nil:
		return work, nil
	case w.Format == job.FormatManifest && (o.TreeDir != "" || o.TreeCache != ""):
		ref := pack.ManifestRef{Key: w.Key, SHA256: w.SHA256, Size: w.Size}
		dir, err := reuseTree(ctx, st, ref, cmp.Or(o.TreeDir, o.TreeCache))
		if err != nil {
			return "", inPhase(job.PhaseExtract, err)
		}
		return dir, nil
	case w.Format == job.FormatManifest:
		ref := pack.ManifestRef{Key: w.Key, SHA256: w.SHA256, Size: w.Size}
		if err := pack.Materialize(ctx, st, ref, work); err != nil {
			return "", inPhase(job.PhaseExtract, err)
		}
		return work, nil
	}
	b, err := st.GetVerified(ctx, w.Key, w.SHA256)
	if err != nil {
		return "", inPhase(job.PhaseVerify, err)
	}
	if err := pack.Extract(bytes.NewReader(b), work); err != nil {
		return "", inPhase(job.PhaseExtract, err)
	}
	return work, nil
}

// errTimedOut is why a call was stopped at its time limit (timeout= on run).
type errTimedOut struct{ limit time.Duration }

func (e *errTimedOut) Error() string {
	return fmt.Sprintf("the call ran longer than its time limit of %s (timeout=%d) and was stopped", e.limit, int(e.limit/time.Second))
}

// callLimit is ctx ending at the spec's time limit, if it has one, with errTimedOut as
// its cause: the call then gets SIGTERM, and SIGKILL after the grace period.
func callLimit(ctx context.Context, spec *job.Spec) (context.Context, context.CancelFunc) {
	if spec.TimeoutSeconds <= 0 {
		return context.WithCancel(ctx)
	}
	d, ok := seconds.Limit(float64(spec.TimeoutSeconds))
	if !ok { // above a century: no limit, never a wrapped-around negative
		return context.WithCancel(ctx)
	}
	return context.WithTimeoutCause(ctx, d, &errTimedOut{limit: d})
}

// overLimit makes a call stopped at its time limit fail with errTimedOut, whatever it
// reported while being stopped (a handler of SIGTERM may still return a value).
func overLimit(ctx context.Context) func(*job.Envelope, *callValue, error) (*job.Envelope, *callValue, error) {
	return func(env *job.Envelope, value *callValue, err error) (*job.Envelope, *callValue, error) {
		var to *errTimedOut
		if ctx.Err() == nil || !errors.As(context.Cause(ctx), &to) {
			return env, value, err
		}
		if value != nil {
			value.Close()
		}
		return nil, nil, inPhase(job.PhaseCall, to)
	}
}

// within joins rel onto root and refuses results outside root.
func within(root, rel string) (string, error) {
	if filepath.IsAbs(rel) {
		return "", fmt.Errorf("path %q must be relative to the shipped root", rel)
	}
	p := filepath.Join(root, rel)
	if p != root && !strings.HasPrefix(p, root+string(filepath.Separator)) {
		return "", fmt.Errorf("path %q leaves the shipped root", rel)
	}
	return p, nil
}

// damagedJSON is err, the failure to decode object file of job id, as the damaged
// object it is when raw is not JSON of the right shape (job.Damaged: in plain words,
// never the decoder's).
func damagedJSON(id, file string, raw []byte, err error) error {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	if len(raw) == 0 || errors.As(err, &syntax) || errors.As(err, &typ) {
		return job.Damaged(id, file, raw, err)
	}
	return err
}

func buildEnv(ctx context.Context, st *store.Store, spec *job.Spec, o Options) ([]string, error) {
	var captured map[string]string
	if len(spec.EnvNames) > 0 {
		b, err := st.Get(ctx, store.EnvKey(o.JobID))
		if err != nil {
			return nil, fmt.Errorf("captured environment: %w", err)
		}
		if err := json.Unmarshal(b, &captured); err != nil {
			return nil, damagedJSON(o.JobID, "env.json", b, err)
		}
	}
	set := map[string]string{"KINETIC_JOB_ID": o.JobID, "KINETIC_HOST_INDEX": o.Host}
	if spec.OutputDir != "" {
		set["KINETIC_OUTPUT_DIR"] = spec.OutputDir
		if strings.HasPrefix(spec.OutputDir, "/") {
			if err := os.MkdirAll(spec.OutputDir, 0o700); err != nil {
				return nil, fmt.Errorf("KINETIC_OUTPUT_DIR %s: %w", spec.OutputDir, err)
			}
		}
	}
	return callEnv(captured, set, o.MinimalEnv), nil
}

// callEnv is the environment of a call: this process's, the captured variables over it
// (they override the image's), then set, with PYTHONUNBUFFERED, and KERAS_BACKEND=jax
// when none of those names a Keras backend (the runtime layer's Keras runs on its JAX;
// a pod has it from its spec, a local job from here); sorted.
func callEnv(captured, set map[string]string, minimal bool) []string {
	env := map[string]string{}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok && (!minimal || LocalEnvKept(k)) {
			env[k] = v
		}
	}
	for k, v := range captured {
		env[k] = v
	}
	if _, ok := env["KERAS_BACKEND"]; !ok {
		env["KERAS_BACKEND"] = "jax"
	}
	for k, v := range set {
		env[k] = v
	}
	env["PYTHONUNBUFFERED"] = "1"
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// python returns the interpreter the runner uses for spec: the Python option, else the
// interpreter the job recorded if this machine has it, else python3.
func (o Options) python(spec *job.Spec) string {
	if o.Python != "" {
		return o.Python
	}
	if spec.Python != "" {
		if _, err := os.Stat(spec.Python); err == nil {
			return spec.Python
		}
	}
	return "python3"
}

// runPython runs the bootstrap with py; rest is PAYLOAD OUT_DIR ROOT CWD ARGS DATA_MAP.
func runPython(ctx context.Context, spec *job.Spec, py string, rest []string, cwd, outDir string, o Options, environ []string, out io.Writer, mounts []mountns.Mount) (*job.Envelope, *callValue, error) {
	bs, err := writeBootstrap(o)
	if err != nil {
		return nil, nil, inPhase(job.PhasePlan, err)
	}
	c := &pythonCall{spec: spec, py: py, argv: append([]string{bs, spec.Kind}, rest...), cwd: cwd, outDir: outDir, o: o, environ: environ, out: out, mounts: mounts, cold: true}
	if err := c.start(ctx); err != nil {
		return nil, nil, err
	}
	raw, err := c.envelopeBytes()
	if err != nil {
		return nil, nil, c.noResult(ctx)
	}
	return c.result(raw)
}

// pythonCall is one run of the bootstrap: warm (a child of the warm server) or cold.
type pythonCall struct {
	spec    *job.Spec
	py      string
	argv    []string
	cwd     string
	outDir  string
	o       Options
	environ []string
	out     io.Writer
	mounts  []mountns.Mount

	cold   bool
	got    *handed // what a warm child handed back
	runErr error   // how the process ended
}

// start runs the call, warm if it can. Debug jobs start cold: debugpy starts threads
// and an adapter process, which a child forked from the warm server (imports done,
// threads gone) is no place for. So do jobs with volumes: their mount namespace is
// made when the process starts. The error is one of the job's volumes, not mounted.
func (c *pythonCall) start(ctx context.Context) error {
	o := c.o
	if warmEnabled(o) && c.spec.Debug == nil && len(c.mounts) == 0 {
		c.got, c.runErr = runWarm(ctx, o.WarmDir, o.warmIdle(), c.py, c.argv, c.cwd, c.environ, c.out, o.grace(), o.LeaseSpare)
		if c.cold = errors.Is(c.runErr, errNoWarm); c.cold {
			debugf(c.out, "starting Python cold: %v", c.runErr)
		}
	}
	if !c.cold {
		return nil
	}
	cmd := exec.CommandContext(ctx, c.py, c.argv...)
	cmd.Dir = c.cwd
	cmd.Env = c.environ
	cmd.Stdout, cmd.Stderr = c.out, c.out
	var wrap func(*exec.Cmd) error
	if o.Session {
		wrap = ownSession
	}
	if len(c.mounts) == 0 {
		c.runErr = runGroup(cmd, o.grace(), wrap)
		return nil
	}
	var werr error
	wrap = func(cmd *exec.Cmd) error {
		werr = privateMounts(cmd, c.mounts, o.Workspace)
		return werr
	}
	c.runErr = runGroup(cmd, o.grace(), wrap)
	if werr != nil {
		return inPhase(job.PhaseData, werr)
	}
	return nil
}

// envelopeBytes is the envelope the call made: handed back with a warm child's exit
// status (no file), else the file it wrote.
func (c *pythonCall) envelopeBytes() ([]byte, error) {
	if c.got != nil {
		return c.got.envelope, nil
	}
	return os.ReadFile(filepath.Join(c.outDir, "envelope.json"))
}

// noResult says why the interpreter died before it could report: a crash, a signal, or
// no python.
func (c *pythonCall) noResult(ctx context.Context) error {
	var ee *exec.ExitError
	var we *waitError
	switch {
	case ctx.Err() != nil:
		return inPhase(job.PhaseCall, stopped(ctx))
	case errors.As(c.runErr, &ee) && len(c.mounts) > 0 && ee.ExitCode() == 126:
		return inPhase(job.PhaseData, errors.New("the job's volumes could not be mounted (the output says why)"))
	case errors.As(c.runErr, &ee):
		return inPhase(job.PhaseCall, fmt.Errorf("python exited without a result (%s)%s", exitText(ee), fdLimitHint()))
	case errors.As(c.runErr, &we):
		return inPhase(job.PhaseCall, fmt.Errorf("python exited without a result (%s)%s", waitText(we.ws), fdLimitHint()))
	case !c.cold && c.runErr != nil:
		return inPhase(job.PhaseCall, fmt.Errorf("python exited without a result (%w)%s", c.runErr, fdLimitHint()))
	case c.runErr != nil:
		return inPhase(job.PhasePlan, fmt.Errorf("cannot start %s: %w (install Python 3, or set the interpreter with KINETIC_PYTHON or `kinetic profile` key python)", c.py, c.runErr))
	}
	return inPhase(job.PhaseCall, errors.New("python exited without a result"+fdLimitHint()))
}

// result reads the envelope raw and opens the call's value.
func (c *pythonCall) result(raw []byte) (*job.Envelope, *callValue, error) {
	var env job.Envelope
	if err := json.Unmarshal(raw, &env); err != nil {
		return nil, nil, inPhase(job.PhaseResult, fmt.Errorf("bootstrap envelope: %w", err))
	}
	if env.ExcType == noCloudpickleType {
		return nil, nil, inPhase(job.PhaseUnpickle, noCloudpickle(c.spec, c.py))
	}
	var full struct {
		Size int64 `json:"no_space_for_value"`
	}
	if json.Unmarshal(raw, &full) == nil && full.Size > 0 {
		return nil, nil, inPhase(job.PhaseResult, noSpaceForValue(c.o, c.outDir, full.Size))
	}
	env.Host = c.o.Host
	value, err := c.value(&env)
	if err != nil {
		return nil, nil, err
	}
	return &env, value, nil
}

// value is the call's value: none, handed back by a warm child, or its result file.
func (c *pythonCall) value(env *job.Envelope) (*callValue, error) {
	switch {
	case !env.HasValue:
		return nil, nil
	case c.got != nil && c.got.value != nil:
		return &callValue{data: c.got.value}, nil
	}
	f, err := os.Open(filepath.Join(c.outDir, "result.pkl"))
	if err != nil {
		return nil, inPhase(job.PhaseResult, err)
	}
	return &callValue{f: f}, nil
}

// callValue is a call's pickled value (or exception): the file the call wrote in its
// output directory, or the bytes a warm child handed back with its exit status.
type callValue struct {
	f    *os.File
	data []byte
}

// Close releases the file, if any.
func (v *callValue) Close() error {
	if v.f != nil {
		return v.f.Close()
	}
	return nil
}

// store writes the value to the store as key (a file is moved there on a file store).
func (v *callValue) store(ctx context.Context, st *store.Store, key string) error {
	if v.f == nil {
		return st.Put(ctx, key, v.data)
	}
	if _, err := v.f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	return st.PutFile(ctx, key, v.f)
}

func runCommand(ctx context.Context, spec *job.Spec, cwd string, environ []string, out io.Writer, host string, grace time.Duration, session bool) (*job.Envelope, *callValue, error) {
	cmd := exec.CommandContext(ctx, spec.Command[0], spec.Command[1:]...)
	cmd.Dir = cwd
	cmd.Env = environ
	cmd.Stdout, cmd.Stderr = out, out
	var wrap func(*exec.Cmd) error
	if session {
		wrap = ownSession
	}
	err := runGroup(cmd, grace, wrap)
	code := 0
	env := &job.Envelope{Host: host}
	var ee *exec.ExitError
	switch {
	case err == nil:
		env.Success = true
	case ctx.Err() != nil:
		return nil, nil, inPhase(job.PhaseCall, stopped(ctx))
	case errors.As(err, &ee):
		code = ee.ExitCode()
		env.Phase, env.ExcType = job.PhaseCall, "kinetic.CommandError"
		env.ExcMessage = fmt.Sprintf("command %q failed: %s", strings.Join(spec.Command, " "), exitText(ee))
	default:
		return nil, nil, inPhase(job.PhasePlan, fmt.Errorf("cannot start command %q: %w", spec.Command[0], err))
	}
	env.ExitCode = &code
	return env, nil, nil
}

// privateMounts makes cmd start in a mount namespace of its own where mounts are in
// place, through this binary (internal/mountns; its main calls mountns.Main).
func privateMounts(cmd *exec.Cmd, mounts []mountns.Mount, workspace string) error {
	for _, m := range mounts {
		if err := mountns.Check(m.Target, workspace); err != nil {
			return err
		}
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	scratch, err := os.MkdirTemp(workspace, "mountns-")
	if err != nil {
		return err
	}
	if err := mountns.Command(cmd, self, mounts, scratch); err != nil {
		return fmt.Errorf("volumes: %w; run the job in a container (container=\"podman\"), or pass the Data as an argument to get its path", err)
	}
	return nil
}

// graceful makes cancellation of ctx a SIGTERM (so the user's code can save a
// checkpoint), SIGKILL only after grace, and death of the runner a SIGKILL.
// The call runs in its own process group, so signals reach whatever it started.
func graceful(cmd *exec.Cmd, grace time.Duration) {
	cmd.SysProcAttr = groupAttr()
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = grace
}

// ownSession makes cmd a session leader (its session and process group are its PID,
// so runGroup's kill of the group still reaches it).
func ownSession(cmd *exec.Cmd) error {
	cmd.SysProcAttr.Setpgid = false // setpgid after setsid fails
	cmd.SysProcAttr.Setsid = true
	return nil
}

// runGroup runs cmd and, once it ends, kills what is left of its process group: a job's
// processes end with the job.
func runGroup(cmd *exec.Cmd, grace time.Duration, wrap func(*exec.Cmd) error) error {
	graceful(cmd, grace)
	if wrap != nil {
		if err := wrap(cmd); err != nil {
			return err
		}
	}
	noteOOMCount()
	if err := cmd.Start(); err != nil {
		return err
	}
	done := watchGroup(cmd.Process.Pid)
	err := cmd.Wait()
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	done()
	return err
}

// watchGroup starts a watchdog that kills process group pgid if this process dies
// first (kill -9 of a supervisor): Pdeathsig reaches only the direct child, and what
// the job started would live on. The watchdog, a shell in its own session, waits on a
// pipe whose write end only this process holds; the kernel closes it when we die. done
// tells it the job ended normally, so it never signals a group ID that may be reused.
func watchGroup(pgid int) (done func()) {
	pr, pw, err := os.Pipe()
	if err != nil {
		return func() {}
	}
	defer pr.Close()
	w := exec.Command("/bin/sh", "-c", `read x; [ "$x" = done ] || kill -9 -"$1"`, "kinetic-watchdog", strconv.Itoa(pgid))
	w.Stdin = pr
	w.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := w.Start(); err != nil {
		pw.Close()
		return func() {}
	}
	return func() {
		pw.Write([]byte("done\n"))
		pw.Close()
		go w.Wait()
	}
}

func exitText(ee *exec.ExitError) string {
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok {
		return waitText(ws)
	}
	return fmt.Sprintf("exit code %d", ee.ExitCode())
}

func waitText(ws syscall.WaitStatus) string {
	if text, ok := oomText(ws); ok {
		return text
	}
	if ws.Signaled() {
		return "killed by signal " + ws.Signal().String()
	}
	return fmt.Sprintf("exit code %d", ws.ExitStatus())
}

// stopped explains a call ended by its context: a cancel, or a signal to the worker.
func stopped(ctx context.Context) error {
	var full *errNoSpace
	if errors.As(context.Cause(ctx), &full) {
		return full
	}
	if c := context.Cause(ctx); c != nil && !errors.Is(c, context.Canceled) {
		return fmt.Errorf("stopped: the worker %v: the job was cancelled, or its pod was deleted, evicted or preempted", c)
	}
	return errors.New("stopped: the job was cancelled")
}

// finalStatus is jobview.FinalStatus after the job's context has ended.
func finalStatus(st *store.Store, id string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return jobview.FinalStatus(ctx, st, id) != nil
}
