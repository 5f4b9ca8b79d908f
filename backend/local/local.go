// Package local is the embedded default backend: jobs run on this machine, each under a
// detached supervisor process that outlives the process that submitted it.
//
// The supervisor holds an exclusive flock on its job's lock file for as long as it
// lives, so anyone on this machine can tell a live supervisor from a dead one without
// trusting PIDs (which are reused): if the lock can be taken, the supervisor is gone. A
// fixed number of slot locks bounds how many jobs run at once; the rest wait as PENDING.
package local

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/errs"
	"github.com/kinetic-run/kinetic/internal/backoff"
	"github.com/kinetic-run/kinetic/internal/filelock"
	"github.com/kinetic-run/kinetic/internal/remove"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/jobview"
	"github.com/kinetic-run/kinetic/runner"
	"github.com/kinetic-run/kinetic/store"
)

// Name is the backend's name in handles (and config.DefaultBackend()).
const Name = "local"

// NeverSubmittedGrace is how long a job with a handle but no status is taken to be on
// its way to the backend before it is reported FAILED.
const NeverSubmittedGrace = time.Minute

// Options configure the local backend.
type Options struct {
	// StateDir holds workspaces, locks and slot files (required; the registered
	// backend uses DefaultStateDir).
	StateDir string
	// Exe is the kinetic binary that runs supervisors and runners (default: this one).
	Exe string
	// Slots bounds how many jobs run at once (default: the number of CPUs; the
	// registered backend passes the setting local_slots).
	Slots int
	// Grace is how long cancel waits after SIGTERM before SIGKILL (default
	// runner.DefaultGrace); the supervisor passes it to the runner.
	Grace time.Duration
	// Python says how jobs' Python runs (the settings warm, warm_idle, python).
	Python PythonSettings
	// Isolation is how the inputs of a batch run (the setting batch_isolation):
	// runner.IsolationWorker (default), runner.IsolationProcess or IsolationJob.
	Isolation string
	// PerJobSupervisor starts a new supervisor process for every job instead of
	// handing jobs to long-lived supervisors (singles.go). Tests of the per-job path
	// set it.
	PerJobSupervisor bool
	// SingleIdle is how long a long-lived supervisor waits for another job before it
	// exits (0: DefaultSingleIdle).
	SingleIdle time.Duration
}

// PythonSettings say how jobs' Python runs on this machine. The zero value is the
// default: warm workers that idle for runner.DefaultWarmIdle, the job's own interpreter.
type PythonSettings struct {
	// Cold starts every call in a new interpreter instead of a warm forked worker (the
	// setting warm=false).
	Cold bool
	// WarmIdle is how long an idle warm worker server lives (0: runner.DefaultWarmIdle).
	WarmIdle time.Duration
	// Interpreter, if set, runs every Python job instead of the one it recorded.
	Interpreter string
}

// flags are the supervise arguments that carry s to a supervisor.
func (s PythonSettings) flags() []string {
	var a []string
	if s.Cold {
		a = append(a, "--cold")
	}
	if s.WarmIdle > 0 {
		a = append(a, "--warm-idle", s.WarmIdle.String())
	}
	if s.Interpreter != "" {
		a = append(a, "--python", s.Interpreter)
	}
	return a
}

// Backend is the local backend.
type Backend struct {
	st *store.Store
	o  Options

	mu      sync.Mutex
	ensured map[string]time.Time // queue → when its workers were last seen complete

	singleOnce sync.Once
	singleQ    string // the queue of single jobs (singles.go)
}

// New returns a local backend over st.
func New(st *store.Store, o Options) (*Backend, error) {
	if !st.Shared() {
		// A mem:// store lives in one process's memory, and a local job's supervisor,
		// and every `kinetic jobs` command, is another process: a job submitted there
		// could never be run or found.
		return nil, errs.New(errs.InvalidArgument, "store mem:// is memory inside one process, and the local backend runs each job in its own process: use a file:// store (the default) or gs:// / s3://")
	}
	if o.StateDir == "" {
		return nil, errors.New("local backend: no state directory")
	}
	if o.Exe == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("local backend: find the kinetic binary: %w", err)
		}
		o.Exe = exe
	}
	if o.Slots <= 0 {
		o.Slots = runtime.NumCPU()
	}
	if o.Grace <= 0 {
		o.Grace = runner.DefaultGrace
	}
	return &Backend{st: st, o: o}, nil
}

