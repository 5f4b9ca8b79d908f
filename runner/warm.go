package runner

import (
	"bufio"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/kinetic-run/kinetic/internal/calltrace"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kinetic-run/kinetic/internal/filelock"
)

// Warm workers: a fork server per interpreter (see docs/warm-workers.md and
// warmserver.py). The runner asks the server for a fresh child for each Python call
// instead of starting the interpreter cold; any trouble setting that up means a cold start.

//go:embed warmserver.py
var warmServerPy []byte

// DefaultWarmIdle is how long a warm worker server waits without work before it exits,
// when Options.WarmIdle is 0 (the setting warm_idle). A server also exits, once idle,
// when its socket is no longer where runners look for it (its directory was removed).
const DefaultWarmIdle = 10 * time.Minute

// warmStartTimeout bounds starting a server and waiting for one's reply.
const warmStartTimeout = 10 * time.Second

// warmIdle is o.WarmIdle or its default.
func (o Options) warmIdle() time.Duration {
	if o.WarmIdle > 0 {
		return o.WarmIdle
	}
	return DefaultWarmIdle
}

const warmProto = 1

// errNoWarm marks failures that leave the job unstarted: the caller starts it cold.
var errNoWarm = errors.New("no warm worker")

// errWarmLost means the server died while its child ran; the child's exit status is
// unknown.
var errWarmLost = errors.New("the warm worker server died while the call ran; exit status unknown")

// waitError is a call's non-zero wait status, as reported by the warm server.
type waitError struct{ ws syscall.WaitStatus }

func (e *waitError) Error() string { return waitText(e.ws) }

// The SHA-256 of the embedded server script and bootstrap, computed once.
var (
	warmServerSum = sync.OnceValue(func() [32]byte { return sha256.Sum256(warmServerPy) })
	bootstrapSum  = sync.OnceValue(func() [32]byte { return sha256.Sum256(bootstrap) })
)

// warmServer is one fork server: one interpreter, one server script and bootstrap, one
// start-up environment.
type warmServer struct {
	dir, key string
	py       string        // absolute path of the interpreter, as the job would run it
	env      []string      // the server's environment
	idle     time.Duration // how long the server waits without work before it exits
}

func (w *warmServer) file(ext string) string { return filepath.Join(w.dir, w.key+ext) }

// warmEnabled says whether o asks for warm workers.
func warmEnabled(o Options) bool {
	return o.WarmDir != ""
}

// startupVar reports whether the interpreter (or the dynamic loader, or libc) reads the
// variable name when it starts, so that setting it in a forked child has no effect.
func startupVar(name string) bool {
	for _, p := range []string{"PYTHON", "LD_", "LC_", "MALLOC_"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	switch name {
	case "LANG", "HOME", "GLIBC_TUNABLES":
		return true
	}
	return false
}

// warmServerEnv is the environment a server starts with: the runner's own, unbuffered.
func warmServerEnv() []string {
	env := []string{"PYTHONUNBUFFERED=1"}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PYTHONUNBUFFERED=") {
			env = append(env, kv)
		}
	}
	sort.Strings(env)
	return env
}

// warmFor returns the server that can run py with the job environment environ, or an
// error saying why the job must start cold.
func warmFor(dir, py string, environ []string) (*warmServer, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	abs, real, fi, err := resolveInterpreter(py)
	if err != nil {
		return nil, err
	}
	senv := warmServerEnv()
	started := startupEnv(senv)
	if err := sameStartup(environ, started); err != nil {
		return nil, err
	}
	w := &warmServer{dir: dir, key: warmKey(abs, real, fi, started), py: abs, env: senv}
	if n := len(w.file(".sock")); n > 107 {
		return nil, fmt.Errorf("socket path %s is too long (%d bytes) for a unix socket", w.file(".sock"), n)
	}
	return w, nil
}

