package local

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kinetic-run/kinetic/batch/driver"
	"github.com/kinetic-run/kinetic/internal/atomicfile"
	"github.com/kinetic-run/kinetic/internal/dirwatch"
	"github.com/kinetic-run/kinetic/internal/filelock"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/jobview"
	"github.com/kinetic-run/kinetic/runner"
	"github.com/kinetic-run/kinetic/store"
)

// Batches run by executors (batch/driver: Modes.Unit). A batch whose children are derived
// (batch/layout: a template and every input in one object, nothing per input) is served
// by up to `parallelism` group workers (`kinetic supervise --group`), each holding a
// slot and one long-lived Python, the batch executor (runner/batchexec.py), that runs
// the inputs one after another: no process, no job objects and no queue entry per
// input. Per input the store gets its log (when it printed), its result.pkl and its
// result.json, and the worker appends the input's index to its done file.
//
// State, under STATE/groups/GID/:
//
//	group.json         the batch's size and its store
//	opener             locked by StartGroup until the inputs are open
//	next               the next input to claim (a decimal number; taken under flock),
//	                   made by StartGroup once a worker surely serves the batch (the
//	                   inputs are open); 1<<62 once withdrawn (a dead StartGroup,
//	                   CleanupGroup)
//	workers/K.lock     held by worker K while it lives
//	workers/K.running  "INDEX PID" of the input worker K runs, "-1 PID" between inputs
//	workers/K.log      worker K's own output (the executor's, not the inputs')
//	done/K             the inputs worker K finished, one index per line
//
// An input's state: its result.json (or a final status.json: cancelled) decides; else
// RUNNING while a live worker says it runs it, or has claimed it; PENDING while it is
// not claimed and a worker lives; FAILED when no worker is left to run it.

// groupInfo is group.json.
type groupInfo struct {
	Store     string `json:"store"`
	Size      int    `json:"size"`
	Isolation string `json:"isolation"`
}

func (b *Backend) groupDir(gid string) string { return filepath.Join(b.o.StateDir, "groups", gid) }

// Modes implements driver.Driver: every child not run by executors goes to the queue
// of warm workers (pool.go).
func (b *Backend) Modes(h *job.Handle, spec *job.Spec) driver.Modes {
	return driver.Modes{Unit: b.canGroup(spec), Queue: true}
}

// canGroup says whether executors run a batch of spec: Python functions without Data,
// debugging, an install at start or a container, in a store on this machine, unless
// batch_isolation is "job".
func (b *Backend) canGroup(spec *job.Spec) bool {
	return b.o.Isolation != IsolationJob && b.st.LocalDir() != "" && runner.CanRunBatch(spec) == nil &&
		spec.Container == "" // a job per input, each in its container (container.go)
}

// IsolationJob (batch_isolation = "job") runs every input of a batch as a job of its own
// through the queue (pool.go), each in a warm forked child.
const IsolationJob = "job"