// Name implements backend.Backend.
func (b *Backend) Name() string { return Name }

func (b *Backend) workspace(id string) string { return filepath.Join(b.o.StateDir, "jobs", id) }

// Submit hands the job to a supervisor and returns once the job is recorded and a
// live supervisor will run it, so the job can never be lost between the two.
//
// By default the supervisor is a long-lived one (see singles.go): the job is recorded
// PENDING in status.json, queued, and run by a supervisor already running for this
// backend's settings, which holds the job's lock and records itself as a per-job
// supervisor does. With Options.PerJobSupervisor, a new detached supervisor is started
// for the job (an exec per call) and returns once it holds its lock and has recorded
// itself.
func (b *Backend) Submit(ctx context.Context, h *job.Handle) error {
	ws := b.workspace(h.JobID)
	if err := os.MkdirAll(ws, 0o700); err != nil {
		return StateDirError(b.o.StateDir, ws, "the job's workspace", err)
	}
	if !b.o.PerJobSupervisor {
		if err := b.submitSingle(ctx, h, ws); err != nil {
			os.RemoveAll(ws)
			return err
		}
		return nil
	}
	if err := b.spawn(ctx, filepath.Join(ws, "supervisor.log"), "--job", h.JobID); err != nil {
		// Nothing ran: leave no workspace behind (the engine removes the job's objects).
		os.RemoveAll(ws)
		return err
	}
	return nil
}

