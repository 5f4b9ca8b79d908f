package runner

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
)

// The batch executor: the local backend runs the inputs of a batch whose children are
// derived (batch/layout) in one long-lived Python per worker, which unpickles the
// function once and then takes the inputs one after another (batchexec.py). What the
// runner does per job (fetch the payload and tree, build the environment, start an
// interpreter) is done once per worker instead of once per input.

//go:embed batchexec.py
var batchExec []byte

// Isolation says how a batch executor runs its inputs (the setting batch_isolation).
const (
	// IsolationWorker runs each input in the executor's own process: module state
	// carries from one input to the next.
	IsolationWorker = "worker"
	// IsolationProcess forks a child of the executor per input: nothing carries.
	IsolationProcess = "process"
)

// Batch is what every input of a batch shares, prepared once by a worker.
type Batch struct {
	py, script, bootstrap, payload, work, cwd string
	environ                                   []string
	isolation                                 string
	// warmDir and warmIdle, as Options.WarmDir and WarmIdle: executors are children
	// of the warm server when it is set (no interpreter start per executor).
	warmDir  string
	warmIdle time.Duration
	spec     *job.Spec
}

// PrepareBatch fetches and prepares what the inputs of a batch share: the function,
// the working tree, the environment (the batch's captured variables in env, from
// layout.ReadEnv) and the interpreter. o.TreeDir is required (the worker's own
// directory). spec is the batch's template: a pickled function with no Data, debugger
// or install at start (CanRunBatch).
func PrepareBatch(ctx context.Context, st *store.Store, spec *job.Spec, env map[string]string, isolation string, o Options, out io.Writer) (*Batch, error) {
	if err := CanRunBatch(spec); err != nil {
		return nil, err
	}
	if o.TreeDir == "" {
		return nil, errors.New("a batch executor needs a directory of its own")
	}
	if spec.Payload == nil {
		return nil, inPhase(job.PhaseDownload, errors.New("the batch's template has no function payload"))
	}
	if err := os.MkdirAll(o.TreeDir, 0o700); err != nil {
		return nil, inPhase(job.PhaseDownload, err)
	}
	if o.Workspace == "" {
		o.Workspace = o.TreeDir
	}
	b := &Batch{isolation: isolation, warmDir: o.WarmDir, warmIdle: o.WarmIdle, spec: spec}
	p := &batchPrep{b: b, st: st, env: env, o: o, out: out}
	for _, s := range batchSteps {
		if err := s.run(p, ctx); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// batchPrep is one PrepareBatch: its steps, in batchSteps' order, fill in b.
type batchPrep struct {
	b   *Batch
	st  *store.Store
	env map[string]string // the batch's captured variables
	o   Options
	out io.Writer
}

// batchSteps are PrepareBatch's steps, in order; the first error stops it.
var batchSteps = []struct {
	name string
	run  func(*batchPrep, context.Context) error
}{
	{"payload", (*batchPrep).payload},
	{"tree", (*batchPrep).tree},
	{"working directory", (*batchPrep).workingDir},
	{"interpreter", (*batchPrep).interpreter},
	{"scripts", (*batchPrep).scripts},
}

func (p *batchPrep) payload(ctx context.Context) error {
	var err error
	p.b.payload, err = fetchPayload(ctx, p.st, p.b.spec.Payload, p.o)
	return err
}

func (p *batchPrep) tree(ctx context.Context) error {
	work := filepath.Join(p.o.TreeDir, "root")
	if err := os.MkdirAll(work, 0o700); err != nil {
		return inPhase(job.PhaseDownload, err)
	}
	var err error
	p.b.work, err = extractTree(ctx, p.st, p.b.spec.Workdir, p.o, work)
	return err
}

func (p *batchPrep) workingDir(context.Context) error {
	var err error
	if p.b.cwd, err = within(p.b.work, p.b.spec.Cwd); err != nil {
		return inPhase(job.PhasePlan, err)
	}
	if err := os.MkdirAll(p.b.cwd, 0o700); err != nil {
		return inPhase(job.PhasePlan, err)
	}
	return nil
}

// interpreter sets the inputs' environment (KINETIC_JOB_ID is per input) and the
// interpreter.
func (p *batchPrep) interpreter(ctx context.Context) error {
	p.b.environ = callEnv(p.env, map[string]string{"KINETIC_HOST_INDEX": "0"}, p.o.MinimalEnv) // KINETIC_JOB_ID: per input
	var err error
	if p.b.py, err = environment(ctx, p.b.spec, p.o, p.out); err != nil {
		return inPhase(job.PhaseInstall, err)
	}
	return nil
}

// scripts writes the bootstrap and the executor.
func (p *batchPrep) scripts(context.Context) error {
	var err error
	if p.b.bootstrap, err = writeBootstrap(p.o); err != nil {
		return inPhase(job.PhasePlan, err)
	}
	if p.b.script, err = writeScript(p.o, "kinetic_batchexec", batchExec); err != nil {
		return inPhase(job.PhasePlan, err)
	}
	return nil
}

// CanRunBatch says why spec's inputs cannot run in a batch executor (nil: they can).
func CanRunBatch(spec *job.Spec) error {
	switch {
	case spec.Kind != job.KindPickle:
		return errors.New("not a Python function")
	case len(spec.Data) > 0:
		return errors.New("it has Data")
	case spec.Debug != nil:
		return errors.New("a debug job")
	case spec.InstallAtStart:
		return errors.New("installs at start")
	}
	return nil
}

// Input is one input for an executor.
type Input struct {
	JobID string `json:"job"`
	// OutDir is KINETIC_OUTPUT_DIR ("" for none).
	OutDir string `json:"out_dir,omitempty"`
	// Made says OutDir exists (the worker made it): the executor need not look.
	Made bool `json:"made,omitempty"`
	N    int  `json:"n"`
}

// endOfInput is what the executor writes to its output after each input's own.
var endOfInput = []byte("\x00kinetic-input-end\x00\n")

// Executor is one running batch executor.
type Executor struct {
	cmd     *exec.Cmd // started by us, or
	warm    *warmProc // started by a warm server
	pid     int       // its process (and process group)
	req     *os.File
	replies *bufio.Reader
	exited  chan struct{}
	ended   chan struct{} // an input's output is over (endOfInput read)
	own     io.Writer     // the executor's own output, between inputs

	mu   sync.Mutex
	sink io.Writer // the current input's log (nil: own)
	// Failed is the envelope of an executor that could not load the function: every
	// input fails with it.
	Failed *job.Envelope
}

// Start starts an executor whose own output (not the inputs') goes to log.
func (b *Batch) Start(log io.Writer) (*Executor, error) {
	p, err := openExecutorPipes()
	if err != nil {
		return nil, err
	}
	x := &Executor{req: p.reqW, replies: bufio.NewReaderSize(p.repR, 64<<10), exited: make(chan struct{}),
		ended: make(chan struct{}, 1), own: log}
	wait, err := b.startExecutor(x, p)
	if err != nil {
		p.closeAll()
		return nil, err
	}
	p.reqR.Close()
	p.repW.Close()
	p.outW.Close()
	x.follow(wait, p.outR, p.repR)
	if err := x.awaitReady(b); err != nil {
		return nil, err
	}
	return x, nil
}

// executorPipes are an executor's requests (fd 3), replies (fd 4) and output.
type executorPipes struct {
	reqR, reqW, repR, repW, outR, outW *os.File
}

func openExecutorPipes() (*executorPipes, error) {
	p := &executorPipes{}
	for _, ends := range [][2]**os.File{{&p.reqR, &p.reqW}, {&p.repR, &p.repW}, {&p.outR, &p.outW}} {
		r, w, err := os.Pipe()
		if err != nil {
			p.closeAll()
			return nil, err
		}
		*ends[0], *ends[1] = r, w
	}
	return p, nil
}

func (p *executorPipes) closeAll() {
	for _, f := range []*os.File{p.reqR, p.reqW, p.repR, p.repW, p.outR, p.outW} {
		if f != nil {
			f.Close()
		}
	}
}

// startExecutor starts x: a child of the warm server when there is one (the
// interpreter and cloudpickle are loaded already, docs/warm-workers.md), else, or on any
// trouble, a new interpreter. wait returns once it has exited.
func (b *Batch) startExecutor(x *Executor, p *executorPipes) (wait func(), err error) {
	argv := []string{b.script, b.bootstrap, b.payload, b.work, b.cwd, b.isolation}
	if b.warmDir != "" {
		wp, err := startWarmProc(b.warmDir, b.warmIdle, b.py, argv, b.cwd, b.environ, p.outW, p.reqR, p.repW)
		if err == nil {
			x.warm, x.pid = wp, wp.pid
			return func() { <-wp.done }, nil
		}
	}
	cmd := exec.Command(b.py, argv...)
	cmd.Dir, cmd.Env = b.cwd, b.environ
	cmd.Stdout, cmd.Stderr = p.outW, p.outW
	cmd.ExtraFiles = []*os.File{p.reqR, p.repW} // fds 3 and 4
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	noteOOMCount()
	if err := cmd.Start(); err != nil {
		return nil, inPhase(job.PhasePlan, fmt.Errorf("cannot start %s: %w (install Python 3, or set the interpreter with KINETIC_PYTHON or `kinetic profile` key python)", b.py, err))
	}
	x.cmd, x.pid = cmd, cmd.Process.Pid
	return func() { cmd.Wait() }, nil
}

// follow copies the executor's output and, once it has exited (wait), closes its
// replies and x.exited.
func (x *Executor) follow(wait func(), outR, repR *os.File) {
	outDone := make(chan struct{})
	go func() { x.copyOutput(outR); close(outDone) }()
	go func() {
		wait()
		select { // a process the call left behind may hold the output open
		case <-outDone:
		case <-time.After(time.Second):
		}
		repR.Close()
		close(x.exited)
	}()
}

// awaitReady reads the executor's first reply: ready, or the envelope of its failure to
// load the function (x.Failed). An error kills it.
func (x *Executor) awaitReady(b *Batch) error {
	line, err := x.replies.ReadBytes('\n')
	if err != nil {
		x.Kill()
		return inPhase(job.PhaseCall, errors.New("python exited before it loaded the function (its output is in the worker's log)"+fdLimitHint()))
	}
	var ready struct {
		Ready bool `json:"ready"`
	}
	if json.Unmarshal(line, &ready); ready.Ready {
		return nil
	}
	env, err := job.DecodeEnvelope(line)
	if err != nil {
		x.Kill()
		return inPhase(job.PhaseResult, fmt.Errorf("batch executor: %w", err))
	}
	if env.ExcType == noCloudpickleType && b.spec != nil {
		env = FailureEnvelope(inPhase(job.PhaseUnpickle, noCloudpickle(b.spec, b.py)))
	}
	x.Failed = env
	return nil
}

// copyOutput passes the executor's output to the current input's log, switching at
// each endOfInput.
func (x *Executor) copyOutput(r *os.File) {
	defer r.Close()
	buf := make([]byte, 64<<10)
	var carry []byte
	for {
		n, err := r.Read(buf[len(carry):])
		data := buf[:len(carry)+n]
		for {
			k := bytes.Index(data, endOfInput)
			if k < 0 {
				break
			}
			x.write(data[:k])
			x.mu.Lock()
			x.sink = nil
			x.mu.Unlock()
			select {
			case x.ended <- struct{}{}:
			default:
			}
			data = data[k+len(endOfInput):]
		}
		// Keep a tail that may be the start of a marker.
		keep := 0
		for j := min(len(endOfInput)-1, len(data)); j > 0; j-- {
			if bytes.HasPrefix(endOfInput, data[len(data)-j:]) {
				keep = j
				break
			}
		}
		x.write(data[:len(data)-keep])
		carry = buf[:copy(buf, data[len(data)-keep:])]
		if err != nil {
			x.write(carry)
			return
		}
	}
}

func (x *Executor) write(p []byte) {
	if len(p) == 0 {
		return
	}
	x.mu.Lock()
	w := x.sink
	x.mu.Unlock()
	if w == nil {
		w = x.own
	}
	w.Write(p)
}

// Run runs one input (its pickled arguments in args), its output going to log, and
// returns its envelope and its pickled value (or exception; nil when it has none). An
// executor that dies meanwhile gives an error: start another one.
func (x *Executor) Run(in Input, args []byte, log io.Writer) (*job.Envelope, []byte, error) {
	if x.Failed != nil {
		env := *x.Failed
		return &env, nil, nil
	}
	in.N = len(args)
	hdr, _ := json.Marshal(in)
	msg := make([]byte, 0, len(hdr)+1+len(args))
	msg = append(append(append(msg, hdr...), '\n'), args...)
	x.mu.Lock()
	x.sink = log
	x.mu.Unlock()
	select {
	case <-x.ended: // a stale one
	default:
	}
	if _, err := x.req.Write(msg); err != nil {
		return nil, nil, x.died()
	}
	line, err := x.replies.ReadBytes('\n')
	if err != nil {
		return nil, nil, x.died()
	}
	var n struct { // the envelope and the size of the value that follows, in one decode
		job.Envelope
		N int `json:"n"`
	}
	if err := json.Unmarshal(line, &n); err != nil || n.N < 0 {
		return nil, nil, inPhase(job.PhaseResult, fmt.Errorf("batch executor: %q: %v", line, err))
	}
	env := &n.Envelope
	var value []byte
	if n.N > 0 {
		value = make([]byte, n.N)
		if _, err := io.ReadFull(x.replies, value); err != nil {
			return nil, nil, x.died()
		}
	}
	// The input's output is all in once the marker after it is read.
	select {
	case <-x.ended:
	case <-x.exited:
	}
	return env, value, nil
}

// died says how the executor ended.
func (x *Executor) died() error {
	<-x.exited
	how := "it exited"
	if x.cmd != nil && x.cmd.ProcessState != nil {
		if ws, ok := x.cmd.ProcessState.Sys().(syscall.WaitStatus); ok {
			how = waitText(ws)
		}
	} else if x.warm != nil && x.warm.ws != nil {
		how = waitText(*x.warm.ws)
	}
	return inPhase(job.PhaseCall, fmt.Errorf("python exited without a result (%s)%s", how, fdLimitHint()))
}

// Kill stops the executor and whatever it started, at once.
func (x *Executor) Kill() {
	if x.pid > 0 {
		syscall.Kill(-x.pid, syscall.SIGKILL)
	}
	x.req.Close()
	<-x.exited
}

// Close ends an idle executor: it exits when its requests end.
func (x *Executor) Close() {
	x.req.Close()
	select {
	case <-x.exited:
	case <-time.After(5 * time.Second):
		x.Kill()
	}
}

// FailureEnvelope is the envelope of an input that err stopped before its call
// reported (the executor died, the input's time limit, a cancel).
func FailureEnvelope(err error) *job.Envelope {
	phase := job.PhaseSystem
	var pe *phaseError
	if errors.As(err, &pe) {
		phase = pe.phase
	}
	return &job.Envelope{Success: false, Phase: phase, Host: "0", ExcType: "kinetic.RunnerError", ExcMessage: err.Error()}
}

// TimeoutEnvelope is the envelope of an input stopped at its time limit.
func TimeoutEnvelope(limit time.Duration) *job.Envelope {
	err := &errTimedOut{limit: limit}
	return &job.Envelope{Success: false, Phase: job.PhaseCall, Host: "0", ExcType: job.TimeoutExcType, ExcMessage: err.Error()}
}