// StartGroup implements driver.Driver: record the batch and start its workers.
func (b *Backend) StartGroup(ctx context.Context, g driver.Group, template *job.Handle) error {
	if !job.ValidName(g.ID) {
		return fmt.Errorf("local backend: invalid group ID %q", g.ID)
	}
	dir := b.groupDir(g.ID)
	if err := b.prepareGroup(dir, g.ID); err != nil {
		return err
	}
	// The inputs stay closed (no next) until a worker surely serves the batch, and
	// opener's lock is held until then: a worker waits on it, and if this process dies
	// first (the engine killed while it starts the batch) the workers withdraw the batch
	// instead of running it (awaitOpen), so that whoever submitted it may say nothing ran.
	opener, err := filelock.Open(filepath.Join(dir, openerName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return StateDirError(b.o.StateDir, filepath.Join(dir, openerName), "the batch's local state", err)
	}
	defer opener.Close()
	if err := filelock.Wait(opener, filelock.Exclusive); err != nil {
		return fmt.Errorf("local backend: %w", err)
	}
	iso := b.o.Isolation
	if iso == "" {
		iso = runner.IsolationWorker
	}
	info, _ := json.Marshal(groupInfo{Store: b.st.URL(), Size: g.Size, Isolation: iso})
	if err := os.WriteFile(filepath.Join(dir, "group.json"), info, 0o600); err != nil {
		return StateDirError(b.o.StateDir, filepath.Join(dir, "group.json"), "the batch's local state", err)
	}
	return b.startWorkers(ctx, g, dir)
}

// prepareGroup makes the batch's local state directories and, in the store's ends/,
// the logs its inputs' envelopes go to, before any worker starts: a reader waiting for
// an input watches it from the first look (jobview).
func (b *Backend) prepareGroup(dir, gid string) error {
	for _, d := range []string{filepath.Join(dir, "workers"), filepath.Join(dir, "done")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return StateDirError(b.o.StateDir, d, "the batch's local state", err)
		}
	}
	if err := b.st.PrepareEnds(gid); err != nil {
		return fmt.Errorf("local backend: %w", err)
	}
	return nil
}

// startWorkers has the batch served by its workers: idle long-lived supervisors, and
// processes started for the rest. The inputs open as soon as one worker surely serves
// the batch: the others join it as they come, and a batch that started runs on without
// this process.
func (b *Backend) startWorkers(ctx context.Context, g driver.Group, dir string) error {
	n := max(1, min(g.Parallelism, b.o.Slots, g.Size))
	left := make([]int, n)
	for k := range left {
		left[k] = k
	}
	var once sync.Once
	var openErr error
	open := func() { once.Do(func() { openErr = openInputs(dir) }) }
	if !b.o.PerJobSupervisor {
		// Long-lived supervisors that are idle serve the batch (no exec, pool.go:
		// runGroup); the workers none of them took within groupHandOff are started.
		left = b.queueGroupWorkers(g.ID, n, open)
	}
	errs := b.spawnGroupWorkers(ctx, g.ID, dir, left, open)
	started := len(left) < n // served by the supervisors that took it
	for _, err := range errs {
		started = started || err == nil // the ones that started serve the batch
	}
	if !started {
		return errs[0]
	}
	open()
	return openErr
}

// spawnGroupWorkers starts workers ks side by side: each start is an exec of this
// binary, and the batch waits for the last of them otherwise. They are started before
// this returns (none comes late, after the others were judged gone); open is called as
// each starts.
func (b *Backend) spawnGroupWorkers(ctx context.Context, gid, dir string, ks []int, open func()) []error {
	errs := make([]error, len(ks))
	var wg sync.WaitGroup
	for i, k := range ks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := strconv.Itoa(k)
			if errs[i] = b.spawn(ctx, filepath.Join(dir, "workers", w+".log"), "--group", gid, "--worker", w); errs[i] == nil {
				open()
			}
		}()
	}
	wg.Wait()
	return errs
}

// openerName is the file StartGroup holds locked until the batch's inputs are open.
const openerName = "opener"

// openInputs lets the workers claim the batch's inputs (next made, nothing claimed). A
// batch withdrawn meanwhile stays withdrawn.
func openInputs(dir string) error {
	err := atomicfile.Create(filepath.Join(dir, "next"), []byte(fmt.Sprintf("%-20d\n", 0)), 0o600, 0o700)
	if errors.Is(err, atomicfile.ErrExists) {
		if n, rerr := readClaimed(filepath.Join(dir, "next")); rerr == nil && n >= withdrawn {
			return fmt.Errorf("local backend: batch %s was withdrawn as it started", filepath.Base(dir))
		}
		return nil // opened already (StartGroup again)
	}
	if err != nil {
		return fmt.Errorf("local backend: %w", err)
	}
	return nil
}