// spawn starts a detached `kinetic supervise` with args (a job, or a queue to serve)
// and returns once it says "ready" on fd 3: it then holds its locks and has recorded
// itself, so nothing submitted can be lost between the two. A supervisor that exits
// without saying so (a worker giving way to a twin) is not an error; one that fails is
// named with its log.
func (b *Backend) spawn(ctx context.Context, logPath string, args ...string) error {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("local backend: %w", err)
	}
	defer logf.Close()
	rd, wr, err := os.Pipe()
	if err != nil {
		return err
	}
	defer rd.Close()
	argv := append([]string{"supervise", "--store", b.st.URL(), "--state-dir", b.o.StateDir,
		"--slots", strconv.Itoa(b.o.Slots), "--grace", b.o.Grace.String()}, b.o.Python.flags()...)
	argv = append(argv, args...)
	cmd := exec.Command(b.o.Exe, argv...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.ExtraFiles = []*os.File{wr} // fd 3
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		wr.Close()
		return fmt.Errorf("local backend: start supervisor: %w", err)
	}
	wr.Close()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }() // reaped if we live long enough; detached otherwise
	said := make(chan string, 1)
	go func() {
		// One line, not to EOF: a process the supervisor starts may inherit fd 3.
		line, _ := bufio.NewReader(io.LimitReader(rd, 4<<10)).ReadString('\n')
		said <- line
	}()
	select {
	case s := <-said:
		if strings.HasPrefix(s, "ready") {
			return nil
		}
		// A supervisor that fails before it is ready says why on fd 3 too: its log may
		// be unwritable (a full disk) and so empty.
		if msg, ok := strings.CutPrefix(s, StartupErrorPrefix); ok {
			<-exited
			return fmt.Errorf("local backend: the supervisor failed during start-up: %s", strings.TrimSpace(msg))
		}
		if err := <-exited; err != nil {
			return fmt.Errorf("local backend: the supervisor failed during start-up: %v (see %s)", err, logPath)
		}
		return nil
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		return fmt.Errorf("local backend: the supervisor did not start within 30s (see %s)", logPath)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Status implements backend.Backend: status.json, corrected by a liveness check of the
// supervisor's lock. Each rule of statusRules (or noStatusRules, when status.json is
// not there) may settle the answer; the first that does gives it.
func (b *Backend) Status(ctx context.Context, h *job.Handle) (job.State, string, error) {
	st, err := ReadStatus(ctx, b.st, h.JobID)
	rules := statusRules()
	switch {
	case store.IsNotFound(err):
		rules = noStatusRules()
	case err != nil:
		return "", "", err
	}
	for _, rule := range rules {
		if s, r, ok, err := rule(b, ctx, h, st); ok || err != nil {
			return s, r, err
		}
	}
	return st.State, st.Reason, nil
}

// statusRule settles a job's state (ok), or leaves it to the next rule. st is nil for
// noStatusRules.
type statusRule func(b *Backend, ctx context.Context, h *job.Handle, st *job.Status) (job.State, string, bool, error)

// noStatusRules answer for a job without status.json; the last always answers.
func noStatusRules() []statusRule {
	return []statusRule{
		(*Backend).groupInputStatus,
		(*Backend).prunedChildStatus,
		(*Backend).workerChildStatus,
		(*Backend).recordsStatus,
	}
}

// statusRules correct a job's status.json; when none answers, it stands.
func statusRules() []statusRule {
	return []statusRule{
		func(_ *Backend, _ context.Context, _ *job.Handle, st *job.Status) (job.State, string, bool, error) {
			return st.State, st.Reason, st.State.Terminal(), nil
		},
		(*Backend).queueStatus,
		(*Backend).succeededStatus,
		(*Backend).keptStatus,
		(*Backend).lostSupervisorStatus,
	}
}

// groupInputStatus answers for an input of a batch run by executors (group.go).
func (b *Backend) groupInputStatus(ctx context.Context, h *job.Handle, _ *job.Status) (job.State, string, bool, error) {
	return b.groupStatus(ctx, h, true)
}

// prunedChildStatus answers for a derived child whose batch's state was pruned: what
// it left in the store says it all.
func (b *Backend) prunedChildStatus(ctx context.Context, h *job.Handle, _ *job.Status) (job.State, string, bool, error) {
	if _, _, derived := job.ParseChildID(h.JobID); !derived {
		return "", "", false, nil
	}
	if s, r, ok, err := b.recordedEnd(ctx, h.JobID, true); ok || err != nil {
		return s, r, true, err
	}
	if err := jobview.MissingEnvelope(ctx, b.st, h.JobID); err != nil {
		return "", "", true, err
	}
	return job.NotFound, "", true, nil
}

// workerChildStatus answers for a batch child run by a worker: RUNNING is its claim
// (see claimedStatus); queued: the entry is written after the handle, so the job
// exists.
func (b *Backend) workerChildStatus(ctx context.Context, h *job.Handle, _ *job.Status) (job.State, string, bool, error) {
	if h.GroupID == "" || !job.ValidName(h.JobID) {
		return "", "", false, nil
	}
	s, ok, err := b.claimedStatus(ctx, h, b.workspace(h.JobID))
	if err != nil {
		return "", "", true, err
	}
	if ok {
		return s.State, s.Reason, true, nil
	}
	return b.queuedProcessStatus(ctx, h)
}

// queuedProcessStatus answers for a job a queue holds.
func (b *Backend) queuedProcessStatus(ctx context.Context, h *job.Handle) (job.State, string, bool, error) {
	p := b.queuedProcess(h)
	if p == nil {
		return "", "", false, nil
	}
	s, r, err := b.queuedStatus(ctx, h, &job.Status{State: job.Pending, Local: p})
	return s, r, true, err
}

// recordsStatus answers for a job with no status from what the store holds: no handle
// is not found; the envelope says how it ended; a queue may hold it; else it is pending,
// or was never submitted.
func (b *Backend) recordsStatus(ctx context.Context, h *job.Handle, _ *job.Status) (job.State, string, bool, error) {
	raw, err := b.st.Get(ctx, store.HandleKey(h.JobID))
	if err != nil {
		return job.NotFound, "", true, nil
	}
	if final := b.envelopeEnd(ctx, h.JobID); final != nil {
		return final.State, final.Reason, true, nil
	}
	if s, r, ok, err := b.queuedProcessStatus(ctx, h); ok || err != nil {
		return s, r, ok, err
	}
	s, r := b.unsubmittedStatus(ctx, h.JobID, raw)
	return s, r, true, nil
}

// envelopeEnd is the end the runner's envelope records (and records it) when
// status.json was lost (deleted, or a crash between the envelope and the status).
func (b *Backend) envelopeEnd(ctx context.Context, id string) *job.Status {
	envRaw, err := b.st.Get(ctx, store.EnvelopeKey(id))
	if err != nil {
		return nil
	}
	env, err := job.DecodeEnvelope(envRaw)
	if err != nil {
		return nil
	}
	final := outcome(env, nil, false)
	b.record(ctx, id, final)
	return final
}

// unsubmittedStatus is pending, or failed for a job written but never handed to us: its
// submitter stopped in between. Submit records a status within milliseconds, so a
// minute is a generous grace.
func (b *Backend) unsubmittedStatus(ctx context.Context, id string, handle []byte) (job.State, string) {
	hh, err := job.DecodeHandle(handle)
	if err != nil {
		return job.Pending, ""
	}
	if t, err := time.Parse(time.RFC3339Nano, hh.CreatedAt); err == nil && time.Since(t) > NeverSubmittedGrace {
		reason := "the job was written but never started: the process that submitted it stopped first; submit it again"
		b.record(ctx, id, &job.Status{State: job.Failed, Reason: reason})
		return job.Failed, reason
	}
	return job.Pending, ""
}

// queueStatus answers for a job pending in a queue.
func (b *Backend) queueStatus(ctx context.Context, h *job.Handle, st *job.Status) (job.State, string, bool, error) {
	if st.State != job.Pending || st.Local == nil || st.Local.Queue == "" {
		return "", "", false, nil
	}
	s, r, err := b.queuedStatus(ctx, h, st)
	return s, r, true, err
}

// succeededStatus answers for a running job whose envelope says success. The runner's
// envelope is its last write, and one that says success is the job's end: its
// supervisor's final status says the same a moment later (see outcome). A waiter is
// woken by the envelope (jobview.Wait), so a call's value is on its way back while that
// status is being written; the cleanup that may follow waits for the supervisor
// (CleanupEnded).
func (b *Backend) succeededStatus(ctx context.Context, h *job.Handle, st *job.Status) (job.State, string, bool, error) {
	if st.State != job.Running {
		return "", "", false, nil
	}
	raw, err := b.st.Get(ctx, store.EnvelopeKey(h.JobID))
	if err != nil {
		return "", "", false, nil
	}
	env, err := job.DecodeEnvelope(raw)
	ok := err == nil && env.Success
	return job.Succeeded, "", ok, nil
}

// keptStatus answers with a final status kept in the workspace: it is the job's end,
// whatever the supervisor does now (a long-lived one runs on to serve its queue).
func (b *Backend) keptStatus(ctx context.Context, h *job.Handle, st *job.Status) (job.State, string, bool, error) {
	if st.Local == nil {
		return "", "", false, nil
	}
	kept := keptFinal(st.Local.Workspace)
	if kept == nil {
		return "", "", false, nil
	}
	b.record(ctx, h.JobID, kept)
	return kept.State, kept.Reason, true, nil
}

// lostSupervisorStatus answers for a job whose supervisor is known to be gone.
func (b *Backend) lostSupervisorStatus(ctx context.Context, h *job.Handle, st *job.Status) (job.State, string, bool, error) {
	if alive, known := supervisorAlive(st.Local); !known || alive {
		return "", "", false, nil
	}
	// Read again: the supervisor writes its final status before releasing the lock.
	st2, err := ReadStatus(ctx, b.st, h.JobID)
	if err == nil && st2.State.Terminal() {
		return st2.State, st2.Reason, true, nil
	}
	reason := fmt.Sprintf("the job's supervisor (pid %d) stopped without reporting a result: it was killed or the machine restarted; see %s", st.Local.SupervisorPID, filepath.Join(st.Local.Workspace, "supervisor.log"))
	b.record(ctx, h.JobID, &job.Status{State: job.Failed, Reason: reason})
	return job.Failed, reason, true, nil
}

// supervisorAlive checks the supervisor's lock. known is false when the job ran on
// another machine (or another boot of this one) and nothing can be said from here.
func supervisorAlive(p *job.LocalProcess) (alive, known bool) {
	if p == nil || p.LockPath == "" {
		return false, false
	}
	if p.BootID != bootID() {
		return false, p.BootID != "" && hostBootKnown()
	}
	f, err := filelock.Open(p.LockPath, os.O_RDONLY, 0)
	if err != nil {
		// The lock file is gone: the workspace was removed with its supervisor, or
		// someone deleted the file under a live one. Only the process can tell.
		return supervisorRuns(p), true
	}
	defer f.Close()
	if err := filelock.Try(f, filelock.Shared); err != nil {
		return true, true
	}
	filelock.Unlock(f)
	// Free, but the file may be a new one: deleted under a live supervisor and made
	// again (an idle queue worker's claim attempt creates it). Only the process can
	// tell then; a killed supervisor's PID is gone.
	return supervisorRuns(p), true
}

// supervisorRuns reports whether p's supervisor process still runs: its PID is a
// `kinetic supervise` of the same state directory (so a reused PID is not mistaken
// for it).
func supervisorRuns(p *job.LocalProcess) bool {
	if p.SupervisorPID <= 0 {
		return false
	}
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p.SupervisorPID))
	if err != nil {
		return false
	}
	stateDir := filepath.Dir(filepath.Dir(p.Workspace)) // STATE/jobs/ID
	args := strings.Split(string(raw), "\x00")
	supervise, sameState := false, false
	for i, a := range args {
		supervise = supervise || a == "supervise"
		sameState = sameState || (a == "--state-dir" && i+1 < len(args) && args[i+1] == stateDir)
	}
	return supervise && sameState
}

