package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/kinetic-run/kinetic/internal/calltrace"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kinetic-run/kinetic/batch/layout"
	"github.com/kinetic-run/kinetic/internal/atomicfile"
	"github.com/kinetic-run/kinetic/internal/outdir"
	"github.com/kinetic-run/kinetic/internal/seconds"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/jobview"
	"github.com/kinetic-run/kinetic/runner"
	"github.com/kinetic-run/kinetic/store"
)

// GroupWorkOptions are the arguments of `kinetic supervise --group`.
type GroupWorkOptions struct {
	SuperviseOptions
	Group  string
	Worker int
}

// groupWorkerLock is the lock worker o.Worker of batch o.Group holds while it lives.
func groupWorkerLock(o GroupWorkOptions) string {
	return filepath.Join(o.StateDir, "groups", o.Group, "workers", strconv.Itoa(o.Worker)+".lock")
}

// WorkGroup serves batch o.Group as worker o.Worker (group.go) in a process of its own
// (`kinetic supervise --group`): it takes a slot, starts an executor and runs inputs
// until none is left to claim.
func WorkGroup(ctx context.Context, o GroupWorkOptions) error {
	ctx = context.WithoutCancel(ctx) // cancellation is by signal
	lock, err := lockFile(groupWorkerLock(o), false)
	if err != nil {
		if o.Ready != nil {
			o.Ready.Close()
		}
		return nil // a twin serves this slot of the batch
	}
	defer lock.Close()
	sig := make(chan os.Signal, 4)
	signal.Notify(sig, syscall.SIGUSR1, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	if o.Ready != nil {
		o.Ready.WriteString("ready\n")
		o.Ready.Close()
	}
	return workGroup(ctx, o, sig, nil, nil)
}

// workGroup serves the batch as worker o.Worker, whose lock the caller holds, until
// no input is left to claim. Signals arrive on sig (closed by the caller once this has
// returned). st and slot, if set, are the caller's (a long-lived supervisor's: pool.go,
// runGroup); otherwise the store is opened and a slot taken here.
func workGroup(ctx context.Context, o GroupWorkOptions, sig <-chan os.Signal, st *store.Store, slot *os.File) error {
	dir := filepath.Join(o.StateDir, "groups", o.Group)
	w := strconv.Itoa(o.Worker)
	gw := &groupWorker{o: o, dir: dir, running: filepath.Join(dir, "workers", w+".running"), current: -1, term: make(chan os.Signal, 1), mayBeKept: true,
		outs: outdir.NewSpare()}
	defer gw.close()
	gw.setRunning(-1)
	go gw.signals(sig)
	if st == nil {
		var err error
		if st, err = store.Open(ctx, o.StoreURL); err != nil {
			return gw.failAll(ctx, err)
		}
		defer st.Close()
	}
	if err := gw.open(ctx, st, w); err != nil {
		return gw.failAll(ctx, err)
	}
	if slot == nil {
		s, err := acquireSlot(filepath.Join(o.StateDir, "slots"), o.Slots, gw.term)
		if err != nil {
			return nil // stopped while waiting (CleanupGroup)
		}
		defer s.Close()
	}
	tree := filepath.Join(dir, "workers", w+".tree")
	defer os.RemoveAll(tree) // the shipped tree: this worker's copy, for this batch only
	if err := gw.prepare(ctx, tree); err != nil {
		return gw.failAll(ctx, err)
	}
	defer func() {
		if gw.x != nil {
			gw.x.Close()
		}
	}()
	var err error
	if gw.next, err = awaitOpen(dir); err != nil {
		return gw.failAll(ctx, err)
	}
	return gw.serve(ctx)
}

// open takes st as the worker's store, opens its envelopes' log (a log of this worker
// w's on a file store, not a file each) and loads the batch.
func (gw *groupWorker) open(ctx context.Context, st *store.Store, w string) error {
	gw.mu.Lock()
	gw.st = st
	gw.mu.Unlock()
	ends, err := st.OpenEndsLog(gw.o.Group, w)
	if err != nil {
		return err
	}
	gw.ends = ends
	return gw.load(ctx)
}

// prepare prepares the batch's runs, its shipped tree at tree.
func (gw *groupWorker) prepare(ctx context.Context, tree string) error {
	o := gw.o
	batch, err := runner.PrepareBatch(ctx, gw.st, gw.t.Spec, gw.env, gw.isolation, runner.Options{
		Store: gw.st, StoreURL: o.StoreURL, JobID: job.ChildID(o.Group, 0), TreeDir: tree,
		Python: o.Python.Interpreter, EnvDir: filepath.Join(o.StateDir, "envs"), Grace: o.Grace,
		// The executor is a child of the warm server, as a single job's call is.
		WarmDir: o.warmDir(), WarmIdle: o.Python.WarmIdle, MinimalEnv: true,
	}, os.Stderr)
	if err != nil {
		return err
	}
	gw.batch = batch
	return nil
}

// serve runs the inputs it claims until none is left, or it is told to stop.
func (gw *groupWorker) serve(ctx context.Context) error {
	for {
		i, ok, err := claim(gw.next, gw.size)
		if err != nil {
			return err
		}
		if !ok || gw.stopping() {
			return nil
		}
		if err := gw.run(ctx, i); err != nil {
			return err
		}
	}
}

// groupWorker is one group worker's state.
type groupWorker struct {
	o           GroupWorkOptions
	dir         string
	running     string // workers/K.running
	runningFile *os.File
	st          *store.Store
	t           *layout.Template
	env         map[string]string // the variables the batch captured (layout.ReadEnv)
	size        int
	inputs      *layout.Inputs
	isolation   string
	batch       *runner.Batch
	x           *runner.Executor
	done        *os.File
	next        *os.File       // the claim counter, kept open (claim)
	outs        *outdir.Spare  // the inputs' default output directories
	ends        *store.EndsLog // where the envelopes go (nil: a Put each)
	// mayBeKept: envelopes kept by finish may wait in ended/ (this worker kept one, or
	// one before it may have): flushKept looks there only then, not after every input.
	mayBeKept bool

	mu      sync.Mutex
	current int  // the input being run (-1: none)
	killed  bool // the executor was stopped on purpose (cancel, time limit, SIGTERM)
	term    chan os.Signal
	stopped bool
}

// load reads the batch: its template, captured environment, size and isolation, and
// every input.
func (gw *groupWorker) load(ctx context.Context) error {
	var info groupInfo
	raw, err := os.ReadFile(filepath.Join(gw.dir, "group.json"))
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, &info); err != nil {
		return fmt.Errorf("group.json: %w", err)
	}
	gw.size, gw.isolation = info.Size, info.Isolation
	if gw.done, err = os.OpenFile(filepath.Join(gw.dir, "done", strconv.Itoa(gw.o.Worker)), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600); err != nil {
		return err
	}
	if gw.t, err = layout.ReadTemplate(ctx, gw.st, gw.o.Group); err != nil {
		return err
	}
	if gw.env, err = layout.ReadEnv(ctx, gw.st, gw.o.Group, gw.t); err != nil {
		return err
	}
	return gw.loadInputs(ctx)
}