// withdrawn is what next holds once no input may be claimed any more.
const withdrawn = 1 << 62

// withdrawInputs closes the batch's inputs for good unless they were opened: started
// says they were (by StartGroup), and then nothing changes.
func withdrawInputs(dir string) (started bool, err error) {
	next := filepath.Join(dir, "next")
	err = atomicfile.Create(next, []byte(fmt.Sprintf("%-20d\n", withdrawn)), 0o600, 0o700)
	if errors.Is(err, atomicfile.ErrExists) {
		n, err := readClaimed(next)
		return err == nil && n < withdrawn, err
	}
	return false, err
}

// awaitOpen waits until the batch's inputs are open and returns next, locked by no one.
// While StartGroup runs they are closed and it holds the opener's lock; if that lock
// goes (its process died) with the inputs still closed, the batch is withdrawn here, and
// every claim after finds nothing left.
func awaitOpen(dir string) (*os.File, error) {
	path := filepath.Join(dir, "next")
	for {
		f, err := filelock.Open(path, os.O_RDWR, 0o600)
		if !errors.Is(err, os.ErrNotExist) {
			return f, err
		}
		o, err := filelock.Open(filepath.Join(dir, openerName), os.O_RDONLY, 0)
		if errors.Is(err, os.ErrNotExist) {
			if _, err := os.Stat(filepath.Join(dir, "group.json")); err != nil {
				return nil, err // the batch is gone
			}
			if err := openInputs(dir); err != nil { // started by a build without the opener
				return nil, err
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		err = filelock.Wait(o, filelock.Shared)
		o.Close()
		if err != nil {
			return nil, err
		}
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			if _, err := withdrawInputs(dir); err != nil {
				return nil, err
			}
		}
	}
}

// groupHandOff is how long StartGroup waits for long-lived supervisors to take a
// batch's workers before it starts processes for the rest.
const groupHandOff = 100 * time.Millisecond

// groupEntry names worker k of batch gid in the queue of single jobs.
func groupEntry(gid string, k int) string { return gid + "-" + strconv.Itoa(k) }

// parseGroupEntry splits a queue entry made by groupEntry (ok false: a job's entry).
func parseGroupEntry(name string) (gid string, k int, ok bool) {
	i := strings.LastIndexByte(name, '-')
	if i < 0 || !strings.HasPrefix(name, job.GroupPrefix) || !job.ValidID(name[:i]) {
		return "", 0, false
	}
	k, err := strconv.Atoi(name[i+1:])
	if err != nil || k < 0 {
		return "", 0, false
	}
	return name[:i], k, true
}

// queueGroupWorkers queues workers 0..n-1 of batch gid for the long-lived supervisors
// and returns the ones none took within groupHandOff (their entries removed: StartGroup
// starts them). A supervisor removes an entry once it holds that worker's lock (or
// found it held), so a taken entry is a live worker, as a started one is.
func (b *Backend) queueGroupWorkers(gid string, n int, open func()) []int {
	all := make([]int, n)
	for k := range all {
		all[k] = k
	}
	q := b.singleQueue()
	if err := os.MkdirAll(filepath.Join(q, "workers"), 0o700); err != nil {
		return all
	}
	entry := func(k int) string { return filepath.Join(q, groupEntry(gid, k)) }
	var left, queued []int
	for _, k := range all {
		if os.WriteFile(entry(k), nil, 0o644) == nil {
			queued = append(queued, k)
		} else {
			left = append(left, k)
		}
	}
	if err := b.ensureFresh(q, b.o.Slots); err != nil {
		for _, k := range queued {
			os.Remove(entry(k))
		}
		return all
	}
	for _, k := range awaitTaken(queued, entry, open) {
		// Still queued: removed here, it is ours to start (a supervisor that read the
		// entry already and takes the lock first makes the started one give way).
		if os.Remove(entry(k)) == nil {
			left = append(left, k)
		} else {
			open() // taken as the wait ended
		}
	}
	return left
}

// awaitTaken waits up to groupHandOff for supervisors to take the queued workers
// (their entry files removed), calling open once one is, and returns those left.
func awaitTaken(queued []int, entry func(int) string, open func()) []int {
	for deadline := time.Now().Add(groupHandOff); len(queued) > 0; time.Sleep(time.Millisecond) {
		var waiting []int
		for _, k := range queued {
			if _, err := os.Stat(entry(k)); err == nil {
				waiting = append(waiting, k)
			}
		}
		if len(waiting) < len(queued) {
			open() // taken: a live worker serves the batch
		}
		queued = waiting
		if time.Now().After(deadline) {
			break
		}
	}
	return queued
}

// GroupWatch implements driver.Waker: a watch of the batch's done/, where each
// worker appends every input it finishes (inotify, writes included).
func (b *Backend) GroupWatch(gid string) driver.GroupWatch {
	if w := dirwatch.NewWrites(filepath.Join(b.groupDir(gid), "done")); w != nil {
		return w
	}
	return nil
}

// GroupDone implements driver.Driver: the done files of the batch's workers.
func (b *Backend) GroupDone(ctx context.Context, gid string) (map[int]bool, error) {
	out := map[int]bool{}
	err := b.doneLines(gid, func(_ string, line []byte) bool {
		if i, err := strconv.Atoi(string(line)); err == nil {
			out[i] = true
		}
		return true
	})
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	// Inputs that will never be in a done file: the one a worker ran when it died, and,
	// once no worker is left, every one (their status says how they ended, or that the
	// workers stopped first).
	live, dead := b.workers(gid)
	for _, w := range dead {
		if w.running >= 0 {
			out[w.running] = true
		}
	}
	if len(live) == 0 {
		var info groupInfo
		if raw, err := os.ReadFile(filepath.Join(b.groupDir(gid), "group.json")); err == nil && json.Unmarshal(raw, &info) == nil {
			for i := 0; i < info.Size; i++ {
				out[i] = true
			}
		}
	}
	return out, nil
}

// doneBy says whether a worker of batch gid wrote input i down as finished in its done
// file, and which (the file's name).
func (b *Backend) doneBy(gid string, i int) (string, bool) {
	want := []byte(strconv.Itoa(i))
	by := ""
	b.doneLines(gid, func(file string, line []byte) bool {
		if bytes.Equal(line, want) {
			by = file
			return false
		}
		return true
	})
	return by, by != ""
}

// doneLines calls f with each whole line of the done files of batch gid's workers (a
// line still being written is not whole), and the file's name, until f returns false.
func (b *Backend) doneLines(gid string, f func(file string, line []byte) bool) error {
	dir := filepath.Join(b.groupDir(gid), "done")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		raw, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		for len(raw) > 0 {
			line, rest, ok := bytes.Cut(raw, []byte{'\n'})
			if !ok {
				break // being written
			}
			if !f(e.Name(), line) {
				return nil
			}
			raw = rest
		}
	}
	return nil
}

