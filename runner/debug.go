package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/jobview"
	"github.com/kinetic-run/kinetic/store"
)

// DefaultDebugPort is the port debugpy listens on in a pod (`kinetic runner
// --debug-port`), as the reference does. The local backend asks for any free port
// instead, since several debug jobs may share one machine.
const DefaultDebugPort = 5678

// debugSession is the runner's side of a debug job: the variables that make the
// bootstrap start debugpy, and the watch that turns its ready file into debug.json in
// the store.
type debugSession struct {
	ready string // the file the bootstrap writes once debugpy listens
	env   []string
}

// newDebugSession returns the debug settings for spec on this host, or nil when the job
// is not a debug job or this host is not the leader (only host 0 waits for a debugger).
func newDebugSession(spec *job.Spec, o Options, outDir string) *debugSession {
	if spec.Debug == nil || spec.Kind == job.KindCommand || o.Host != "0" {
		return nil
	}
	ready := filepath.Join(outDir, "debugpy.json")
	os.Remove(ready) // a reused workspace must not announce an old port
	return &debugSession{ready: ready, env: []string{
		"KINETIC_DEBUGPY_PORT=" + strconv.Itoa(max(o.DebugPort, 0)),
		"KINETIC_DEBUGPY_WAIT=" + strconv.Itoa(spec.Debug.WaitSeconds),
		"KINETIC_DEBUGPY_READY=" + ready,
		"KINETIC_DEBUGPY_LIB=" + filepath.Join(o.Workspace, "debugpy"),
		// Python 3.11+ warns that frozen modules may hide breakpoints in the standard
		// library; user code is not frozen, and the warning would be in every debug log.
		"PYDEVD_DISABLE_FILE_VALIDATION=1",
	}}
}

// watch waits for the bootstrap's ready file and writes debug.json to the store, then
// writes it again with AttachedAt once the bootstrap says a debugger attached (the other
// hosts of a multi-host job wait for that), until ctx ends. root and cwd are the
// materialised tree and the call's directory.
func (d *debugSession) watch(ctx context.Context, st *store.Store, spec *job.Spec, o Options, root, cwd string, out io.Writer) {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	w := &debugWatch{d: d, st: st, spec: spec, o: o, root: root, cwd: cwd, out: out}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if w.poll(ctx) {
			return
		}
	}
}

// debugWatch is one debugSession.watch: m is the marker once announced.
type debugWatch struct {
	d         *debugSession
	st        *store.Store
	spec      *job.Spec
	o         Options
	root, cwd string
	out       io.Writer
	m         *job.DebugMarker
}

// debugReady is the bootstrap's ready file.
type debugReady struct {
	Host     string `json:"host"`
	Port     int    `json:"port"`
	PID      int    `json:"pid"`
	Attached bool   `json:"attached"`
	WentOn   bool   `json:"went_on"`
}

// poll reads the ready file and writes what it says to the store; done says the watch
// is over.
func (w *debugWatch) poll(ctx context.Context) (done bool) {
	b, err := os.ReadFile(w.d.ready)
	if err != nil {
		return false
	}
	var r debugReady
	if err := json.Unmarshal(b, &r); err != nil {
		fmt.Fprintf(w.out, "kinetic: debugpy's ready file %s: %v\n", w.d.ready, err)
		return true
	}
	ended := r.Attached || r.WentOn
	if w.m != nil && !ended {
		return false // announced; still waiting for a debugger
	}
	w.mark(r)
	if err := w.st.Put(ctx, store.DebugKey(w.o.JobID), w.m.Encode()); err != nil {
		if ended {
			fmt.Fprintf(w.out, "kinetic: cannot say in the store that the leader called the function (%v): the other hosts keep waiting for it\n", err)
		} else {
			fmt.Fprintf(w.out, "kinetic: cannot announce the debugger (%v): the job waits for a debugger nobody can find\n", err)
		}
		return true
	}
	return ended
}

// mark makes the marker (the first time) and notes a debugger attached or the call
// going on without one.
func (w *debugWatch) mark(r debugReady) {
	if w.m == nil {
		w.m = &job.DebugMarker{Host: r.Host, Port: r.Port, PID: r.PID, RemoteRoot: w.root, Cwd: w.cwd, HostIndex: w.o.Host,
			Time: time.Now().UTC(), WaitSeconds: w.spec.Debug.WaitSeconds}
	}
	now := time.Now().UTC()
	switch {
	case r.Attached:
		w.m.AttachedAt = &now
	case r.WentOn:
		w.m.WentOnAt = &now
	}
}

// errJobEnded: a host of a multi-host job that waited for another (a worker for the
// leader's debugger, the leader for the other hosts to end) saw the job end first (no
// debugger attached in time, cancelled, or failed elsewhere): it has nothing more to run
// and nothing to report, since the job's verdict is already written.
var errJobEnded = errors.New("the job ended while this host waited for another")

// waitLeaderDebugger holds a non-leader host of a multi-host debug job before it calls
// the function, until the leader's debugger has attached (debug.json has AttachedAt)
// and the leader calls its function. All hosts of a multi-controller program (JAX)
// must call the function for any to make progress, and their rendezvous
// (jax.distributed.initialize) times out if one host is late; holding the others
// until the leader runs keeps them in step however long the debugger takes. It
// returns errJobEnded if the job ends first.
func waitLeaderDebugger(ctx context.Context, st *store.Store, spec *job.Spec, o Options, out io.Writer) error {
	fmt.Fprintf(out, "kinetic: host %s waits for the leader's debugger: the function starts here once a debugger attaches to host 0 "+
		"(kinetic jobs debug %s, or JobHandle.debug_attach()); the leader waits up to %ds\n", o.Host, o.JobID, spec.Debug.WaitSeconds)
	waited := time.Now()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		raw, err := st.Get(ctx, store.DebugKey(o.JobID))
		if err == nil {
			if m, err := job.DecodeDebugMarker(raw); err == nil && m.AttachedAt != nil {
				fmt.Fprintf(out, "kinetic: the leader's debugger attached after %s; host %s calls the function\n", time.Since(waited).Round(time.Second), o.Host)
				return nil
			} else if err == nil && m.WentOnAt != nil {
				fmt.Fprintf(out, "kinetic: no debugger attached to the leader within %ds; host %s calls the function without one, as the leader does\n", m.WaitSeconds, o.Host)
				return nil
			}
		}
		if state := jobEnded(ctx, st, o.JobID); state != "" {
			fmt.Fprintf(out, "kinetic: job %s is %s before a debugger attached to its leader; host %s does not call the function\n", o.JobID, state, o.Host)
			return errJobEnded
		}
		select {
		case <-ctx.Done():
			return inPhase(job.PhaseCall, stopped(ctx))
		case <-t.C:
		}
	}
}

// jobEnded describes the job's final state ("" while it has none): a recorded verdict
// (cancelled, failed by the backend), or the leader's envelope (its debugger never came,
// or it ran without us).
func jobEnded(ctx context.Context, st *store.Store, id string) string {
	if s := jobview.FinalStatus(ctx, st, id); s != nil {
		if s.Reason != "" {
			return fmt.Sprintf("%s (%s)", s.State, s.Reason)
		}
		return string(s.State)
	}
	raw, err := st.Get(ctx, store.EnvelopeKey(id))
	if err != nil {
		return ""
	}
	env, err := job.DecodeEnvelope(raw)
	if err != nil {
		return "ended (its result is unreadable: " + err.Error() + ")"
	}
	if env.Success {
		return string(job.Succeeded)
	}
	return fmt.Sprintf("%s (%s)", job.Failed, env.FailureReason())
}