// hostBootKnown: a different boot ID on a machine whose boot ID we can read means this
// machine restarted since the job started, so its supervisor is certainly gone. (A
// store shared between machines with the local backend is not supported.)
func hostBootKnown() bool { return bootID() != "" }

// bootID is this machine's boot ID (read once: it cannot change while we run).
var bootID = sync.OnceValue(func() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
})

// Cancel implements backend.Backend: SIGTERM to the supervisor, which stops the job's
// process group gracefully and then forcibly, and records FAILED "cancelled".
func (b *Backend) Cancel(ctx context.Context, h *job.Handle) error {
	st, err := ReadStatus(ctx, b.st, h.JobID)
	if store.IsNotFound(err) {
		if gid, i, ok := b.groupChild(h); ok {
			return b.cancelGroupChild(ctx, h, gid, i)
		}
		p := b.queuedProcess(h)
		if p == nil {
			return nil
		}
		st, err = &job.Status{State: job.Pending, Local: p}, nil
	}
	if err != nil {
		return err
	}
	if st.State.Terminal() {
		return nil
	}
	if done, err := b.stopJob(ctx, h, st); done || err != nil {
		return err
	}
	return b.waitStopped(ctx, h)
}

// stopJob takes a queued job out of its queue, or signals its supervisor; done when
// nothing is left to wait for.
func (b *Backend) stopJob(ctx context.Context, h *job.Handle, st *job.Status) (done bool, err error) {
	if st.Local != nil && st.Local.Queue != "" {
		return b.cancelQueued(ctx, h, st)
	}
	if alive, _ := supervisorAlive(st.Local); !alive {
		_, _, err := b.Status(ctx, h) // records the dead supervisor
		return true, err
	}
	if err := syscall.Kill(st.Local.SupervisorPID, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return true, fmt.Errorf("cancel %s: %w", h.JobID, err)
	}
	return false, nil
}

