package local

import (
	"context"
	"errors"
	"fmt"
	"github.com/kinetic-run/kinetic/internal/calltrace"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/kinetic-run/kinetic/internal/backoff"
	"github.com/kinetic-run/kinetic/internal/filelock"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/runner"
	"github.com/kinetic-run/kinetic/store"
)

// SuperviseOptions are the arguments of `kinetic supervise`.
type SuperviseOptions struct {
	StoreURL string
	JobID    string
	StateDir string
	Slots    int
	Grace    time.Duration
	Python   PythonSettings
	// Ready, if set, is written "ready\n" and closed once the supervisor holds its lock
	// and has recorded itself.
	Ready *os.File
}

// warmDir is where warm worker servers live, or "" when calls start cold.
func (o SuperviseOptions) warmDir() string {
	if o.Python.Cold {
		return ""
	}
	return filepath.Join(o.StateDir, "warm")
}

// StartupErrorPrefix starts what a supervisor writes on its ready file instead of
// "ready" when it fails before it is ready; the error follows on the same line.
const StartupErrorPrefix = "error: "

// SayStartupError tells the spawner why the supervisor could not start, if it has not
// said it was ready yet (writing to a closed ready file does nothing).
func SayStartupError(ready *os.File, err error) {
	if ready == nil || err == nil {
		return
	}
	ready.WriteString(StartupErrorPrefix + strings.ReplaceAll(err.Error(), "\n", " ") + "\n")
	ready.Close()
}

// Supervise runs one job to completion: wait for a slot (PENDING), run the runner in its
// own process group (RUNNING), record the outcome (SUCCEEDED or FAILED). SIGTERM
// cancels: the process group gets SIGTERM, then SIGKILL after the grace period.
func Supervise(ctx context.Context, o SuperviseOptions) error {
	ctx = context.WithoutCancel(ctx) // cancellation is by signal, handled below
	st, err := store.Open(ctx, o.StoreURL)
	if err != nil {
		return err
	}
	defer st.Close()
	if !job.ValidName(o.JobID) {
		return fmt.Errorf("supervise: invalid job ID %q", o.JobID)
	}
	ws := filepath.Join(o.StateDir, "jobs", o.JobID)
	if err := os.MkdirAll(ws, 0o700); err != nil {
		return err
	}
	lockPath := filepath.Join(ws, "supervisor.lock")
	lock, err := lockFile(lockPath, true)
	if err != nil {
		return fmt.Errorf("supervise %s: %w", o.JobID, err)
	}
	defer lock.Close()
	proc := &job.LocalProcess{BootID: bootID(), SupervisorPID: os.Getpid(), LockPath: lockPath, Workspace: ws}
	if err := WriteStatus(ctx, st, o.JobID, &job.Status{State: job.Pending, Local: proc}); err != nil {
		return err
	}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	if o.Ready != nil {
		o.Ready.WriteString("ready\n")
		o.Ready.Close()
	}

	slot, err := acquireSlot(filepath.Join(o.StateDir, "slots"), o.Slots, term)
	if errors.Is(err, errCancelled) {
		return WriteStatus(ctx, st, o.JobID, &job.Status{State: job.Failed, Reason: "cancelled while pending", Local: proc})
	}
	if err != nil {
		WriteStatus(ctx, st, o.JobID, &job.Status{State: job.Failed, Reason: "no slot: " + err.Error(), Local: proc})
		return err
	}
	defer slot.Close()

	return runOne(ctx, st, o, o.JobID, proc, term, "", "")
}

