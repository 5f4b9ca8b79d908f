package slurm_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/testkit/daptest"
	"github.com/kinetic-run/kinetic/testkit/testbin"
)

// echoServer listens on 127.0.0.1 (the test node is this machine) and answers each line
// with "echo: " and the line; it stands in for debugpy on the node.
func echoServer(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					io.WriteString(c, "echo: "+line)
				}
			}()
		}
	}()
	return l.Addr().(*net.TCPAddr).Port
}

// TestDebugEndpoint: the forward to a debug job's debugger is a port on this machine
// whose connections go through a step of the job's own Slurm allocation (srun --overlap,
// seen in squeue's steps while connected) to the port on the node; a taken local port is
// refused naming it; stop releases the port; a job that no longer runs is ErrUnavailable.
func TestDebugEndpoint(t *testing.T) {
	c := needSlurm(t)
	b, st := newBackend(t, nil)
	ctx := context.Background()
	j := submit(t, b, st, "sleep", "120")
	waitRunning(t, j)
	m := &job.DebugMarker{Host: "127.0.0.1", Port: echoServer(t), HostIndex: "0"}
	host, port, stop, err := b.DebugEndpoint(ctx, j.Handle, m, 0)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", net.JoinHostPort(host, itoa(port)))
	if err != nil {
		t.Fatal(err)
	}
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	r := bufio.NewReader(conn)
	for _, line := range []string{"hello", strings.Repeat("x", 300000)} {
		io.WriteString(conn, line+"\n")
		got, err := r.ReadString('\n')
		if err != nil || got != "echo: "+line+"\n" {
			t.Fatalf("through the forward: %.60q, %v; want the echo of %.60q", got, err, line)
		}
	}
	steps, _ := c.Run("squeue", "-h", "-s", "--name="+j.Handle.JobID, "-o", "%i")
	if !strings.Contains(steps, ".0") {
		t.Errorf("squeue's steps of the job while connected: %q; want a step of its own (srun)", steps)
	}
	if _, _, _, err := b.DebugEndpoint(ctx, j.Handle, m, port); err == nil || !strings.Contains(err.Error(), itoa(port)) {
		t.Errorf("a second forward on the taken port %d: %v; want an error naming it", port, err)
	}
	stop()
	stop() // idempotent
	if c2, err := net.DialTimeout("tcp", net.JoinHostPort(host, itoa(port)), time.Second); err == nil {
		c2.Close()
		t.Errorf("port %d still accepts after stop", port)
	}
	if _, err := r.ReadString('\n'); err == nil {
		t.Error("the connection outlived stop")
	}
	if err := b.Cancel(ctx, j.Handle); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := b.DebugEndpoint(ctx, j.Handle, m, 0); !errors.Is(err, backend.ErrUnavailable) {
		t.Errorf("DebugEndpoint of a cancelled job = %v; want ErrUnavailable", err)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// debugSession is what `kinetic jobs debug --json` prints.
type debugSession struct {
	Host      string         `json:"host"`
	Port      int            `json:"port"`
	Forwarded bool           `json:"forwarded"`
	Launch    map[string]any `json:"launch"`
}

// TestDebugWithDebugpy: a debug job on Slurm (Debian's python3 with python3-debugpy)
// waits for its debugger on the node; `kinetic jobs debug` forwards a local port to it
// through a step of the job; a DAP client attaches as VS Code would, stops at a
// breakpoint in the submitter's file (path mappings), reads a local, continues, and the
// value comes back.
func TestDebugWithDebugpy(t *testing.T) {
	c := needSlurm(t)
	const py = "/usr/bin/python3"
	if out, err := exec.Command(py, "-c", "import debugpy, cloudpickle").CombinedOutput(); err != nil {
		t.Skipf("%s has no debugpy (%v: %s): apt-get install python3-debugpy", py, err, out)
	}
	_, env := slurmHome(t, c)
	// A node runs other jobs: another debug job (or anything) may hold debugpy's usual
	// port there. The job takes a free one, which its marker records.
	if l, err := net.Listen("tcp", "127.0.0.1:5678"); err == nil {
		defer l.Close()
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "m.py"), []byte("def f(x):\n    y = x * 2\n    return y\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	kinetic := func(args ...string) *exec.Cmd {
		cmd := exec.Command(testbin.Path(t), args...)
		cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
		return cmd
	}
	out, err := kinetic("run", "--accelerator", "cpu", "--python", py, "--async", "--debug", "--debug-wait", "2m", "m.py::f", "21").Output()
	if err != nil {
		t.Fatalf("submit: %v %s", err, out)
	}
	id := strings.TrimSpace(string(out))
	t.Cleanup(func() { kinetic("jobs", "cancel", id).Run() })
	// jobs debug keeps the forward until the job ends.
	fwd := kinetic("jobs", "debug", "--json", id)
	stdout, err := fwd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var fwdErr bytes.Buffer
	fwd.Stderr = &fwdErr
	if err := fwd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fwd.Process.Kill(); fwd.Wait() })
	var s debugSession
	if err := json.NewDecoder(stdout).Decode(&s); err != nil {
		fwd.Wait()
		t.Fatalf("jobs debug --json: %v\n%s", err, fwdErr.String())
	}
	if !s.Forwarded || s.Host != "127.0.0.1" {
		t.Fatalf("session %+v: want a forward on this machine", s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dc, err := daptest.Dial(ctx, net.JoinHostPort(s.Host, itoa(s.Port)))
	if err != nil {
		t.Fatal(err)
	}
	defer dc.Close()
	thread, top, err := dc.StopAt(ctx, s.Launch["pathMappings"], filepath.Join(dir, "m.py"), 3)
	if err != nil {
		t.Fatalf("%v\n%s", err, fwdErr.String())
	}
	if top.Line != 3 || top.Source.Path != filepath.Join(dir, "m.py") {
		t.Errorf("stopped at %s:%d, want m.py:3 in the submitter's tree (path mappings)", top.Source.Path, top.Line)
	}
	if y, err := dc.Evaluate(ctx, top.ID, "y"); err != nil || y != "42" {
		t.Fatalf("y = %q (%v) on the node, want 42", y, err)
	}
	if _, err := dc.Request(ctx, "continue", map[string]any{"threadId": thread}); err != nil {
		t.Fatal(err)
	}
	if out, err := kinetic("jobs", "result", id).Output(); err != nil || strings.TrimSpace(string(out)) != "42" {
		t.Fatalf("result: %v %q", err, out)
	}
}