// resolveInterpreter finds py: its absolute path as the job would run it, the file it
// is (symlinks resolved), and that file's stat. A wrapper script (a pyenv shim, say)
// may pick another interpreter per directory or environment; only a real interpreter
// can be kept warm.
func resolveInterpreter(py string) (abs, real string, fi os.FileInfo, err error) {
	if abs, err = exec.LookPath(py); err != nil {
		return "", "", nil, err
	}
	if abs, err = filepath.Abs(abs); err != nil {
		return "", "", nil, err
	}
	if real, err = filepath.EvalSymlinks(abs); err != nil {
		return "", "", nil, err
	}
	if fi, err = os.Stat(real); err != nil {
		return "", "", nil, err
	}
	if isScript(real) {
		return "", "", nil, fmt.Errorf("%s is a script, not an interpreter", real)
	}
	return abs, real, fi, nil
}

// isScript reports whether the file at p starts with "#!".
func isScript(p string) bool {
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	var head [2]byte
	n, _ := io.ReadFull(f, head[:])
	return n == 2 && string(head[:]) == "#!"
}

// startupEnv is the variables of env (KEY=VALUE lines) Python reads when it starts.
func startupEnv(env []string) map[string]string {
	started := map[string]string{}
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && startupVar(k) {
			started[k] = v
		}
	}
	return started
}

// sameStartup says why the job environment environ cannot run in a child of a server
// started with the startup variables started: it sets or unsets one.
func sameStartup(environ []string, started map[string]string) error {
	seen := map[string]bool{}
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		if !startupVar(k) {
			continue
		}
		seen[k] = true
		if sv, ok := started[k]; !ok || sv != v {
			return fmt.Errorf("the job sets %s, which Python reads only when it starts", k)
		}
	}
	for k := range started {
		if !seen[k] {
			return fmt.Errorf("the job unsets %s, which Python reads only when it starts", k)
		}
	}
	return nil
}

// warmKey names the server: its protocol, script, bootstrap, interpreter and startup
// variables.
func warmKey(abs, real string, fi os.FileInfo, started map[string]string) string {
	h := sha256.New()
	fmt.Fprintf(h, "kinetic-warm %d\n%x\n%x\n%s\n%s\n%d %d\n", warmProto, warmServerSum(), bootstrapSum(),
		abs, real, fi.ModTime().UnixNano(), fi.Size())
	keys := make([]string, 0, len(started))
	for k := range started {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(h, "%s=%s\x00", k, started[k])
	}
	return hex.EncodeToString(h.Sum(nil))[:20]
}

// connect dials the server, starting it first if none is listening. Concurrent runners
// start one server: the start is under a lock, and the server itself holds an "alive"
// lock for as long as it listens, so a second one refuses to start.
func (w *warmServer) connect(ctx context.Context) (*net.UnixConn, error) {
	if c, err := w.dialLive(); err == nil {
		return c, nil
	}
	if err := os.MkdirAll(w.dir, 0o700); err != nil {
		return nil, err
	}
	unlock, err := lockWait(ctx, w.file(".start"), warmStartTimeout)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if c, err := w.dialLive(); err == nil { // another runner started it meanwhile
		return c, nil
	}
	if err := w.start(ctx); err != nil {
		return nil, err
	}
	return w.dial()
}

func (w *warmServer) dial() (*net.UnixConn, error) {
	return net.DialUnix("unix", nil, &net.UnixAddr{Name: w.file(".sock"), Net: "unix"})
}

// dialLive dials the socket if a live server is behind it. A listening socket can
// outlive its server: a child forked just before the server was killed keeps it open
// until it closes the server's files, and a request sent there is never answered. The
// server holds a POSIX lock on its alive file, which ends with the server itself (a
// child never holds it), so a lock nobody holds means a dead server.
func (w *warmServer) dialLive() (*net.UnixConn, error) {
	c, err := w.dial()
	if err != nil {
		return nil, err
	}
	if !w.serverAlive() {
		c.Close()
		return nil, errors.New("the warm server is gone; its socket is left")
	}
	return c, nil
}

