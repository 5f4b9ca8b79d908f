package slurm

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/job"
)

var _ backend.Debugger = (*Backend)(nil)

// relay is the Python program that joins its standard input and output to a TCP address
// on the node: a step of the job (srun --overlap) runs it for each connection the
// debugger makes, so nothing but Slurm's own channel and the node's python3 is needed.
const relay = `import os, socket, sys, threading
s = socket.create_connection((sys.argv[1], int(sys.argv[2])))
def up():
    while True:
        b = os.read(0, 65536)
        if not b:
            s.shutdown(socket.SHUT_WR)
            return
        s.sendall(b)
threading.Thread(target=up, daemon=True).start()
while True:
    b = s.recv(65536)
    if not b:
        break
    os.write(1, b)
`

// DebugEndpoint implements backend.Debugger: a forward from 127.0.0.1:localPort (or a
// free port) on this machine to debugpy's address on the job's node. Each connection
// runs a step of the job's own allocation (srun --jobid --overlap) that relays it to
// m.Host:m.Port on the node, through Slurm's own I/O channel: the node needs no port
// open to this machine, and no ssh.
func (b *Backend) DebugEndpoint(ctx context.Context, h *job.Handle, m *job.DebugMarker, localPort int) (string, int, func(), error) {
	e, err := b.find(ctx, h)
	if err != nil {
		return "", 0, nil, fmt.Errorf("debug %s: %w", h.JobID, err)
	}
	if e == nil || e.State != "RUNNING" {
		state := "unknown to Slurm"
		if e != nil {
			state = e.State
		}
		return "", 0, nil, fmt.Errorf("debug %s: its Slurm job is %s, not running: %w", h.JobID, state, backend.ErrUnavailable)
	}
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(localPort)))
	if err != nil {
		return "", 0, nil, fmt.Errorf("debug %s: listen on 127.0.0.1 port %d for the forward to its debugger (a port taken? choose another, or 0 for any free one): %w", h.JobID, localPort, err)
	}
	f := &forward{b: b, slurmID: e.ID, target: m, l: l, quit: make(chan struct{})}
	f.wg.Add(1)
	go f.serve()
	go func() {
		select {
		case <-ctx.Done():
			f.stop()
		case <-f.quit:
		}
	}()
	return "127.0.0.1", l.Addr().(*net.TCPAddr).Port, f.stop, nil
}

// forward is one debugger's forward: a listener whose connections are relayed by steps
// of Slurm job slurmID.
type forward struct {
	b       *Backend
	slurmID string
	target  *job.DebugMarker
	l       net.Listener

	wg    sync.WaitGroup
	mu    sync.Mutex
	steps map[*exec.Cmd]net.Conn
	done  bool
	quit  chan struct{} // closed by stop
}

// serve accepts connections until the listener is closed.
func (f *forward) serve() {
	defer f.wg.Done()
	for {
		c, err := f.l.Accept()
		if err != nil {
			return
		}
		f.wg.Add(1)
		go f.relay(c)
	}
}

// relay joins c to debugpy through a step of the job; it ends when either side does.
func (f *forward) relay(c net.Conn) {
	defer f.wg.Done()
	defer c.Close()
	cmd := exec.Command("srun", "--jobid="+f.slurmID, "--overlap", "--nodes=1", "--ntasks=1", "--unbuffered", "--quiet",
		"python3", "-c", relay, f.target.Host, strconv.Itoa(f.target.Port))
	cmd.Env = append(os.Environ(), f.b.o.Env...)
	cmd.Stdin, cmd.Stdout = c, c
	// When the relay ends (debugpy closed its side), the copy of the connection into
	// srun's stdin is blocked in a read of it: the connection is closed after a moment.
	cmd.WaitDelay = time.Second
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if !f.start(cmd, c) {
		return
	}
	defer f.untrack(cmd)
	cmd.Wait()
}

// start starts a step and remembers it, to stop; false once the forward is stopped or
// when srun cannot start.
func (f *forward) start(cmd *exec.Cmd, c net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.done || cmd.Start() != nil {
		return false
	}
	if f.steps == nil {
		f.steps = map[*exec.Cmd]net.Conn{}
	}
	f.steps[cmd] = c
	return true
}

func (f *forward) untrack(cmd *exec.Cmd) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.steps, cmd)
}

// stop closes the listener and every connection, ends their steps (srun passes the
// signal on to the relay) and waits for them.
func (f *forward) stop() {
	f.mu.Lock()
	if !f.done {
		close(f.quit)
	}
	f.done = true
	f.l.Close()
	for cmd, c := range f.steps {
		c.Close()
		cmd.Process.Signal(syscall.SIGTERM)
	}
	f.mu.Unlock()
	f.wg.Wait()
}
