package local

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/kinetic-run/kinetic/internal/calltrace"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/kinetic-run/kinetic/internal/backoff"
	"github.com/kinetic-run/kinetic/internal/dirwatch"
	"github.com/kinetic-run/kinetic/internal/filelock"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/runner"
	"github.com/kinetic-run/kinetic/store"
)

// A batch's children run from a queue: a directory of entries named by job ID (IDs sort
// by creation time, so the queue is FIFO), served by up to `parallelism` workers that
// each run one child at a time in-process. No process is started per child, which is
// what lets a batch of short inputs run at hundreds per second.
//
// Locks: each worker holds workers/K.lock exclusively (at most one worker per K) and
// pool.lock shared (the pool is alive while anyone holds it); a worker claims a child by
// taking the child's supervisor.lock, exactly as a single job's supervisor does, so
// status, liveness and cancel work the same for both.

func (b *Backend) queueDir(group string) string { return filepath.Join(b.o.StateDir, "queues", group) }

// Enqueue implements driver.Driver.
func (b *Backend) Enqueue(ctx context.Context, h *job.Handle, parallelism int) error {
	if h.GroupID == "" {
		return b.Submit(ctx, h)
	}
	q := b.queueDir(h.GroupID)
	ws := b.workspace(h.JobID)
	for _, d := range []string{ws, filepath.Join(q, "workers")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("local backend: %w", err)
		}
	}
	// A queued child has no status.json yet: the queue entry is its PENDING state (one
	// store object less per input); the worker that claims it writes RUNNING.
	if err := os.WriteFile(filepath.Join(q, h.JobID), nil, 0o600); err != nil {
		return fmt.Errorf("local backend: queue %s: %w", h.JobID, err)
	}
	return b.ensureFresh(q, max(1, min(parallelism, b.o.Slots)))
}

// ensureFresh makes sure n workers serve q, unless it saw them all a moment ago.
func (b *Backend) ensureFresh(q string, n int) error {
	// Workers linger for seconds after their queue empties, so having seen the pool
	// full a moment ago is as good as looking again (and saves a lock per input).
	b.mu.Lock()
	fresh := time.Since(b.ensured[q]) < 100*time.Millisecond
	b.mu.Unlock()
	if fresh {
		return nil
	}
	if err := b.ensureWorkers(q, n); err != nil {
		return err
	}
	b.mu.Lock()
	if b.ensured == nil {
		b.ensured = map[string]time.Time{}
	}
	b.ensured[q] = time.Now()
	b.mu.Unlock()
	return nil
}

// ensureWorkers starts a worker for every free worker slot below n.
func (b *Backend) ensureWorkers(q string, n int) error {
	for k := 0; k < n; k++ {
		f, err := lockFile(filepath.Join(q, "workers", strconv.Itoa(k)+".lock"), false)
		if errors.Is(err, filelock.ErrLocked) {
			continue // worker k is alive
		}
		if err != nil {
			return err
		}
		f.Close()
		if err := b.startWorker(q, k); err != nil {
			return err
		}
	}
	return nil
}

func (b *Backend) startWorker(q string, k int) error {
	return b.spawn(context.Background(), filepath.Join(q, "workers", strconv.Itoa(k)+".log"), b.workerArgs(q, k)...)
}

// WorkOptions are the arguments of `kinetic supervise --queue`.
type WorkOptions struct {
	SuperviseOptions
	Queue  string
	Worker int
	// Idle is how long a worker waits for new entries before it exits.
	Idle time.Duration
}