// serverAlive says whether a process holds the lock on the alive file.
func (w *warmServer) serverAlive() bool {
	f, err := os.Open(w.file(".alive"))
	if err != nil {
		return false
	}
	defer f.Close()
	lk := syscall.Flock_t{Type: syscall.F_WRLCK}
	if err := syscall.FcntlFlock(f.Fd(), syscall.F_GETLK, &lk); err != nil {
		return true // cannot tell: let the request find out
	}
	return lk.Type != syscall.F_UNLCK
}

// start launches a server in its own session (so it outlives this runner and no signal
// meant for the job's supervisor reaches it) and waits until it listens.
func (w *warmServer) start(ctx context.Context) error {
	sum := warmServerSum()
	script := filepath.Join(w.dir, "kinetic_warm_"+hex.EncodeToString(sum[:6])+".py")
	if err := writeOnce(script, warmServerPy); err != nil {
		return err
	}
	// The scripts requests will name (writeScript): the bootstrap, pre-compiled by the
	// server, and the batch executor's, which it compiles at its start, so that no child
	// compiles either, the first call's and batch's included.
	bs, err := writeScript(Options{WarmDir: w.dir}, "kinetic_bootstrap", bootstrap)
	if err != nil {
		return err
	}
	prepared := make([]string, 0, 1)
	if p, err := writeScript(Options{WarmDir: w.dir}, "kinetic_batchexec", batchExec); err == nil {
		prepared = append(prepared, p)
	}
	log, err := os.OpenFile(w.file(".log"), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	defer log.Close()
	pr, pw, err := os.Pipe()
	if err != nil {
		return err
	}
	defer pr.Close()
	idle := strconv.FormatFloat(Options{WarmIdle: w.idle}.warmIdle().Seconds(), 'f', -1, 64)
	cmd := exec.Command(w.py, append([]string{script, w.file(".sock"), w.file(".alive"), idle, "3", bs}, prepared...)...)
	cmd.Dir = w.dir
	cmd.Env = w.env
	cmd.Stdout, cmd.Stderr = log, log
	cmd.ExtraFiles = []*os.File{pw}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	pw.Close()
	if err != nil {
		return err
	}
	go cmd.Wait() // reap it if it exits while we live; otherwise init does
	deadline := time.Now().Add(warmStartTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	pr.SetReadDeadline(deadline)
	line, err := bufio.NewReader(pr).ReadString('\n')
	line = strings.TrimSpace(line)
	if line == "ready" {
		return nil
	}
	if err == nil {
		err = errors.New(line)
	}
	cmd.Process.Kill()
	return fmt.Errorf("starting warm server %s: %w", w.key, err)
}

// writeOnce writes data to path unless a file is already there (atomically, so
// concurrent writers and readers never see half a file).
func writeOnce(path string, data []byte) error {
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	tmp := fmt.Sprintf("%s.%d.tmp", path, os.Getpid())
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// lockWait takes an exclusive lock on path, waiting at most timeout (or until ctx ends).
func lockWait(ctx context.Context, path string, timeout time.Duration) (func(), error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return filelock.LockContext(ctx, path, nil)
}

type warmRequest struct {
	V    int               `json:"v"`
	Argv []string          `json:"argv"`
	Env  map[string]string `json:"env"`
	Cwd  string            `json:"cwd"`
	// Fds is how many fds follow the output: the child gets them as 3, 4, ...
	Fds int `json:"fds,omitempty"`
}

// sendWarmRequest sends req, passing output (the write end of the job's output pipe)
// and extra (the child's fds 3, 4, ...) along with its first byte.
func sendWarmRequest(conn *net.UnixConn, output *os.File, req warmRequest, extra ...*os.File) error {
	req.Fds = len(extra)
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	fds := []int{int(output.Fd())}
	for _, f := range extra {
		fds = append(fds, int(f.Fd()))
	}
	if _, _, err := conn.WriteMsgUnix([]byte{'K'}, syscall.UnixRights(fds...), nil); err != nil {
		return err
	}
	_, err = conn.Write(append(b, '\n'))
	return err
}

type warmReply struct {
	Pid    int     `json:"pid,omitempty"`
	Status *uint32 `json:"status,omitempty"`
	Error  string  `json:"error,omitempty"`
	// What the bootstrap of a spare's call handed back with its status
	// (docs/warm-workers.md, "The result in the status"): its envelope, and its value if
	// small.
	Envelope json.RawMessage `json:"envelope,omitempty"`
	Value    []byte          `json:"value,omitempty"`
	err      error
}

// handed is a call's envelope and small value, handed back with its exit status instead
// of written as files in its output directory.
type handed struct {
	envelope []byte
	value    []byte // nil: none handed back (a larger one is a file)
}

// runWarm runs argv (the bootstrap and its arguments) in a child of the warm server for
// py, its output going to out. It returns nil when the call exited 0, a *waitError for
// another status, an error wrapping errNoWarm if nothing was started (run it cold), or
// another error if the call started but its outcome is unknown. With lease (a
// long-lived runner), the call goes to the spare LeaseAhead leased for it, if that is
// of the same server (the next LeaseAhead leases from this call's).
//
// Cancellation is as for a cold start: ctx cancelled → SIGTERM to the call's process
// group, SIGKILL after grace; once the call ends, SIGKILL to whatever is left of its
// group. If this process dies, the server sees the connection close and kills the group.
func runWarm(ctx context.Context, dir string, idle time.Duration, py string, argv []string, cwd string, environ []string, out io.Writer, grace time.Duration, lease bool) (*handed, error) {
	w, err := warmFor(dir, py, environ)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errNoWarm, err)
	}
	w.idle = idle
	calltrace.Mark("warm.connect", "")
	c := &warmCall{w: w, grace: grace}
	if err := c.connect(ctx, lease); err != nil {
		return nil, err
	}
	defer func() { c.conn.Close() }()
	calltrace.Mark("warm.connected", "")
	if err := c.startOutput(out); err != nil {
		return nil, err
	}
	defer c.pr.Close()
	if err := c.begin(ctx, warmRequest{V: warmProto, Argv: argv, Env: envMap(environ), Cwd: cwd}); err != nil {
		return nil, err
	}
	calltrace.Mark("warm.pid", "")
	c.wait(ctx)
	syscall.Kill(-c.pid, syscall.SIGKILL) // a job's processes end with the job
	c.drainOutput()
	calltrace.Mark("warm.output.copied", "")
	return c.got, c.result
}

// warmCall is one call run by a child of a warm server, in runWarm's stages: connect,
// startOutput, begin, wait, drainOutput.
type warmCall struct {
	w      *warmServer
	grace  time.Duration
	conn   *net.UnixConn
	leased bool // conn is a leased spare's

	pr, pw *os.File      // the call's output pipe
	copied chan struct{} // closed once the output is copied

	pid     int
	replies <-chan warmReply

	lost   bool    // the server died: the call runs on, orphaned
	got    *handed // the envelope and value handed back with the status
	result error
}

// connect takes the spare leased for this call (with lease), else connects to the
// server. An error wraps errNoWarm.
func (c *warmCall) connect(ctx context.Context, lease bool) error {
	if lease {
		c.conn = takeLease(c.w)
	}
	if c.leased = c.conn != nil; c.leased {
		calltrace.Mark("warm.leased", "")
		return nil
	}
	var err error
	if c.conn, err = c.w.connect(ctx); err != nil {
		return fmt.Errorf("%w: %v", errNoWarm, err)
	}
	return nil
}

// startOutput makes the call's output pipe and copies what comes out of it to out.
func (c *warmCall) startOutput(out io.Writer) error {
	pr, pw, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("%w: %v", errNoWarm, err)
	}
	c.pr, c.pw, c.copied = pr, pw, make(chan struct{})
	go func() {
		io.Copy(out, pr)
		close(c.copied)
	}()
	return nil
}