// UnwrittenStatus implements driver.Driver.
func (b *Backend) UnwrittenStatus(ctx context.Context, h *job.Handle) (job.State, string, error) {
	if s, r, ok, err := b.groupStatus(ctx, h, false); ok || err != nil {
		return s, r, err
	}
	return job.NotFound, "", nil // its batch's state is gone: nothing runs it
}

// CleanupGroup implements driver.Driver: stop the batch's workers (the inputs they run
// fail as cancelled) and remove its state.
func (b *Backend) CleanupGroup(ctx context.Context, gid string) error {
	dir := b.groupDir(gid)
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	// No input is claimed any more.
	if err := claimAll(filepath.Join(dir, "next")); err != nil {
		return err
	}
	// Stop: the stop file, then SIGUSR1 (a long-lived supervisor serving the batch runs
	// other jobs afterwards: a SIGTERM would reach the next one; SIGUSR1 without a
	// request is ignored).
	if err := os.WriteFile(filepath.Join(dir, stopName), nil, 0o600); err != nil {
		return err
	}
	for _, w := range b.liveWorkers(gid) {
		syscall.Kill(w.pid, syscall.SIGUSR1)
	}
	deadline := time.Now().Add(b.o.Grace + 5*time.Second)
	for len(b.liveWorkers(gid)) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	return os.RemoveAll(dir)
}

