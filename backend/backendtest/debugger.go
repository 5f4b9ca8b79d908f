package backendtest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/job"
)

// DebuggerHarness is what a backend's test provides to RunDebugger.
type DebuggerHarness struct {
	Harness
	// Forwards says the backend forwards a port of this machine to the worker (a
	// cluster's port-forward): the suite then also checks localPort, stop and a worker
	// that is gone. A backend whose workers are this machine returns the worker's own
	// address and ignores localPort.
	Forwards bool
}

// greeting is what the suite's worker says to whoever connects.
const greeting = "hello from the worker"

// listener is the job the suite debugs: a Python process on the worker that listens on
// 127.0.0.1:port, where debugpy would, and greets each connection.
func listener(port int) []string {
	return []string{"python3", "-c", fmt.Sprintf(`
import socket
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", %d))
s.listen(8)
print("listening", flush=True)
while True:
    c, _ = s.accept()
    c.sendall(b"%s\n")
    c.close()
`, port, greeting)}
}

// RunDebugger is the conformance suite of backend.Debugger: what h.New returns must
// implement it. It checks the interface's doc comment with a job that listens where
// debugpy would: the address DebugEndpoint returns reaches the worker's port, and (for a
// backend that forwards) on the local port asked for, naming a port that is taken,
// released by stop, and wrapping ErrUnavailable when the worker is gone.
func RunDebugger(t *testing.T, h DebuggerHarness) {
	if h.Observe == nil {
		t.Fatal("backendtest: Harness.Observe is required")
	}
	t.Run("ReachesTheWorker", func(t *testing.T) { h.reachesTheWorker(t, 0) })
	if !h.Forwards {
		return
	}
	t.Run("OnTheLocalPortAsked", func(t *testing.T) { h.reachesTheWorker(t, freePort(t)) })
	t.Run("LocalPortTaken", h.localPortTaken)
	t.Run("GoneWorkerIsUnavailable", h.goneWorker)
}

// debugJob submits the listening job and waits until it listens; it returns the job and
// the marker its runner would write.
func (h *DebuggerHarness) debugJob(t *testing.T) (backend.Debugger, *submitted) {
	t.Helper()
	b, st := h.New(t)
	d, ok := b.(backend.Debugger)
	if !ok {
		t.Fatalf("backend %s does not implement backend.Debugger", b.Name())
	}
	port := freePort(t) // free here; on a worker of its own any port is
	j := h.submit(t, b, st, listener(port)...)
	j.marker = &job.DebugMarker{Host: "127.0.0.1", Port: port, HostIndex: "0"}
	t.Cleanup(func() { j.Cleanup(context.Background(), true, true) })
	waitFor(t, j, job.Running, h.deadline())
	deadline := time.Now().Add(h.deadline())
	for {
		tail, _ := j.Tail(context.Background(), 5)
		if strings.Contains(tail, "listening") {
			return d, j
		}
		if time.Now().After(deadline) {
			t.Fatalf("the job did not listen within %s; its output: %q", h.deadline(), tail)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (h *DebuggerHarness) reachesTheWorker(t *testing.T, localPort int) {
	d, j := h.debugJob(t)
	ctx, cancel := context.WithTimeout(context.Background(), h.deadline())
	defer cancel()
	host, port, stop, err := d.DebugEndpoint(ctx, j.Handle, j.marker, localPort)
	if err != nil {
		t.Fatalf("DebugEndpoint: %v", err)
	}
	if stop != nil {
		defer stop()
	}
	if h.Forwards && localPort != 0 && port != localPort {
		t.Errorf("DebugEndpoint listens on port %d, want the local port asked for, %d", port, localPort)
	}
	if got := greet(t, host, port); got != greeting {
		t.Fatalf("%s:%d answered %q, want %q", host, port, got, greeting)
	}
	if stop == nil {
		return
	}
	stop()
	stop() // releasing twice is harmless
	if h.Forwards {
		deadline := time.Now().Add(10 * time.Second)
		for canDial(host, port) {
			if time.Now().After(deadline) {
				t.Fatalf("%s:%d still accepts connections after stop", host, port)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

func (h *DebuggerHarness) localPortTaken(t *testing.T) {
	d, j := h.debugJob(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	taken := l.Addr().(*net.TCPAddr).Port
	ctx, cancel := context.WithTimeout(context.Background(), h.deadline())
	defer cancel()
	_, _, stop, err := d.DebugEndpoint(ctx, j.Handle, j.marker, taken)
	if err == nil {
		if stop != nil {
			stop()
		}
		t.Fatalf("DebugEndpoint on taken port %d succeeded", taken)
	}
	if !strings.Contains(err.Error(), strconv.Itoa(taken)) {
		t.Errorf("DebugEndpoint on taken port %d: %v; want the error to name the port", taken, err)
	}
}

func (h *DebuggerHarness) goneWorker(t *testing.T) {
	d, j := h.debugJob(t)
	ctx, cancel := context.WithTimeout(context.Background(), h.deadline())
	defer cancel()
	if err := j.Cleanup(ctx, true, false); err != nil {
		t.Fatalf("Cleanup: %v", err)
	}
	deadline := time.Now().Add(h.deadline())
	for {
		_, _, stop, err := d.DebugEndpoint(ctx, j.Handle, j.marker, 0)
		if stop != nil {
			stop()
		}
		if errors.Is(err, backend.ErrUnavailable) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("DebugEndpoint of a cleaned-up job: %v; want an error wrapping backend.ErrUnavailable", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// freePort returns a port free on this machine now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// greet connects to host:port and returns the first line it says.
func greet(t *testing.T, host string, port int) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", net.JoinHostPort(host, strconv.Itoa(port)), 10*time.Second)
	if err != nil {
		t.Fatalf("connect to %s:%d: %v", host, port, err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatalf("read from %s:%d: %v (got %q)", host, port, err, line)
	}
	return strings.TrimSuffix(line, "\n")
}

// canDial reports whether host:port accepts a connection that then says something (a
// port-forward that stopped may still accept, then close at once).
func canDial(host string, port int) bool {
	c, err := net.DialTimeout("tcp", net.JoinHostPort(host, strconv.Itoa(port)), time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	_, err = bufio.NewReader(c).ReadString('\n')
	return err == nil
}