// envMap is environ (KEY=VALUE lines) as a map.
func envMap(environ []string) map[string]string {
	env := make(map[string]string, len(environ))
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	return env
}

// begin sends req and waits for the pid of the child that runs it. A leased spare that
// is gone (killed, or its server) ran nothing: the server is asked instead.
func (c *warmCall) begin(ctx context.Context, req warmRequest) error {
	pid, replies, err := beginWarm(c.conn, c.pw, req)
	if err != nil && c.leased {
		c.conn.Close()
		if c.conn, err = c.w.connect(ctx); err != nil {
			c.pw.Close()
			return fmt.Errorf("%w: %v", errNoWarm, err)
		}
		pid, replies, err = beginWarm(c.conn, c.pw, req)
	}
	c.pw.Close()
	c.pid, c.replies = pid, replies
	return err
}

// wait waits for the call's status. Cancellation is as for a cold start: ctx cancelled
// → SIGTERM to the call's process group, SIGKILL after grace.
func (c *warmCall) wait(ctx context.Context) {
	done := ctx.Done()
	var kill <-chan time.Time
	for {
		select {
		case rep := <-c.replies:
			if c.reply(rep) {
				return
			}
		case <-c.poll():
			if syscall.Kill(c.pid, 0) == syscall.ESRCH {
				return
			}
		case <-done:
			done = nil
			syscall.Kill(-c.pid, syscall.SIGTERM)
			t := time.NewTimer(c.grace)
			defer t.Stop()
			kill = t.C
		case <-kill:
			kill = nil
			syscall.Kill(-c.pid, syscall.SIGKILL)
		}
	}
}