// loadInputs reads inputs.bin whole unless it is large (then each input is read with
// ranged reads: every worker holding a batch of big arrays would not fit in memory).
func (gw *groupWorker) loadInputs(ctx context.Context) error {
	if n, err := gw.st.Size(ctx, store.GroupInputsKey(gw.o.Group)); err == nil && n > maxInputsInMemory {
		return nil
	}
	raw, err := gw.st.Get(ctx, store.GroupInputsKey(gw.o.Group))
	if err != nil {
		return fmt.Errorf("batch %s: read its inputs: %w", gw.o.Group, err)
	}
	if gw.inputs, err = layout.ParseInputs(raw); err != nil {
		return fmt.Errorf("batch %s: %w", gw.o.Group, err)
	}
	if gw.inputs.Len() != gw.size {
		return fmt.Errorf("batch %s: inputs.bin holds %d inputs, not %d", gw.o.Group, gw.inputs.Len(), gw.size)
	}
	return nil
}

// maxInputsInMemory is the largest inputs.bin a worker reads whole.
const maxInputsInMemory = 64 << 20

// input returns input i's bytes.
func (gw *groupWorker) input(ctx context.Context, i int) ([]byte, error) {
	if gw.inputs == nil {
		return layout.ReadInput(ctx, gw.st, gw.o.Group, i)
	}
	b, err := gw.inputs.At(i)
	if err != nil {
		return nil, fmt.Errorf("batch %s: %w", gw.o.Group, err)
	}
	return b, nil
}

