package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kinetic-run/kinetic/engine"
	"github.com/kinetic-run/kinetic/testkit/daptest"
)

// debugPython is an interpreter with debugpy: Debian's python3 with python3-debugpy
// (installed by .ci/run).
func debugPython(t *testing.T) string {
	t.Helper()
	py := "/usr/bin/python3"
	if out, err := exec.Command(py, "-c", "import debugpy, cloudpickle").CombinedOutput(); err != nil {
		t.Fatalf("%s has no debugpy (%v: %s): apt-get install python3-debugpy (see .ci/run)", py, err, out)
	}
	return py
}

const debugModule = `def f(x):
    y = x * 2
    return y
`

// TestDebugJobWithARealDebugger submits a debug job, waits for its debugger with
// `kinetic jobs debug`, attaches a DAP client as VS Code would (with the printed path
// mappings), stops at a breakpoint in the shipped file, reads a local variable, continues,
// and gets the value back.
func TestDebugJobWithARealDebugger(t *testing.T) {
	e := newEnv(t)
	py := debugPython(t)
	os.WriteFile(filepath.Join(e.dir, "m.py"), []byte(debugModule), 0o644)
	r := e.run("run", "--python", py, "--async", "--debug", "--debug-wait", "2m", "m.py::f", "21")
	if r.code != 0 {
		t.Fatalf("submit: %d %s", r.code, r.stderr)
	}
	id := strings.TrimSpace(r.stdout)
	t.Cleanup(func() { e.run("jobs", "cancel", id) })

	r = e.run("jobs", "debug", "--json", id)
	if r.code != 0 {
		t.Fatalf("jobs debug: %d %s", r.code, r.stderr)
	}
	var s engine.DebugSession
	if err := json.Unmarshal([]byte(r.stdout), &s); err != nil {
		t.Fatalf("jobs debug --json: %v\n%s", err, r.stdout)
	}
	if s.Launch["request"] != "attach" || s.LocalRoot != e.dir || s.Forwarded {
		t.Fatalf("session = %+v", s)
	}
	maps := s.Launch["pathMappings"].([]any)[0].(map[string]any)
	if maps["localRoot"] != e.dir || maps["remoteRoot"] != s.RemoteRoot {
		t.Fatalf("pathMappings = %v", maps)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := daptest.Dial(ctx, fmt.Sprintf("%s:%d", s.Host, s.Port))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	must := func(b json.RawMessage, err error) json.RawMessage {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	must(c.Request(ctx, "initialize", map[string]any{"clientID": "kinetic-e2e", "adapterID": "debugpy", "pathFormat": "path", "linesStartAt1": true, "columnsStartAt1": true}))
	attach, err := c.Send("attach", map[string]any{"justMyCode": false, "pathMappings": s.Launch["pathMappings"]})
	if err != nil {
		t.Fatal(err)
	}
	must(c.Event(ctx, "initialized"))
	bps := must(c.Request(ctx, "setBreakpoints", map[string]any{"source": map[string]any{"path": filepath.Join(e.dir, "m.py")}, "breakpoints": []map[string]any{{"line": 3}}}))
	if !strings.Contains(string(bps), `"verified": true`) && !strings.Contains(string(bps), `"verified":true`) {
		t.Fatalf("breakpoint not verified: %s", bps)
	}
	must(c.Request(ctx, "configurationDone", nil))
	must(attach.Wait(ctx))

	var stopped struct {
		Reason   string `json:"reason"`
		ThreadID int    `json:"threadId"`
	}
	json.Unmarshal(must(c.Event(ctx, "stopped")), &stopped)
	if stopped.Reason != "breakpoint" {
		t.Fatalf("stopped for %q, want breakpoint", stopped.Reason)
	}
	var trace struct {
		StackFrames []struct {
			ID     int `json:"id"`
			Line   int `json:"line"`
			Source struct {
				Path string `json:"path"`
			} `json:"source"`
		} `json:"stackFrames"`
	}
	json.Unmarshal(must(c.Request(ctx, "stackTrace", map[string]any{"threadId": stopped.ThreadID})), &trace)
	if len(trace.StackFrames) == 0 || trace.StackFrames[0].Line != 3 || trace.StackFrames[0].Source.Path != filepath.Join(e.dir, "m.py") {
		t.Fatalf("top frame = %+v, want m.py:3 in the submitter's tree (path mappings)", trace.StackFrames)
	}
	var val struct {
		Result string `json:"result"`
	}
	json.Unmarshal(must(c.Request(ctx, "evaluate", map[string]any{"expression": "y", "frameId": trace.StackFrames[0].ID, "context": "repl"})), &val)
	if val.Result != "42" {
		t.Fatalf("y = %q at the breakpoint, want 42", val.Result)
	}
	must(c.Request(ctx, "continue", map[string]any{"threadId": stopped.ThreadID}))

	r = e.run("jobs", "result", id)
	if r.code != 0 || strings.TrimSpace(r.stdout) != "42" {
		t.Fatalf("result: %d %q %s", r.code, r.stdout, r.stderr)
	}
}

// TestDebugJobGoesOnWhenNobodyAttaches: after its debug wait, a job nobody attached to
// goes on without a debugger (as the reference's does) and its log says so.
func TestDebugJobGoesOnWhenNobodyAttaches(t *testing.T) {
	e := newEnv(t)
	py := debugPython(t)
	os.WriteFile(filepath.Join(e.dir, "m.py"), []byte(debugModule), 0o644)
	r := e.run("run", "--python", py, "--async", "--debug", "--debug-wait", "2s", "m.py::f", "21")
	if r.code != 0 {
		t.Fatalf("submit: %d %s", r.code, r.stderr)
	}
	id := strings.TrimSpace(r.stdout)
	r = e.run("jobs", "result", "--cleanup=false", id)
	if r.code != 0 || strings.TrimSpace(r.stdout) != "42" {
		t.Fatalf("result: %d %q %s", r.code, r.stdout, r.stderr)
	}
	r = e.run("jobs", "logs", id)
	if !strings.Contains(r.stdout+r.stderr, "no debugger attached within 2s (debug_wait); the job goes on without one") {
		t.Fatalf("logs: %q %q", r.stdout, r.stderr)
	}
	// The job is over: attaching says so.
	r = e.run("jobs", "debug", id)
	if r.code == 0 || !strings.Contains(r.stderr, "no longer waits for a debugger") {
		t.Fatalf("jobs debug of a finished job: %d %s", r.code, r.stderr)
	}
}

func TestDebugRefusals(t *testing.T) {
	e := newEnv(t)
	r := e.run("run", "--async", "--", "true")
	if r.code != 0 {
		t.Fatalf("submit: %s", r.stderr)
	}
	id := strings.TrimSpace(r.stdout)
	if r := e.run("jobs", "debug", id); r.code == 0 || !strings.Contains(r.stderr, "was not submitted with debug=True") {
		t.Fatalf("jobs debug of a plain job: %d %s", r.code, r.stderr)
	}
	if r := e.run("run", "--debug", "--", "true"); r.code == 0 || !strings.Contains(r.stderr, "debug=True needs a Python function") {
		t.Fatalf("debug command job: %d %s", r.code, r.stderr)
	}
	if r := e.run("run", "--debug-wait", "5s", "examples/hello.py::main"); r.code == 0 || !strings.Contains(r.stderr, "debug_wait is set but debug is not") {
		t.Fatalf("debug-wait without debug: %d %s", r.code, r.stderr)
	}
}

// TestRunDebugSync: `kinetic run --debug` (not --async) prints where to attach on stderr,
// then waits for the job as usual; nobody attaching within the wait, it goes on without.
func TestRunDebugSync(t *testing.T) {
	e := newEnv(t)
	py := debugPython(t)
	os.WriteFile(filepath.Join(e.dir, "m.py"), []byte(debugModule), 0o644)
	r := e.run("run", "--python", py, "--debug", "--debug-wait", "2s", "m.py::f", "21")
	if r.code != 0 || !strings.Contains(r.stderr, `"request": "attach"`) || !strings.Contains(r.stderr, "goes on without one") || strings.TrimSpace(r.stdout) != "42" {
		t.Fatalf("run --debug: %d %q\n%s", r.code, r.stdout, r.stderr)
	}
}
