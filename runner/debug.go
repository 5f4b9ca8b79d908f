package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/kinetic-run/kinetic/job"
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

// watch waits for the bootstrap's ready file and writes debug.json to the store, until
// ctx ends. root and cwd are the materialised tree and the call's directory.
func (d *debugSession) watch(ctx context.Context, st *store.Store, spec *job.Spec, o Options, root, cwd string, out io.Writer) {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		b, err := os.ReadFile(d.ready)
		if err != nil {
			continue
		}
		var r struct {
			Host string `json:"host"`
			Port int    `json:"port"`
			PID  int    `json:"pid"`
		}
		if err := json.Unmarshal(b, &r); err != nil {
			fmt.Fprintf(out, "kinetic: debugpy's ready file %s: %v\n", d.ready, err)
			return
		}
		m := &job.DebugMarker{Host: r.Host, Port: r.Port, PID: r.PID, RemoteRoot: root, Cwd: cwd, HostIndex: o.Host,
			Time: time.Now().UTC(), WaitSeconds: spec.Debug.WaitSeconds}
		if err := st.Put(ctx, store.DebugKey(o.JobID), m.Encode()); err != nil {
			fmt.Fprintf(out, "kinetic: cannot announce the debugger (%v): the job waits for a debugger nobody can find\n", err)
		}
		return
	}
}