// WithdrawGroup implements driver.Withdrawer: the batch's inputs are closed for
// good unless StartGroup opened them; its workers, waiting for them, then leave having
// run nothing.
func (b *Backend) WithdrawGroup(ctx context.Context, gid string) (bool, error) {
	if !job.ValidName(gid) {
		return false, fmt.Errorf("local backend: invalid group ID %q", gid)
	}
	dir := b.groupDir(gid)
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return false, nil // never started here
	}
	started, err := withdrawInputs(dir)
	if err != nil {
		return false, fmt.Errorf("local backend: %w", err)
	}
	return started, nil
}

// groupChild says whether h is an input of a batch this machine runs by executors.
func (b *Backend) groupChild(h *job.Handle) (gid string, i int, ok bool) {
	gid, i, ok = job.ParseChildID(h.JobID)
	if !ok {
		return "", 0, false
	}
	if _, err := os.Stat(filepath.Join(b.groupDir(gid), "group.json")); err != nil {
		return "", 0, false
	}
	return gid, i, true
}

// groupStatus is the state of input h of a batch run by executors (ok false: h is not
// one).
// noStatus says the caller read status.json and found none.
func (b *Backend) groupStatus(ctx context.Context, h *job.Handle, noStatus bool) (job.State, string, bool, error) {
	gid, i, ok := b.groupChild(h)
	if !ok {
		return "", "", false, nil
	}
	if s, r, ok, err := b.groupEnd(ctx, gid, i, h.JobID, noStatus); ok || err != nil {
		return s, r, true, err
	}
	if k, done := b.doneBy(gid, i); done {
		s, r, err := b.finishedInputStatus(ctx, gid, i, h.JobID, k, noStatus)
		return s, r, true, err
	}
	live, dead := b.workers(gid)
	if s, r, ok, err := b.workerInputStatus(ctx, gid, i, h.JobID, live, dead); ok || err != nil {
		return s, r, true, err
	}
	s, r, err := b.unservedInputStatus(ctx, gid, i, h.JobID, len(live) > 0)
	return s, r, true, err
}

// finishedInputStatus is the state of input i its worker finished (done/k says so), and
// had written its result.json (or kept it) before saying so. Read again: the first read
// may have come just before the worker wrote it and the look at done/ just after.
func (b *Backend) finishedInputStatus(ctx context.Context, gid string, i int, id, k string, noStatus bool) (job.State, string, error) {
	if s, r, ok, err := b.groupEnd(ctx, gid, i, id, noStatus); ok || err != nil {
		return s, r, err
	}
	// The file is gone since, which its reason must name, not a worker.
	if err := jobview.MissingEnvelope(ctx, b.st, id); err != nil {
		return "", "", err
	}
	objs, err := b.st.List(ctx, store.JobPrefix(id))
	if err != nil {
		return "", "", err
	}
	if len(objs) == 0 {
		// Nothing of it is left: removed (collected, cleaned up) and the marker
		// that says so is gone, or removed by hand.
		return "", "", job.DamagedError(fmt.Sprintf("job %s is damaged: its batch's worker finished it, but none of its objects is left, neither its %s nor the marker that it was removed (%s); `kinetic jobs cleanup %s` removes it", id, store.EnvelopeKey(id), store.GroupGoneKey(gid, i), id))
	}
	return "", "", job.Missing(id, store.ObjectName(id, store.EnvelopeKey(id)), fmt.Sprintf("the batch's worker finished this input and wrote it first, as %s says", filepath.Join(b.groupDir(gid), "done", k)))
}