// waitStopped waits until h's status is final, for at most the grace period and 15 s.
func (b *Backend) waitStopped(ctx context.Context, h *job.Handle) error {
	deadline := time.Now().Add(b.o.Grace + 15*time.Second)
	// Checked at once, then backing off up to the caller's poll interval
	// (cleanup_poll_interval), 250 ms when none is given.
	for pause := backoff.New(10*time.Millisecond, backend.PollInterval(ctx, 250*time.Millisecond)); time.Now().Before(deadline); {
		state, _, err := b.Status(ctx, h)
		if err != nil {
			return err
		}
		if state.Terminal() {
			return nil
		}
		if err := pause.Wait(ctx); err != nil {
			return err
		}
	}
	return fmt.Errorf("cancel %s: the job did not stop within %s", h.JobID, b.o.Grace+15*time.Second)
}

// Cleanup implements backend.Backend: stop the job if needed and remove its workspace.
func (b *Backend) Cleanup(ctx context.Context, h *job.Handle) error {
	if err := b.Cancel(ctx, h); errors.Is(err, job.ErrDamaged) {
		// status.json is unreadable, so it cannot say which supervisor to stop; its lock
		// still tells whether one runs.
		lock := &job.LocalProcess{LockPath: filepath.Join(b.workspace(h.JobID), "supervisor.lock"), BootID: bootID()}
		if alive, _ := supervisorAlive(lock); alive {
			return fmt.Errorf("cleanup %s: %w; its supervisor still runs, so nothing was removed: wait for it to end, then clean up again", h.JobID, err)
		}
	} else if err != nil {
		return err
	}
	// A job is final once its envelope is stored, before its supervisor's last writes
	// (the log's tail, the final status): the engine removes the store's objects after
	// this returns, so it waits for that supervisor to let go of the job first, or an
	// object written after them would be left as a damaged job.
	ws := b.workspace(h.JobID)
	awaitSupervisor(ctx, filepath.Join(ws, "supervisor.lock"), supervisorFinishGrace)
	return removeWorkspace(ctx, h.JobID, ws)
}