// Work serves a batch queue until it has been empty for o.Idle.
func Work(ctx context.Context, o WorkOptions) error {
	ctx = context.WithoutCancel(ctx)
	if o.Idle <= 0 {
		o.Idle = 3 * time.Second
	}
	st, err := store.Open(ctx, o.StoreURL)
	if err != nil {
		return err
	}
	defer st.Close()
	wl, err := lockWorker(filepath.Join(o.Queue, "workers", strconv.Itoa(o.Worker)+".lock"))
	if err != nil {
		if o.Ready != nil {
			o.Ready.Close()
		}
		return nil // a twin started first
	}
	defer wl.Close()
	pool, err := joinPool(o)
	if err != nil {
		return err
	}
	defer pool.Close()
	// SIGUSR1: "look for cancel requests"; SIGTERM: cancel the current child and stop.
	usr := make(chan os.Signal, 8)
	signal.Notify(usr, syscall.SIGUSR1, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer signal.Stop(usr)
	sigs := newSignalRouter(usr)
	defer sigs.close()
	// A worker's live heap is small and it allocates per child: collect less often.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	w := &worker{o: o, st: st, sigs: sigs}
	defer w.releaseSlot()
	if again := w.serve(ctx, wl, pool); again {
		return Work(ctx, o) // take the locks again (or give way to a new worker)
	}
	return nil
}

// joinPool takes the pool's lock shared (down takes it exclusive) and says ready.
func joinPool(o WorkOptions) (*os.File, error) {
	pool, err := os.OpenFile(filepath.Join(o.Queue, "pool.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := filelock.Wait(pool, filelock.Shared); err != nil {
		pool.Close()
		return nil, err
	}
	if o.Ready != nil {
		o.Ready.WriteString("ready\n")
		o.Ready.Close()
	}
	return pool, nil
}

// serve runs children until told to stop or idle for o.Idle; again when it left the
// pool but an entry was queued meanwhile.
func (w *worker) serve(ctx context.Context, wl, pool *os.File) (again bool) {
	o, sigs := w.o, w.sigs
	idleSince := time.Now()
	// The tree kept for the next single job goes with the worker (while it still holds
	// its lock: the next worker K may be using the directory right after).
	left := false
	defer func() {
		if !left {
			runner.DropTree(w.treeDir())
		}
	}()
	pause := backoff.New(2*time.Millisecond, 50*time.Millisecond)
	// A new entry wakes the worker at once; the pause is then only a fallback.
	wake := dirwatch.New(o.Queue)
	defer wake.Close()
	if wake != nil && isSingleQueue(o.Queue) {
		pause.Max = 500 * time.Millisecond // a long-lived supervisor waits for minutes
	}
	for !sigs.stopping() { // told to stop: a job queued now goes to a new worker
		ran, err := w.once(ctx)
		if err != nil {
			fmt.Fprintln(os.Stderr, "kinetic worker:", err)
		}
		if sigs.stopping() {
			return false
		}
		if ran {
			idleSince = time.Now()
			pause.Reset()
			continue
		}
		// Nothing to run: give the slot back for others while we wait.
		w.releaseSlot()
		if time.Since(idleSince) > o.Idle {
			left = true
			return w.leave(wl, pool)
		}
		wake.Sleep(sigs.ctx, pause.Next())
	}
	return false
}

// leave leaves the pool, then looks once more: an entry queued meanwhile either is seen
// now (again) or its submitter saw our lock free and started a new worker.
func (w *worker) leave(wl, pool *os.File) (again bool) {
	runner.DropTree(w.treeDir())
	filelock.Unlock(pool)
	wl.Close()
	ents, _ := pending(w.o.Queue)
	return len(ents) != 0
}

// signalRouter owns a worker's signals for its whole life. A signal to stop (SIGTERM,
// SIGINT, SIGHUP) cancels the child running, if any, and makes the worker leave once
// that child has ended; one that comes while nothing runs is not kept for the next
// child (which a new engine may have queued long after). SIGUSR1 goes to the child
// running only: an idle worker has nothing of a cancel request's to stop.
type signalRouter struct {
	ctx    context.Context // ends when the worker is told to stop
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex
	target func(os.Signal) // the running child's, or nil
}

func newSignalRouter(in <-chan os.Signal) *signalRouter {
	ctx, cancel := context.WithCancel(context.Background())
	r := &signalRouter{ctx: ctx, cancel: cancel, done: make(chan struct{})}
	go func() {
		for {
			select {
			case s := <-in:
				if s != syscall.SIGUSR1 {
					r.cancel()
				}
				r.mu.Lock()
				if r.target != nil {
					r.target(s)
				}
				r.mu.Unlock()
			case <-r.done:
				return
			}
		}
	}()
	return r
}

// route sends the signals that come from now on to f (nil: to no one). f must not block.
func (r *signalRouter) route(f func(os.Signal)) {
	r.mu.Lock()
	r.target = f
	r.mu.Unlock()
}

func (r *signalRouter) stopping() bool { return r.ctx.Err() != nil }

func (r *signalRouter) close() {
	close(r.done)
	r.cancel()
}

// lockWorker takes a worker's lock. It is held for microseconds by a submitter that
// looks whether the worker is alive (ensureWorkers), so a worker starting at that moment
// tries again for a while before it takes the holder for a twin and leaves.
func lockWorker(path string) (*os.File, error) {
	for i := 0; ; i++ {
		f, err := lockFile(path, false)
		if !errors.Is(err, filelock.ErrLocked) || i == 20 {
			return f, err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// pending lists the queue's entries in order.
func pending(q string) ([]string, error) {
	ents, err := os.ReadDir(q)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, e := range ents {
		if !e.IsDir() && job.ValidName(e.Name()) {
			ids = append(ids, e.Name())
		}
	}
	sort.Strings(ids)
	return ids, nil
}

// worker is one pool worker's state between children.
type worker struct {
	o    WorkOptions
	st   *store.Store
	sigs *signalRouter
	seen []string // queue entries read but not yet tried
	// slot is kept from one child to the next while the queue has work: taking and
	// giving back a slot lock per child is work for nothing.
	slot *os.File
}

func (w *worker) releaseSlot() {
	if w.slot != nil {
		w.slot.Close()
		w.slot = nil
	}
}

// treeDir is this worker's directory for the shipped tree it keeps between jobs
// (runner.Options TreeDir, TreeCache).
func (w *worker) treeDir() string {
	return filepath.Join(w.o.Queue, "workers", strconv.Itoa(w.o.Worker))
}

// once claims and runs the first unclaimed entry; ran says whether it found one.
func (w *worker) once(ctx context.Context) (bool, error) {
	// The queue is read again only once the entries seen last time are used up: with a
	// thousand entries, reading it per child would cost more than running the child.
	if len(w.seen) == 0 {
		ids, err := pending(w.o.Queue)
		if err != nil {
			return false, err
		}
		w.seen = ids
	}
	for len(w.seen) > 0 {
		id := w.seen[0]
		w.seen = w.seen[1:]
		if done, ran, err := w.tryEntry(ctx, id); done {
			return ran, err
		}
	}
	return false, nil
}

// tryEntry tries queue entry id: done is false when it was skipped (taken, cancelled,
// unclaimable), and the next entry is tried.
func (w *worker) tryEntry(ctx context.Context, id string) (done, ran bool, err error) {
	o := w.o
	if gid, k, ok := parseGroupEntry(id); ok {
		if !isSingleQueue(o.Queue) {
			os.Remove(filepath.Join(o.Queue, id)) // only long-lived supervisors serve batches
			return false, false, nil
		}
		return true, true, w.runGroup(ctx, id, gid, k)
	}
	calltrace.Mark("sup.seen", id)
	ws := filepath.Join(o.StateDir, "jobs", id)
	lockPath := filepath.Join(ws, "supervisor.lock")
	lock, err := lockFile(lockPath, false)
	if err != nil {
		if stateDirFault(err) {
			// Never claimable here: fail it now rather than leave it queued.
			w.failUnclaimed(ctx, id, StateDirError(o.StateDir, lockPath, "the job's lock file", err))
		}
		return false, false, nil // another worker has it, or it is being cancelled
	}
	if !w.stillPending(ctx, id, lock) {
		// Cancelled while queued, cleaned up, or its worker died.
		os.Remove(filepath.Join(o.Queue, id))
		lock.Close()
		return false, false, nil
	}
	proc := &job.LocalProcess{BootID: bootID(), SupervisorPID: os.Getpid(), LockPath: lockPath, Workspace: ws, Queue: o.Queue}
	ran, err = w.claimAndRun(ctx, id, lock, proc)
	return true, ran, err
}

// stillPending says whether entry id's job still waits to run (its lock held in lock). A
// job claimed before by a worker that died while it ran must not run twice: it is
// recorded failed.
func (w *worker) stillPending(ctx context.Context, id string, lock *os.File) bool {
	s, err := ReadStatus(ctx, w.st, id)
	if store.IsNotFound(err) {
		s, err = &job.Status{State: job.Pending}, nil // queued: no status yet
	}
	if err == nil && !s.State.Terminal() {
		if c := readClaim(lock); c != nil {
			s = &job.Status{State: job.Failed, Reason: deadWorkerReason(c), Local: c}
			err = WriteStatus(ctx, w.st, id, s)
		}
	}
	return err == nil && s.State == job.Pending
}

// claimAndRun takes a slot, claims job id in its held lock and runs it.
func (w *worker) claimAndRun(ctx context.Context, id string, lock *os.File, proc *job.LocalProcess) (bool, error) {
	o := w.o
	defer lock.Close()
	if w.slot == nil {
		var err error
		if w.slot, err = acquireSlot(filepath.Join(o.StateDir, "slots"), o.Slots, nil); err != nil {
			return false, err
		}
	}
	if w.sigs.stopping() {
		// Told to stop while it looked: the job stays queued, unclaimed, for the
		// next worker (a claimed job would have to run or fail).
		return false, nil
	}
	// RUNNING is the claim written into the child's lock file (which we hold), not a
	// store object: see claimedStatus.
	if err := writeClaim(lock, proc); err != nil {
		if stateDirFault(err) {
			// A full or read-only state directory: every try would fail the same way
			// and the job would wait "for a free slot" for ever. It fails now, saying
			// why, in the store (which is elsewhere, or this write fails too).
			lock.Close()
			w.failUnclaimed(ctx, id, StateDirError(o.StateDir, proc.LockPath, "the job's claim", err))
			return true, nil
		}
		return false, err
	}
	calltrace.Mark("sup.claimed", id)
	err := w.runClaimed(ctx, id, proc)
	os.Remove(filepath.Join(o.Queue, id))
	return true, err
}

// runClaimed runs claimed job id, its cancel requests relayed to it.
func (w *worker) runClaimed(ctx context.Context, id string, proc *job.LocalProcess) error {
	o := w.o
	cancel := make(chan os.Signal, 1)
	w.sigs.route(relayCancel(proc.Workspace, cancel))
	defer w.sigs.route(nil)
	// A batch's children share the worker's tree; a single job gets its own
	// workspace, as under a per-job supervisor, and starts in the tree this worker
	// kept from its last job when it ships the same one, unchanged (TreeCache).
	treeDir, treeCache := w.treeDir(), ""
	if isSingleQueue(o.Queue) {
		treeDir, treeCache = "", w.treeDir()
	}
	err := runOne(ctx, w.st, o.SuperviseOptions, id, proc, cancel, treeDir, treeCache)
	if treeCache != "" && o.warmDir() != "" {
		// The job has ended and its status says so: the next call's spare is
		// leased now, off any call's path (runner.LeaseAhead).
		runner.LeaseAhead()
	}
	return err
}

// failUnclaimed records queued job id FAILED for why, which no worker could claim, and
// takes it out of the queue.
func (w *worker) failUnclaimed(ctx context.Context, id string, why error) {
	fmt.Fprintln(os.Stderr, "kinetic worker:", why)
	s := &job.Status{State: job.Failed, Reason: why.Error()}
	if err := WriteStatus(ctx, w.st, id, s); err != nil {
		fmt.Fprintln(os.Stderr, "kinetic worker: record", id, "failed:", err)
		return // stays queued: a reader judges it
	}
	os.Remove(filepath.Join(w.o.Queue, id))
}

// runGroup serves worker k of batch gid in this process, as `kinetic supervise --group`
// would (groupworker.go), from the queue entry entry: the worker's lock is taken before
// the entry is removed (StartGroup takes the removal as "a live worker serves it"), the
// slot is this supervisor's, and the supervisor's signals go to the batch while it runs.
func (w *worker) runGroup(ctx context.Context, entry, gid string, k int) error {
	o := GroupWorkOptions{SuperviseOptions: w.o.SuperviseOptions, Group: gid, Worker: k}
	o.Ready = nil
	lock, err := lockFile(groupWorkerLock(o), false)
	os.Remove(filepath.Join(w.o.Queue, entry))
	if err != nil {
		return nil // a twin serves it, or the batch is gone
	}
	defer lock.Close()
	if w.slot == nil {
		if w.slot, err = acquireSlot(filepath.Join(o.StateDir, "slots"), o.Slots, nil); err != nil {
			return err
		}
	}
	sig := make(chan os.Signal, 4)
	w.sigs.route(func(s os.Signal) {
		select {
		case sig <- s:
		default:
		}
	})
	if w.sigs.stopping() { // told to stop as it began: the batch's worker stops too
		select {
		case sig <- syscall.SIGTERM:
		default:
		}
	}
	err = workGroup(ctx, o, sig, w.st, w.slot)
	w.sigs.route(nil)
	close(sig)
	return err
}

// A batch child's RUNNING state is its claim: the worker that runs it holds the child's
// supervisor.lock and has written its LocalProcess (JSON) into that file. A reader
// (Status, Cancel) that finds the lock held and the claim written reports RUNNING; one
// that finds the lock free with a claim in it, and no final status.json, knows the
// worker died while the child ran. (The worker writes the final status.json before it
// releases the lock, as a single job's supervisor does.)

// writeClaim records proc in the held lock file f.
func writeClaim(f *os.File, proc *job.LocalProcess) error {
	b, err := json.Marshal(proc)
	if err != nil {
		return err
	}
	if _, err := f.WriteAt(append(b, '\n'), 0); err != nil {
		return fmt.Errorf("claim %s: %w", f.Name(), err)
	}
	return nil
}

// readClaim returns the claim in the lock file f, or nil if there is none. A claim cut
// short by a crash mid-write is still a claim (with what could be read of it).
func readClaim(f *os.File) *job.LocalProcess {
	var buf [4096]byte
	n, _ := f.ReadAt(buf[:], 0)
	if n == 0 {
		return nil
	}
	var p job.LocalProcess
	if json.Unmarshal(bytes.TrimSpace(buf[:n]), &p) != nil {
		p = job.LocalProcess{LockPath: f.Name()}
	}
	return &p
}

func deadWorkerReason(c *job.LocalProcess) string {
	if isSingleQueue(c.Queue) {
		return fmt.Sprintf("the job's supervisor (pid %d) stopped without reporting a result: it was killed or the machine restarted; see %s", c.SupervisorPID, filepath.Join(c.Queue, "workers"))
	}
	return fmt.Sprintf("the batch worker (pid %d) running this job stopped without reporting a result: it was killed or the machine restarted; see %s", c.SupervisorPID, filepath.Join(c.Queue, "workers"))
}

// claimedStatus judges a queued child (no status.json) from its lock file: RUNNING while
// the worker that claimed it holds the lock; FAILED if that worker died; ok is false when
// nobody claimed it (it is still queued).
func (b *Backend) claimedStatus(ctx context.Context, h *job.Handle, ws string) (s *job.Status, ok bool, err error) {
	f, err := filelock.Open(filepath.Join(ws, "supervisor.lock"), os.O_RDONLY, 0)
	if err != nil {
		return nil, false, nil
	}
	defer f.Close()
	// The claim is read before the lock is tried: a queued child's lock is left alone
	// (even a shared lock for a moment would make a worker pass it by).
	c := readClaim(f)
	if c == nil {
		return nil, false, nil // queued, or being claimed right now
	}
	if filelock.Try(f, filelock.Shared) != nil {
		return &job.Status{State: job.Running, Local: c}, true, nil
	}
	// The lock is free: the worker ended. It writes the final status before it lets go.
	if cur, err := ReadStatus(ctx, b.st, h.JobID); err == nil {
		return cur, true, nil
	} else if !store.IsNotFound(err) {
		return nil, true, err
	}
	if kept := keptFinal(ws); kept != nil {
		b.record(ctx, h.JobID, kept)
		return kept, true, nil
	}
	s = &job.Status{State: job.Failed, Reason: deadWorkerReason(c), Local: c}
	b.record(ctx, h.JobID, s)
	return s, true, nil
}

// claimOf reads the claim of the batch child whose workspace is ws (nil if none).
func claimOf(ws string) *job.LocalProcess {
	f, err := filelock.Open(filepath.Join(ws, "supervisor.lock"), os.O_RDONLY, 0)
	if err != nil {
		return nil
	}
	defer f.Close()
	return readClaim(f)
}

// relayCancel turns a SIGUSR1 into a cancel of the running child when its workspace
// holds a cancel request (others may be for a child of another worker), and a signal to
// stop into a cancel of whatever runs.
func relayCancel(ws string, cancel chan<- os.Signal) func(os.Signal) {
	return func(sig os.Signal) {
		if sig == syscall.SIGUSR1 {
			if _, err := os.Stat(filepath.Join(ws, "cancel")); err != nil {
				return
			}
		}
		select {
		case cancel <- sig:
		default: // one is enough
		}
	}
}

// cancelQueued cancels a batch child: a queued one is claimed and marked cancelled here;
// a running one gets a cancel request and its worker a SIGUSR1.
func (b *Backend) cancelQueued(ctx context.Context, h *job.Handle, s *job.Status) (bool, error) {
	p := s.Local
	if s.State == job.Pending {
		lock, err := lockFile(filepath.Join(p.Workspace, "supervisor.lock"), false)
		if err == nil {
			return true, b.cancelUnclaimed(ctx, h, p, lock)
		}
		// Claimed by a worker right now: cancel it as a running child.
		if c := claimOf(p.Workspace); c != nil {
			p = c
		}
	}
	if err := os.WriteFile(filepath.Join(p.Workspace, "cancel"), nil, 0o600); err != nil {
		return false, err
	}
	if p = b.awaitClaimer(ctx, h, p); p != nil && p.SupervisorPID > 0 {
		syscall.Kill(p.SupervisorPID, syscall.SIGUSR1)
	}
	return false, nil
}

// cancelUnclaimed marks a queued child cancelled, its lock held (and closed here), and
// takes it out of its queue; one whose worker died is judged by Status.
func (b *Backend) cancelUnclaimed(ctx context.Context, h *job.Handle, p *job.LocalProcess, lock *os.File) error {
	defer lock.Close()
	cur, err := ReadStatus(ctx, b.st, h.JobID)
	if store.IsNotFound(err) {
		if readClaim(lock) != nil { // its worker died: Status records that
			lock.Close()
			_, _, err := b.Status(ctx, h)
			return err
		}
		cur, err = &job.Status{State: job.Pending}, nil // still only queued
	}
	if err != nil || cur.State != job.Pending {
		return err
	}
	os.Remove(filepath.Join(p.Queue, h.JobID))
	return WriteStatus(ctx, b.st, h.JobID, &job.Status{State: job.Failed, Reason: "cancelled while pending", Local: p})
}

// awaitClaimer is the claim of a child claimed a moment ago: its worker records itself
// in the claim before it starts the child; wait for that, or the request is never
// signalled and the child runs to its end. nil when the child ended meanwhile.
func (b *Backend) awaitClaimer(ctx context.Context, h *job.Handle, p *job.LocalProcess) *job.LocalProcess {
	for i := 0; p.SupervisorPID <= 0 && i < 500; i++ {
		time.Sleep(10 * time.Millisecond)
		if cur, err := ReadStatus(ctx, b.st, h.JobID); err == nil && cur.State.Terminal() {
			return nil
		}
		if c := claimOf(p.Workspace); c != nil {
			p = c
		}
	}
	return p
}

// queuedInGrace judges a queued child whose pool no worker holds (poolServed false): it
// is given a grace period while its entry is queued, since a new worker may be on its way.
func queuedInGrace(p *job.LocalProcess) bool {
	if _, err := os.Stat(filepath.Join(p.Queue, filepath.Base(p.Workspace))); err != nil {
		return false
	}
	return time.Since(p.QueuedAt) < 10*time.Second
}

// queuedProcess describes a child waiting in its group's queue, from the queue entry
// (nil if there is none).
func (b *Backend) queuedProcess(h *job.Handle) *job.LocalProcess {
	if h.GroupID == "" || !job.ValidName(h.GroupID) {
		return nil
	}
	q := b.queueDir(h.GroupID)
	fi, err := os.Stat(filepath.Join(q, h.JobID))
	if err != nil {
		return nil
	}
	return &job.LocalProcess{BootID: bootID(), LockPath: filepath.Join(q, "pool.lock"), Workspace: b.workspace(h.JobID), Queue: q, QueuedAt: fi.ModTime()}
}

// poolServed reports whether a worker holds the queue's pool.lock (at path).
func poolServed(path string) bool {
	f, err := filelock.Open(path, os.O_RDONLY, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	if filelock.Try(f, filelock.Exclusive) != nil {
		return true
	}
	filelock.Unlock(f)
	return false
}