// setRunning says which input this worker runs (-1: none) in workers/K.running, kept
// open and rewritten in place (fixed width).
func (gw *groupWorker) setRunning(i int) {
	if gw.runningFile == nil {
		f, err := os.OpenFile(gw.running, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
		if err != nil {
			return
		}
		gw.runningFile = f
	}
	var b [32]byte // "%-20d %-10d\n"
	line := strconv.AppendInt(b[:0], int64(i), 10)
	for len(line) < 20 {
		line = append(line, ' ')
	}
	line = append(line, runningPID...)
	gw.runningFile.WriteAt(line, 0)
}

// runningPID ends a line of workers/K.running: " PID" padded to ten places, "\n".
var runningPID = fmt.Sprintf(" %-10d\n", selfPID)

// notRunning says that no input runs (before one ran).
func (gw *groupWorker) notRunning() {
	gw.mu.Lock()
	gw.current = -1
	gw.mu.Unlock()
	gw.setRunning(-1)
}

// selfPID is this process's pid, asked once (os.Getpid is a system call each time).
var selfPID = os.Getpid()

// signals: SIGUSR1 stops the current input if it was cancelled; SIGTERM stops it and
// the worker.
func (gw *groupWorker) signals(sig <-chan os.Signal) {
	for s := range sig {
		gw.signal(s)
	}
}

// signal handles one signal: SIGTERM (or SIGUSR1 with the batch's stop file, from
// CleanupGroup) stops the worker and kills the input running; SIGUSR1 alone kills the
// input running when a cancel recorded its end.
func (gw *groupWorker) signal(s os.Signal) {
	stopFile := false
	if s == syscall.SIGUSR1 {
		_, err := os.Stat(filepath.Join(gw.dir, stopName))
		stopFile = err == nil
	}
	gw.mu.Lock()
	cur, x, st := gw.current, gw.x, gw.st
	stop := s != syscall.SIGUSR1 || stopFile
	if stop {
		gw.stopped = true
		select {
		case gw.term <- s:
		default:
		}
	}
	gw.mu.Unlock()
	if cur < 0 || x == nil {
		return
	}
	if stop || st != nil && jobview.FinalStatus(context.Background(), st, job.ChildID(gw.o.Group, cur)) != nil {
		gw.mu.Lock()
		gw.killed = true
		gw.mu.Unlock()
		x.Kill()
	}
}

// stopName is the file CleanupGroup makes in a batch's directory before it signals the
// workers (SIGUSR1) to stop: a long-lived supervisor that serves a batch in-process must
// not get SIGTERM, which would reach the job it runs next.
const stopName = "stop"

// close closes the files the worker keeps open (a long-lived supervisor goes on).
func (gw *groupWorker) close() {
	if gw.runningFile != nil {
		gw.setRunning(-1) // between turns it runs nothing of this batch
	}
	gw.outs.Close()
	gw.ends.Close()
	for _, f := range []*os.File{gw.runningFile, gw.done, gw.next} {
		if f != nil {
			f.Close()
		}
	}
}

func (gw *groupWorker) stopping() bool {
	gw.mu.Lock()
	defer gw.mu.Unlock()
	return gw.stopped
}

// run runs input i and records how it ended.
func (gw *groupWorker) run(ctx context.Context, i int) error {
	id := job.ChildID(gw.o.Group, i)
	defer gw.markDone(i)
	if gone, err := layout.Gone(ctx, gw.st, gw.o.Group, i); err != nil || gone {
		return err
	}
	args, err := gw.input(ctx, i)
	if err != nil {
		return gw.finish(ctx, id, runner.FailureEnvelope(err), time.Now(), time.Time{})
	}
	started := time.Now().UTC()
	if err := gw.ensureExecutor(); err != nil {
		return gw.finish(ctx, id, runner.FailureEnvelope(err), started, time.Time{})
	}
	return gw.runInput(ctx, i, args, started)
}

// ensureExecutor starts the batch's executor when none runs.
func (gw *groupWorker) ensureExecutor() error {
	if gw.x != nil {
		return nil
	}
	x, err := gw.batch.Start(os.Stderr)
	if err != nil {
		return err
	}
	gw.mu.Lock()
	gw.x = x
	gw.mu.Unlock()
	return nil
}

// runInput calls input i (its arguments args) in the executor, and records its end.
func (gw *groupWorker) runInput(ctx context.Context, i int, args []byte, started time.Time) error {
	id := job.ChildID(gw.o.Group, i)
	h := gw.t.ChildHandle(gw.o.Group, i)
	in := runner.Input{JobID: id}
	if filepath.IsAbs(h.OutputDir) {
		in.OutDir = h.OutputDir
	}
	log := &lossyWriter{w: gw.st.NewAppender(ctx, store.LogChunkKey(id, 0))}
	defer log.Close()
	x := gw.begin(i)
	// A cancel records the status first and then looks at the running files: one of the
	// two sees the other. So does a stop (CleanupGroup) that came while nothing ran.
	if gw.stopping() || jobview.FinalStatus(ctx, gw.st, id) != nil {
		gw.notRunning()
		return nil
	}
	ownOut := in.OutDir != "" && gw.t.DefaultOutputs
	if ownOut {
		// Its own directory under the store's outputs/, from the worker's spare (the
		// executor makes any other).
		if err := gw.outs.Make(in.OutDir); err != nil {
			gw.notRunning()
			return gw.finish(ctx, id, runner.FailureEnvelope(fmt.Errorf("KINETIC_OUTPUT_DIR %s: %w", in.OutDir, err)), started, time.Time{})
		}
		in.Made = true
	}
	c := gw.call(x, in, args, log)
	// workers/K.running still names i, which ended: readers look for an input's end
	// before they look there, and the next input's setRunning, or close, overwrites it
	// (one write an input fewer).
	if ownOut {
		// Left empty, it waits there for the next input's Make (renamed to its name) or
		// the worker's end (removed): no empty directory outlives the worker's turn.
		gw.outs.Reclaim(in.OutDir)
	}
	env, recorded := gw.judge(ctx, id, c)
	if recorded {
		return nil // cancelled: status.json says so
	}
	return gw.finish(ctx, id, gw.keepValue(ctx, id, env, c.value), started, c.called)
}

// begin makes input i the one running and returns the executor to run it in.
func (gw *groupWorker) begin(i int) *runner.Executor {
	gw.mu.Lock()
	gw.current, gw.killed = i, false
	x := gw.x
	gw.mu.Unlock()
	gw.setRunning(i)
	return x
}

// inputCall is how one call of an input in the executor ended.
type inputCall struct {
	env          *job.Envelope
	value        []byte
	err          error
	called       time.Time
	killed, late bool
}

// call runs in in x, killed at the spec's timeout.
func (gw *groupWorker) call(x *runner.Executor, in runner.Input, args []byte, log io.Writer) inputCall {
	var timer *time.Timer
	timedOut := false
	if s := gw.t.Spec.TimeoutSeconds; s > 0 {
		timer = time.AfterFunc(time.Duration(s)*time.Second, func() {
			gw.mu.Lock()
			timedOut, gw.killed = true, true
			gw.mu.Unlock()
			x.Kill()
		})
	}
	c := inputCall{called: time.Now().UTC()}
	calltrace.Mark("group.input.call", in.JobID)
	c.env, c.value, c.err = x.Run(in, args, log)
	calltrace.Mark("group.input.returned", in.JobID)
	if timer != nil {
		timer.Stop()
	}
	gw.mu.Lock()
	gw.current = -1
	c.killed, c.late = gw.killed, timedOut
	if c.err != nil {
		gw.x = nil // dead: the next input starts another
	}
	gw.mu.Unlock()
	return c
}

// judge is the envelope that records how c ended; recorded when a cancel's status.json
// already says so.
func (gw *groupWorker) judge(ctx context.Context, id string, c inputCall) (env *job.Envelope, recorded bool) {
	switch {
	case c.late:
		return runner.TimeoutEnvelope(seconds.Whole(int64(gw.t.Spec.TimeoutSeconds))), false
	case c.killed && jobview.FinalStatus(ctx, gw.st, id) != nil:
		return nil, true
	case c.killed:
		return runner.FailureEnvelope(errors.New("stopped: the batch was cleaned up while this input ran")), false
	case c.err != nil:
		return runner.FailureEnvelope(c.err), false
	}
	return c.env, false
}

// keepValue puts the input's value in its envelope when small, else in its own object.
func (gw *groupWorker) keepValue(ctx context.Context, id string, env *job.Envelope, value []byte) *job.Envelope {
	if !env.HasValue {
		return env
	}
	if len(value) > 0 && len(value) <= envelopeValueMax {
		env.Value = value // one object for the input, not two
		return env
	}
	// No one reads the value before the envelope written after it says it is there.
	if err := gw.st.PutInPlace(ctx, store.ResultKey(id), value); NoSpace(err) {
		return runner.FailureEnvelope(errors.New(NoSpaceReason(gw.st.URL(), "the input's result")))
	} else if err != nil {
		return runner.FailureEnvelope(fmt.Errorf("store the result: %w", err))
	}
	return env
}

// envelopeValueMax is the largest value an input's envelope carries itself (job.Envelope
// Value); a larger one goes to its own object, so that the envelope, which every status
// read decodes, stays small.
const envelopeValueMax = 8 << 10

// lossyWriter is an input's log (store.NewAppender: appended to the store's object as
// the input prints, made at its first byte): a log that cannot be written is lost, the
// input is not.
type lossyWriter struct {
	w   io.WriteCloser
	err error
}

func (l *lossyWriter) Write(p []byte) (int, error) {
	if l.err == nil {
		_, l.err = l.w.Write(p)
	}
	return len(p), nil
}

func (l *lossyWriter) Close() { l.w.Close() }

// finish writes input id's result.json. A store that will not take it (a full disk)
// fails that input, not the worker: the envelope, saying why, is kept in the batch's
// state (ended/I.json), where readers look (groupEnd), and written to the store after
// the next input's result is (flushKept). The worker goes on with the other inputs,
// which run once there is space again, or fail for the same reason.
func (gw *groupWorker) finish(ctx context.Context, id string, env *job.Envelope, started, called time.Time) error {
	env.StartedAt, env.CalledAt, env.FinishedAt = started, called, time.Now().UTC()
	_, i, _ := job.ParseChildID(id)
	err := gw.record(ctx, i, env.Encode())
	calltrace.Mark("group.input.ended", id)
	if err == nil {
		gw.flushKept(ctx)
		return nil
	}
	why := fmt.Errorf("the input's result could not be recorded in the store %s: %w", gw.st.URL(), err)
	if NoSpace(err) {
		why = errors.New(NoSpaceReason(gw.st.URL(), "the input's result"))
	}
	kept := runner.FailureEnvelope(why)
	kept.StartedAt, kept.CalledAt, kept.FinishedAt = env.StartedAt, env.CalledAt, env.FinishedAt
	if kerr := atomicfile.Write(keptEndPath(gw.dir, i), kept.Encode(), 0o600, 0o700); kerr != nil {
		return err // nowhere to say how it ended: as before, the worker stops
	}
	gw.mayBeKept = true
	return nil
}

// flushKept writes the envelopes kept by finish to the store, now that it takes writes.
func (gw *groupWorker) flushKept(ctx context.Context) {
	if !gw.mayBeKept {
		return
	}
	ents, err := os.ReadDir(filepath.Join(gw.dir, "ended"))
	if err != nil {
		gw.mayBeKept = !errors.Is(err, os.ErrNotExist)
		return
	}
	for _, e := range ents {
		i, err := strconv.Atoi(strings.TrimSuffix(e.Name(), ".json"))
		if err != nil {
			continue
		}
		raw, err := os.ReadFile(keptEndPath(gw.dir, i))
		if err != nil {
			continue
		}
		if gw.record(ctx, i, raw) != nil {
			return
		}
		os.Remove(keptEndPath(gw.dir, i))
	}
	// Another worker flushes what it keeps after this; readers look in ended/ meanwhile.
	gw.mayBeKept = false
}

// record writes input i's envelope to the store: to this worker's log, or where there
// is none (a store other than file://) as an object of its own.
func (gw *groupWorker) record(ctx context.Context, i int, env []byte) error {
	if gw.ends != nil {
		return gw.ends.Append(i, env)
	}
	return gw.st.Put(ctx, store.EnvelopeKey(job.ChildID(gw.o.Group, i)), env)
}

// keptEndPath is where input i's envelope is kept when the store would not take it.
func keptEndPath(groupDir string, i int) string {
	return filepath.Join(groupDir, "ended", strconv.Itoa(i)+".json")
}

func (gw *groupWorker) markDone(i int) {
	gw.done.Write([]byte(strconv.Itoa(i) + "\n"))
}

// failAll fails every input left to claim with err (the batch cannot run here).
func (gw *groupWorker) failAll(ctx context.Context, err error) error {
	if gw.st == nil || gw.size == 0 || gw.done == nil {
		return err
	}
	if gw.next == nil {
		// What is not open yet is waited for: a batch withdrawn meanwhile has nothing
		// left to fail.
		next, oerr := awaitOpen(gw.dir)
		if oerr != nil {
			return err
		}
		gw.next = next
	}
	env := runner.FailureEnvelope(err)
	for {
		i, ok, cerr := claim(gw.next, gw.size)
		if cerr != nil || !ok {
			return err
		}
		id := job.ChildID(gw.o.Group, i)
		if jobview.FinalStatus(ctx, gw.st, id) == nil {
			e := *env
			gw.finish(ctx, id, &e, time.Now().UTC(), time.Time{})
		}
		gw.markDone(i)
	}
}