// runOne runs a claimed job (its lock held, a slot taken): RUNNING (for a batch child,
// already recorded as its claim), the runner in this
// process, the final status. A value on cancel stops it (SIGTERM to its process group,
// SIGKILL after the grace period).
func runOne(ctx context.Context, st *store.Store, o SuperviseOptions, id string, proc *job.LocalProcess, cancel <-chan os.Signal, treeDir, treeCache string) error {
	// A batch child's RUNNING is the claim its worker wrote into its lock file; a
	// single job, queued or not, is RUNNING in status.json, with its supervisor.
	if proc.Queue == "" || isSingleQueue(proc.Queue) {
		if err := WriteStatus(ctx, st, id, &job.Status{State: job.Running, Local: proc}); err != nil {
			return err
		}
		calltrace.Mark("sup.running.written", id)
	}
	// The runner's copy of the output: a file per job for a single job; a batch child's
	// goes to its worker's log (the store has every job's own logs either way).
	var runLog io.Writer = os.Stderr
	if treeDir == "" {
		// Made at the first byte: a job that prints nothing costs no file.
		f := &lazyFile{path: filepath.Join(proc.Workspace, "runner.log")}
		defer f.Close()
		runLog = f
	}
	// The runner runs in this process: one exec less per job, and nothing to lose track
	// of. The job's own processes form a process group that dies with us.
	rctx, rcancel := context.WithCancel(ctx)
	defer rcancel()
	cancelled, stop := watchCancel(cancel, rcancel)
	defer close(stop)
	r := oneRun{st: st, o: o, id: id, ws: proc.Workspace, treeDir: treeDir, treeCache: treeCache, log: runLog}
	env, runErr := r.execute(ctx, rctx)
	final := finalStatus(st, env, runErr, cancelled.Load())
	final.Local = proc
	calltrace.Mark("sup.runner.done", id)
	err := WriteStatus(ctx, st, id, final)
	calltrace.Mark("sup.final.written", id)
	if err != nil {
		// The store is full (or gone): keep how the job ended here, where Status looks
		// before it calls this supervisor killed.
		if NoSpace(err) && final.State == job.Failed && !cancelled.Load() && !raisedInCall(env) && strings.Contains(final.Reason, "no space left on device") && !strings.HasPrefix(final.Reason, "no space left on device in the store") {
			final.Reason = NoSpaceReason(st.URL(), "the job's output, logs or result")
		}
		keepFinal(proc.Workspace, final)
	}
	return err
}

// watchCancel calls rcancel at a value on cancel (and says so in cancelled), until stop
// is closed.
func watchCancel(cancel <-chan os.Signal, rcancel context.CancelFunc) (cancelled *atomic.Bool, stop chan struct{}) {
	cancelled, stop = new(atomic.Bool), make(chan struct{})
	go func() {
		select {
		case _, ok := <-cancel:
			if ok {
				cancelled.Store(true)
				rcancel()
			}
		case <-stop:
		}
	}()
	return cancelled, stop
}

// oneRun is what runOne's runner needs.
type oneRun struct {
	st                 *store.Store
	o                  SuperviseOptions
	id, ws             string
	treeDir, treeCache string
	log                io.Writer
}

// execute runs the job in its container, or the runner in this process, under rctx
// (which a cancel request ends).
func (r oneRun) execute(ctx, rctx context.Context) (*job.Envelope, error) {
	if r.treeDir == "" { // batch children in the worker pool never run in containers
		if spec, inContainer := containerSpec(ctx, r.st, r.id); inContainer {
			return runInContainer(rctx, r.st, r.o, r.id, spec, r.log)
		}
	}
	o := r.o
	return runner.Run(rctx, runner.Options{
		StoreURL: o.StoreURL, Store: r.st, JobID: r.id, Workspace: r.ws, Stdout: r.log,
		WarmDir:     o.warmDir(),
		WarmIdle:    o.Python.WarmIdle,
		MinimalEnv:  true, // as a pod's: docs/local-backend.md, "The environment"
		Python:      o.Python.Interpreter,
		EnvDir:      filepath.Join(o.StateDir, "envs"),
		InPlaceData: true,
		// Volumes in the job's own mount namespace: this machine's paths are never
		// touched (internal/mountns).
		PrivateMounts: true,
		TreeDir:       r.treeDir,
		TreeCache:     r.treeCache,
		// A long-lived supervisor's single jobs: the next call's spare is leased.
		LeaseSpare: r.treeCache != "",
		Grace:      o.Grace,
	})
}