// workerInputStatus is the state of input i when a worker, live or dead, runs it (ok).
func (b *Backend) workerInputStatus(ctx context.Context, gid string, i int, id string, live, dead []workerState) (job.State, string, bool, error) {
	for _, w := range live {
		if w.running == i {
			return job.Running, "", true, nil
		}
	}
	for _, w := range dead {
		if w.running != i {
			continue
		}
		if s, r, ok, err := b.groupEnd(ctx, gid, i, id, false); ok || err != nil {
			return s, r, true, err // it ended as its worker stopped
		}
		return job.Failed, fmt.Sprintf("the batch's worker (pid %d) stopped while it ran this input (killed, or the machine restarted); see %s", w.pid, filepath.Join(b.groupDir(gid), "workers")), true, nil
	}
	return "", "", false, nil
}

// unservedInputStatus is the state of input i that no worker runs: claimed or waiting
// while workers live; else it ended as the last one left, or the workers stopped first.
func (b *Backend) unservedInputStatus(ctx context.Context, gid string, i int, id string, anyLive bool) (job.State, string, error) {
	next, err := readClaimed(filepath.Join(b.groupDir(gid), "next"))
	if err != nil {
		return "", "", err
	}
	switch {
	case anyLive && i < next:
		return job.Running, "", nil // claimed: about to run, or its result is being written
	case anyLive:
		return job.Pending, "", nil
	}
	// No worker: read again (the last one may have finished it as it left).
	if s, r, ok, err := b.groupEnd(ctx, gid, i, id, false); ok || err != nil {
		return s, r, err
	}
	// Not written down: the verdict follows from the workers' state each time it is
	// asked, and a job cleaned up meanwhile is not made again by a status.json.
	reason := fmt.Sprintf("the batch's workers stopped before this input finished (killed, or the machine restarted); see %s", filepath.Join(b.groupDir(gid), "workers"))
	if i < next {
		reason = fmt.Sprintf("the batch's worker stopped while it ran this input (killed, or the machine restarted); see %s", filepath.Join(b.groupDir(gid), "workers"))
	}
	return job.Failed, reason, nil
}

// groupEnd is recordedEnd for input i of batch gid, or else the envelope its worker
// kept because the store would not take it (groupWorker.finish).
func (b *Backend) groupEnd(ctx context.Context, gid string, i int, id string, noStatus bool) (job.State, string, bool, error) {
	if s, r, ok, err := b.recordedEnd(ctx, id, noStatus); ok || err != nil {
		return s, r, ok, err
	}
	raw, err := os.ReadFile(keptEndPath(b.groupDir(gid), i))
	if err != nil {
		return "", "", false, nil
	}
	env, err := job.DecodeEnvelope(raw)
	if err != nil {
		return "", "", false, nil
	}
	s := outcome(env, nil, false)
	return s.State, s.Reason, true, nil
}

// recordedEnd reads how job id ended from the store: a final status.json (cancelled, or
// judged; not read again when noStatus says there is none), else its result.json.
func (b *Backend) recordedEnd(ctx context.Context, id string, noStatus bool) (job.State, string, bool, error) {
	if noStatus {
	} else if s, err := ReadStatus(ctx, b.st, id); err == nil && s.State.Terminal() {
		return s.State, s.Reason, true, nil
	} else if err != nil && !store.IsNotFound(err) {
		return "", "", false, err
	}
	raw, err := b.st.Get(ctx, store.EnvelopeKey(id))
	if store.IsNotFound(err) {
		return "", "", false, nil
	}
	if err != nil {
		return "", "", false, err
	}
	env, err := job.DecodeEnvelope(raw)
	if err != nil || len(raw) == 0 {
		return "", "", false, job.Damaged(id, store.ObjectName(id, store.EnvelopeKey(id)), raw, err) // as jobview.Recorded
	}
	s := outcome(env, nil, false)
	return s.State, s.Reason, true, nil
}