// poll ticks while the call is orphaned (its server died): it is waited for by polling.
func (c *warmCall) poll() <-chan time.Time {
	if !c.lost {
		return nil
	}
	return time.After(20 * time.Millisecond)
}

// reply takes one reply of the server; it reports whether the call has ended.
func (c *warmCall) reply(rep warmReply) bool {
	switch {
	case rep.Status != nil:
		if ws := syscall.WaitStatus(*rep.Status); ws != 0 {
			c.result = &waitError{ws}
		}
		if len(rep.Envelope) > 0 {
			c.got = &handed{envelope: rep.Envelope, value: rep.Value}
		}
		calltrace.Mark("warm.status", "")
		return true
	case rep.err != nil || rep.Error != "":
		// The server died: the call runs on, orphaned. Wait for it by polling.
		c.lost, c.result = true, errWarmLost
	}
	return false
}

// drainOutput waits for the output still in the pipe to be copied; a descendant that
// left the group and keeps the pipe open gets grace, as with a cold start's WaitDelay.
func (c *warmCall) drainOutput() {
	select {
	case <-c.copied:
	case <-time.After(c.grace):
		c.pr.Close()
		<-c.copied
	}
}

// beginWarm sends req on conn (a connection to the server, or to a leased spare) with
// the output pw, and waits for the pid of the child that runs it. It returns the pid and
// the channel of the replies that follow (its status). An error wraps errNoWarm:
// nothing was started.
func beginWarm(conn *net.UnixConn, pw *os.File, req warmRequest) (int, <-chan warmReply, error) {
	err := sendWarmRequest(conn, pw, req)
	calltrace.Mark("warm.sent", "")
	if err != nil {
		return 0, nil, fmt.Errorf("%w: sending the request: %v", errNoWarm, err)
	}
	replies := make(chan warmReply, 2)
	go readReplies(conn, replies)
	// Until the server (or the leased spare) says which child runs the call, nothing has
	// started.
	select {
	case rep := <-replies:
		pid, err := startedPid(rep)
		if err != nil {
			return 0, nil, err
		}
		return pid, replies, nil
	case <-time.After(warmStartTimeout):
		return 0, nil, fmt.Errorf("%w: no reply from the server within %s", errNoWarm, warmStartTimeout)
	}
}