// CleanupEnded implements backend.EndedCleaner: Cleanup for a job known to have ended
// (its result was collected): nothing is read to find what runs; its workspace goes.
func (b *Backend) CleanupEnded(ctx context.Context, h *job.Handle) error {
	ws := b.workspace(h.JobID)
	// Ended is known from its envelope, which comes before its supervisor's final
	// status (Status): the store's objects go only once that supervisor is done with
	// the job (its lock let go), or a status written after them would be left behind.
	awaitSupervisor(ctx, filepath.Join(ws, "supervisor.lock"), supervisorFinishGrace)
	return removeWorkspace(ctx, h.JobID, ws)
}

// supervisorFinishGrace bounds how long a cleanup waits for a supervisor to finish with
// a job that has ended: its last writes take milliseconds.
const supervisorFinishGrace = 5 * time.Second

// awaitSupervisor waits, at most within, until no process holds the lock at path (a
// missing file is no one's).
func awaitSupervisor(ctx context.Context, path string, within time.Duration) {
	f, err := filelock.Open(path, os.O_RDONLY, 0)
	if err != nil {
		return
	}
	defer f.Close()
	wctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	if filelock.WaitContext(wctx, f, filelock.Shared, nil) == nil {
		filelock.Unlock(f)
	}
}

// removeWorkspace removes job id's workspace dir. Its supervisor may still be finishing
// in it: a job's value can be read, collected and cleaned up before the supervisor's last
// writes (the final status, its log, the disk reserve given back). A file made while
// RemoveAll runs fails it with ENOTEMPTY ("kinetic: warning: cleanup of … failed: …
// directory not empty" after a sync call, about one run of forty calls in four), so it
// tries again, for about a second.
func removeWorkspace(ctx context.Context, id, dir string) error {
	err := remove.AllWhileWritten(ctx, dir, time.Second)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, remove.ErrStillWritten):
		return fmt.Errorf("cleanup %s: its workspace %s was still being written after a second; `kinetic prune` removes it once nothing uses it", id, dir)
	default:
		return fmt.Errorf("cleanup %s: %w", id, err)
	}
}

// ReadStatus reads status.json.
func ReadStatus(ctx context.Context, st *store.Store, id string) (*job.Status, error) {
	b, err := st.Get(ctx, store.StatusKey(id))
	if err != nil {
		return nil, err
	}
	return job.DecodeStatus(id, b)
}

// WriteStatus writes status.json atomically.
func WriteStatus(ctx context.Context, st *store.Store, id string, s *job.Status) error {
	if s.UpdatedAt.IsZero() {
		s.UpdatedAt = time.Now().UTC()
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return st.Put(ctx, store.StatusKey(id), b)
}

// queuedStatus judges a child waiting in a batch queue: PENDING while its pool lives,
// FAILED once the pool has had no worker for the grace period.
func (b *Backend) queuedStatus(ctx context.Context, h *job.Handle, st *job.Status) (job.State, string, error) {
	if poolServed(st.Local.LockPath) || b.restartSingleWorkers(st.Local) || queuedInGrace(st.Local) {
		return st.State, st.Reason, nil
	}
	if cur, err := ReadStatus(ctx, b.st, h.JobID); err == nil && cur.State != job.Pending {
		return b.Status(ctx, h) // claimed meanwhile
	}
	reason := fmt.Sprintf("the batch's workers stopped before running this job; see %s", filepath.Join(st.Local.Queue, "workers"))
	if isSingleQueue(st.Local.Queue) {
		reason = fmt.Sprintf("the job's supervisors stopped before running it; see %s", filepath.Join(st.Local.Queue, "workers"))
	}
	b.record(ctx, h.JobID, &job.Status{State: job.Failed, Reason: reason})
	return job.Failed, reason, nil
}

// DebugEndpoint implements backend.Debugger: the job runs on this machine, so debugpy's
// own address is reachable as it is and nothing needs forwarding (localPort is not used).
func (b *Backend) DebugEndpoint(ctx context.Context, h *job.Handle, m *job.DebugMarker, localPort int) (string, int, func(), error) {
	return m.Host, m.Port, nil, nil
}