// cancelGroupChild cancels input h of a batch run by executors: FAILED "cancelled" is
// recorded first (a worker that has not claimed it skips it), then the worker that runs
// it, if any, is told to stop it.
func (b *Backend) cancelGroupChild(ctx context.Context, h *job.Handle, gid string, i int) error {
	if _, _, ok, err := b.recordedEnd(ctx, h.JobID, true); ok || err != nil {
		return err
	}
	if err := WriteStatus(ctx, b.st, h.JobID, &job.Status{State: job.Failed, Reason: "cancelled"}); err != nil {
		return err
	}
	for _, w := range b.liveWorkers(gid) {
		if w.running == i {
			syscall.Kill(w.pid, syscall.SIGUSR1)
		}
	}
	return nil
}

// workerState is what a batch's worker says it runs (running -1: nothing).
type workerState struct {
	pid, running int
}

// liveWorkers returns the workers of batch gid whose lock is held, with what they run.
func (b *Backend) liveWorkers(gid string) []workerState {
	live, _ := b.workers(gid)
	return live
}

// workers returns the workers of batch gid that live (their lock is held) and the ones
// that are gone, each with what it runs or ran last.
func (b *Backend) workers(gid string) (live, dead []workerState) {
	dir := filepath.Join(b.groupDir(gid), "workers")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil
	}
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".lock")
		if !ok {
			continue
		}
		f, err := filelock.Open(filepath.Join(dir, e.Name()), os.O_RDONLY, 0)
		if err != nil {
			continue
		}
		err = filelock.Try(f, filelock.Shared)
		if err == nil {
			filelock.Unlock(f)
		}
		f.Close()
		w := workerState{running: -1}
		if raw, err := os.ReadFile(filepath.Join(dir, name+".running")); err == nil {
			fmt.Sscanf(string(raw), "%d %d", &w.running, &w.pid)
		}
		if errors.Is(err, filelock.ErrLocked) {
			live = append(live, w)
		} else {
			dead = append(dead, w) // free: that worker is gone
		}
	}
	return live, dead
}

// claim takes the next input of a batch of size n under the lock of f, the claim file:
// ok is false when every input is claimed.
func claim(f *os.File, n int) (i int, ok bool, err error) {
	if err := filelock.Wait(f, filelock.Exclusive); err != nil {
		return 0, false, err
	}
	defer filelock.Unlock(f)
	var buf [24]byte
	k, _ := f.ReadAt(buf[:], 0)
	next, _ := strconv.Atoi(strings.TrimSpace(string(buf[:k])))
	if next >= n {
		return 0, false, nil
	}
	if _, err := f.WriteAt([]byte(fmt.Sprintf("%-20d\n", next+1)), 0); err != nil {
		return 0, false, err
	}
	return next, true, nil
}

// claimAll marks every input claimed: no worker takes another.
func claimAll(path string) error {
	started, err := withdrawInputs(filepath.Dir(path))
	if err != nil || !started {
		return err // never opened: withdrawn, every input claimed
	}
	f, err := filelock.Open(path, os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := filelock.Wait(f, filelock.Exclusive); err != nil {
		return err
	}
	_, err = f.WriteAt([]byte(fmt.Sprintf("%-20d\n", withdrawn)), 0)
	return err
}

// readClaimed reads the claim file: how many inputs were claimed.
func readClaimed(path string) (int, error) {
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(raw)))
	return n, nil
}

// Release implements driver.Driver: a local job holds nothing once it has ended.
func (b *Backend) Release(ctx context.Context, h *job.Handle) error { return nil }

var (
	_ driver.Driver     = (*Backend)(nil)
	_ driver.Withdrawer = (*Backend)(nil)
)