// readReplies sends the replies read from conn to replies, up to the last: a status, an
// error, or a failure to read one.
func readReplies(conn *net.UnixConn, replies chan<- warmReply) {
	r := bufio.NewReader(conn)
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			replies <- warmReply{err: err}
			return
		}
		var rep warmReply
		if err := json.Unmarshal(line, &rep); err != nil {
			rep.err = fmt.Errorf("bad reply %q: %w", line, err)
		}
		replies <- rep
		if rep.err != nil || rep.Status != nil || rep.Error != "" {
			return
		}
	}
}

// warmLease is the spare child a long-lived runner holds for its next call
// (warmserver.py, "A lease"), leased once its last call has ended (LeaseAhead): that
// call sends its request to the spare itself, and the server's accept, read and
// hand-over are off its path. The spare is of the server the last call used: the next
// call most likely needs the same one (another gives it back).
var warmLease struct {
	sync.Mutex
	last     *warmServer   // the server of this process's last call that could lease
	sock     string        // the leased spare's server socket
	conn     *net.UnixConn // the lease: a connection the spare holds
	pid      int           // the leased spare's
	renewing chan struct{} // closed when the lease being taken is there, or not
}

// LeaseAhead leases, in the background, a spare child of the warm server that this
// process's last call used, for its next call (runner Options.LeaseSpare). A long-lived
// supervisor calls it once a job has ended and says so. The lease lasts until a call
// takes it or this process exits (its spare then exits, having run nothing); the
// returned function gives it back sooner.
func LeaseAhead() (release func()) {
	warmLease.Lock()
	defer warmLease.Unlock()
	if warmLease.last == nil || warmLease.conn != nil || warmLease.renewing != nil {
		return releaseLease
	}
	w, done := warmLease.last, make(chan struct{})
	warmLease.renewing = done
	go func() {
		w.renewLease()
		warmLease.Lock()
		warmLease.renewing = nil
		warmLease.Unlock()
		close(done)
	}()
	return releaseLease
}

// releaseLease closes the lease held, if any: its spare exits, having run nothing.
func releaseLease() {
	warmLease.Lock()
	c := warmLease.conn
	warmLease.conn = nil
	warmLease.Unlock()
	if c != nil {
		c.Close()
	}
}

// takeLease returns the lease held on w's server, waiting for one being taken (the
// caller owns it), or nil. A lease on another server is given back.
func takeLease(w *warmServer) *net.UnixConn {
	warmLease.Lock()
	wait := warmLease.renewing
	warmLease.Unlock()
	if wait != nil {
		select {
		case <-wait:
		case <-time.After(warmStartTimeout):
		}
	}
	warmLease.Lock()
	defer warmLease.Unlock()
	warmLease.last = w
	c := warmLease.conn
	if c == nil {
		return nil
	}
	warmLease.conn = nil
	if warmLease.sock != w.file(".sock") {
		c.Close()
		return nil
	}
	return c
}

// renewLease leases a spare of w's server for this process's next call, in place of any
// lease held. A server that is not running is not started for it: the call starts it.
func (w *warmServer) renewLease() {
	conn, err := w.dialLive()
	if err != nil {
		return
	}
	ok := false
	defer func() {
		if !ok {
			conn.Close()
		}
	}()
	conn.SetDeadline(time.Now().Add(warmStartTimeout))
	if _, _, err := conn.WriteMsgUnix([]byte{'L'}, nil, nil); err != nil {
		return
	}
	if _, err := fmt.Fprintf(conn, "{\"v\":%d,\"lease\":true}\n", warmProto); err != nil {
		return
	}
	// Nothing else comes on this connection before the request is sent: the buffer
	// holds the reply alone.
	line, err := bufio.NewReader(conn).ReadBytes('\n')
	if err != nil {
		return
	}
	var rep struct {
		Leased int `json:"leased"`
	}
	if json.Unmarshal(line, &rep) != nil || rep.Leased <= 0 {
		return
	}
	conn.SetDeadline(time.Time{})
	warmLease.Lock()
	old := warmLease.conn
	warmLease.sock, warmLease.conn, warmLease.pid = w.file(".sock"), conn, rep.Leased
	warmLease.Unlock()
	if old != nil {
		old.Close()
	}
	ok = true
}

