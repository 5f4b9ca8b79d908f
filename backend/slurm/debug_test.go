package slurm_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/job"
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