// raisedInCall says the function itself raised.
func raisedInCall(env *job.Envelope) bool {
	return env != nil && !env.Success && env.Phase == job.PhaseCall
}

// finalStatus is the job's end (outcome), with a full store's reason.
func finalStatus(st *store.Store, env *job.Envelope, runErr error, cancelled bool) *job.Status {
	final := outcome(env, runErr, cancelled)
	if final.State == job.Failed && NoSpace(runErr) {
		final.Reason = NoSpaceReason(st.URL(), "the job's result")
		if raisedInCall(env) {
			// The function raised (an OSError of its own on the full disk, say): that
			// is how it ended; only its pickled exception could not be stored.
			final.Reason = EnvelopeReason(env) + "; " + NoSpaceReason(st.URL(), "its exception and traceback")
		}
	}
	return final
}

// outcome turns the runner's envelope into the job's final status.
func outcome(env *job.Envelope, runErr error, cancelled bool) *job.Status {
	var logs *runner.LogsError
	switch {
	case env != nil && env.Success && (runErr == nil || errors.As(runErr, &logs)):
		// A stored envelope that says success is the job's end, whatever comes after
		// it (Status reads it so before this status is written).
		return &job.Status{State: job.Succeeded, ExitCode: env.ExitCode}
	case cancelled:
		return &job.Status{State: job.Failed, Reason: "cancelled"}
	case runErr != nil:
		return &job.Status{State: job.Failed, Reason: "the result could not be stored: " + runErr.Error()}
	case env != nil:
		return &job.Status{State: job.Failed, Reason: EnvelopeReason(env), ExitCode: env.ExitCode}
	default:
		return &job.Status{State: job.Failed, Reason: "the runner ended without a result"}
	}
}

// EnvelopeReason is the one-line reason of a failed envelope.
func EnvelopeReason(env *job.Envelope) string { return env.FailureReason() }

var errCancelled = errors.New("cancelled")

// acquireSlot takes one of n slot locks, polling while all are held. A signal on term
// gives up.
func acquireSlot(dir string, n int, term <-chan os.Signal) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	start := os.Getpid() % n // spread the first tries
	pause := backoff.New(5*time.Millisecond, 200*time.Millisecond)
	for {
		for i := 0; i < n; i++ {
			f, err := lockFile(filepath.Join(dir, fmt.Sprintf("%d.lock", (start+i)%n)), false)
			if err == nil {
				return f, nil
			}
			if !errors.Is(err, filelock.ErrLocked) {
				return nil, err
			}
		}
		select {
		case <-term:
			return nil, errCancelled
		case <-time.After(pause.Next()):
		}
	}
}

// lockFile opens path and takes an exclusive lock on it without waiting. must means the
// lock has to be free (it is ours alone); otherwise filelock.ErrLocked is returned.
func lockFile(path string, must bool) (*os.File, error) {
	f, err := filelock.Open(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := filelock.Try(f, filelock.Exclusive); err != nil {
		f.Close()
		if must && errors.Is(err, filelock.ErrLocked) {
			return nil, fmt.Errorf("%s is held by another supervisor", path)
		}
		return nil, err
	}
	return f, nil
}

// lazyFile is a file opened for appending at its first write.
type lazyFile struct {
	path string
	mu   sync.Mutex
	f    *os.File
	err  error
}

func (l *lazyFile) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil && l.err == nil {
		l.f, l.err = os.OpenFile(l.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	}
	if l.err != nil {
		return 0, l.err
	}
	return l.f.Write(p)
}

// Close closes the file if it was opened.
func (l *lazyFile) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	return l.f.Close()
}