func debugEnabled() bool {
	v := os.Getenv("KINETIC_DEBUG")
	return v != "" && v != "0" && v != "false"
}

func debugf(out io.Writer, format string, args ...any) {
	if debugEnabled() {
		fmt.Fprintf(out, "kinetic: debug: "+format+"\n", args...)
	}
}

// warmProc is a process a warm server started for us (its child, not ours): its pid,
// and done, closed once it has ended.
type warmProc struct {
	pid  int
	done chan struct{}
	// ws is its wait status once done, nil if the server died first (then done closes
	// once the process is gone).
	ws *syscall.WaitStatus
}

// startWarmProc starts argv in a child of the warm server for py, its output going to
// out and extra becoming its fds 3, 4, ... (the caller closes its own copies). An error
// wrapping errNoWarm means nothing was started.
func startWarmProc(dir string, idle time.Duration, py string, argv []string, cwd string, environ []string, out *os.File, extra ...*os.File) (*warmProc, error) {
	w, err := warmFor(dir, py, environ)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errNoWarm, err)
	}
	w.idle = idle
	conn, err := w.connect(context.Background())
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errNoWarm, err)
	}
	if err := sendWarmRequest(conn, out, warmRequest{V: warmProto, Argv: argv, Env: envMap(environ), Cwd: cwd}, extra...); err != nil {
		conn.Close()
		return nil, fmt.Errorf("%w: sending the request: %v", errNoWarm, err)
	}
	r := bufio.NewReader(conn)
	conn.SetReadDeadline(time.Now().Add(warmStartTimeout))
	pid, err := startedPid(readWarmReply(r))
	if err != nil {
		conn.Close()
		return nil, err
	}
	conn.SetReadDeadline(time.Time{})
	p := &warmProc{pid: pid, done: make(chan struct{})}
	go p.follow(conn, r)
	return p, nil
}

// readWarmReply reads one reply line; a failure to read or decode it is its err.
func readWarmReply(r *bufio.Reader) warmReply {
	line, err := r.ReadBytes('\n')
	var rep warmReply
	if err == nil {
		err = json.Unmarshal(line, &rep)
	}
	rep.err = err
	return rep
}

// startedPid is the pid of the child that runs a call, from the server's first reply;
// an error wraps errNoWarm: nothing was started.
func startedPid(rep warmReply) (int, error) {
	switch {
	case rep.err != nil:
		return 0, fmt.Errorf("%w: %v", errNoWarm, rep.err)
	case rep.Error != "":
		return 0, fmt.Errorf("%w: server: %s", errNoWarm, rep.Error)
	case rep.Pid <= 0:
		return 0, fmt.Errorf("%w: reply without a pid", errNoWarm)
	}
	return rep.Pid, nil
}

// follow waits for the process's status on conn (read through r), then closes p.done.
func (p *warmProc) follow(conn *net.UnixConn, r *bufio.Reader) {
	defer close(p.done)
	// Closing the connection tells the server to kill the process's group: only
	// once it has ended.
	defer conn.Close()
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			break
		}
		var rep warmReply
		if json.Unmarshal(line, &rep) == nil && rep.Status != nil {
			ws := syscall.WaitStatus(*rep.Status)
			p.ws = &ws
			return
		}
	}
	// The server died: the process runs on, orphaned, until it is gone.
	for syscall.Kill(p.pid, 0) != syscall.ESRCH {
		time.Sleep(20 * time.Millisecond)
	}
}
