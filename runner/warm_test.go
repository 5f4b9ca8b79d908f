package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
	"github.com/kinetic-run/kinetic/testkit/tier"
)

// realPython finds an interpreter binary (not a wrapper script such as a pyenv shim,
// which warm mode refuses). withCloudpickle asks for one that can import cloudpickle.
func realPython(t testing.TB, withCloudpickle bool) string {
	t.Helper()
	tier.Heavy(t, "runs jobs in Python processes")
	var cands []string
	if p := os.Getenv("KINETIC_TEST_PYTHON"); p != "" {
		cands = append(cands, p)
	}
	cands = append(cands, "/usr/bin/python3")
	if p, err := exec.LookPath("python3"); err == nil {
		cands = append(cands, p)
	}
	for _, p := range cands {
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			continue
		}
		head := make([]byte, 2)
		if f, err := os.Open(real); err == nil {
			io.ReadFull(f, head)
			f.Close()
		}
		if string(head) == "#!" {
			continue
		}
		if withCloudpickle && exec.Command(p, "-c", "import cloudpickle").Run() != nil {
			continue
		}
		return p
	}
	t.Skip("no Python 3 interpreter binary found (set KINETIC_TEST_PYTHON)")
	return ""
}

// harness builds jobs in a file:// store and runs them with runner.Run.
type harness struct {
	t    testing.TB
	url  string
	st   *store.Store
	warm string // WarmDir
	cold bool   // run without WarmDir (warm=false)
	// lease runs calls as a long-lived supervisor does (Options.LeaseSpare), and leases
	// the next call's spare after each (LeaseAhead).
	lease bool
	idle  time.Duration
	py    string
	ws    string
	n     int
}

func newHarness(t testing.TB) *harness {
	t.Helper()
	dir := t.TempDir()
	h := &harness{t: t, url: "file://" + filepath.Join(dir, "store"), warm: filepath.Join(dir, "warm"), ws: filepath.Join(dir, "ws"), py: realPython(t, false)}
	st, err := store.Open(context.Background(), h.url)
	if err != nil {
		t.Fatal(err)
	}
	h.st = st
	t.Cleanup(func() {
		killServers(h.warm)
		st.Close()
	})
	return h
}

// killServers ends the warm servers whose alive files are in dir.
func killServers(dir string) {
	files, _ := filepath.Glob(filepath.Join(dir, "*.alive"))
	for _, f := range files {
		if pid := readPid(f); pid > 0 {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

func readPid(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// serverPID is the pid of the one warm server in h.warm.
func (h *harness) serverPID() int {
	h.t.Helper()
	files, _ := filepath.Glob(filepath.Join(h.warm, "*.alive"))
	if len(files) != 1 {
		h.t.Fatalf("want 1 warm server, have alive files %v", files)
	}
	return readPid(files[0])
}

// entry stores a python-entry job calling fn in a main.py made of src and returns its ID.
// The file is put straight into the job's shipped root (no working-directory archive),
// so these tests do not depend on how working directories travel.
func (h *harness) entry(src, fn string, env map[string]string, args ...string) string {
	h.t.Helper()
	h.n++
	id := fmt.Sprintf("warm-test-%d", h.n)
	root := filepath.Join(h.ws, id, "root")
	if err := os.MkdirAll(root, 0o755); err != nil {
		h.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "main.py"), []byte(src), 0o644); err != nil {
		h.t.Fatal(err)
	}
	spec := &job.Spec{Version: job.SpecVersion, JobID: id, Kind: job.KindEntry, Python: h.py,
		Entry: &job.Entry{File: "main.py", Func: fn, Args: args}}
	h.putEnv(id, spec, env)
	return id
}

func (h *harness) putEnv(id string, spec *job.Spec, env map[string]string) {
	h.t.Helper()
	ctx := context.Background()
	for k := range env {
		spec.EnvNames = append(spec.EnvNames, k)
	}
	if len(env) > 0 {
		b, _ := json.Marshal(env)
		if err := h.st.Put(ctx, store.EnvKey(id), b); err != nil {
			h.t.Fatal(err)
		}
	}
	if err := h.st.Put(ctx, store.SpecKey(id), spec.Encode()); err != nil {
		h.t.Fatal(err)
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader in two goroutines; it
// closes seen the first time the output contains mark.
type syncBuffer struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	mark string
	// seen is closed once mark was written. It stays set: a reader that takes it after
	// the mark appeared must still find it closed.
	seen   chan struct{}
	closed bool
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Write(p)
	if b.seen != nil && !b.closed && strings.Contains(b.buf.String(), b.mark) {
		close(b.seen)
		b.closed = true
	}
	return len(p), nil
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// run runs job id with warm workers on (unless warm is false) and returns its envelope
// and output.
func (h *harness) run(ctx context.Context, id string, out *syncBuffer) *job.Envelope {
	h.t.Helper()
	if out == nil {
		out = &syncBuffer{}
	}
	warm := h.warm
	if h.cold {
		warm = ""
	}
	env, err := Run(ctx, Options{StoreURL: h.url, JobID: id, Workspace: filepath.Join(h.ws, id), Stdout: out, WarmDir: warm, WarmIdle: h.idle, LeaseSpare: h.lease})
	if h.lease {
		LeaseAhead()
	}
	if err != nil {
		h.t.Fatalf("Run %s: %v\noutput:\n%s", id, err, out.String())
	}
	return env
}

// value runs job id, which must succeed, and returns repr(value).
func (h *harness) value(id string) string {
	h.t.Helper()
	out := &syncBuffer{}
	env := h.run(context.Background(), id, out)
	if !env.Success {
		h.t.Fatalf("job %s failed: %s: %s (phase %s)\n%s\noutput:\n%s", id, env.ExcType, env.ExcMessage, env.Phase, env.Traceback, out.String())
	}
	return env.ValueRepr
}

// pids parses the "[pid, ppid]" a job returned.
func pids(t testing.TB, repr string) (pid, ppid int) {
	t.Helper()
	if _, err := fmt.Sscanf(repr, "[%d, %d]", &pid, &ppid); err != nil {
		t.Fatalf("value %q: %v", repr, err)
	}
	return pid, ppid
}

const pidsSrc = `
import os
def pids():
    print("hello from the job")
    return [os.getpid(), os.getppid()]
`

func TestWarmReusesServer(t *testing.T) {
	h := newHarness(t)
	out := &syncBuffer{}
	env := h.run(context.Background(), h.entry(pidsSrc, "pids", nil), out)
	if !env.Success {
		t.Fatalf("first job failed: %+v\n%s", env, out)
	}
	if !strings.Contains(out.String(), "hello from the job") {
		t.Errorf("the job's output did not reach the runner: %q", out)
	}
	pid1, ppid1 := pids(t, env.ValueRepr)
	server := h.serverPID()
	if ppid1 != server {
		t.Errorf("first job's parent is %d, want the warm server %d", ppid1, server)
	}
	pid2, ppid2 := pids(t, h.value(h.entry(pidsSrc, "pids", nil)))
	if got := h.serverPID(); got != server {
		t.Errorf("second job started a new server %d, want %d reused", got, server)
	}
	if ppid2 != server {
		t.Errorf("second job's parent is %d, want the warm server %d", ppid2, server)
	}
	if pid1 == pid2 {
		t.Errorf("both jobs ran in process %d; want a fresh child each", pid1)
	}
}

func TestWarmPickle(t *testing.T) {
	h := newHarness(t)
	h.py = realPython(t, true)
	mk := `import cloudpickle, sys
def f(a, b, c=0):
    import os
    return (a + b + c, os.getppid())
sys.stdout.buffer.write(cloudpickle.dumps((f, (2, 3), {"c": 4})))`
	payload, err := exec.Command(h.py, "-c", mk).Output()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		id := fmt.Sprintf("pickle-%d", i)
		key, sum, err := h.st.PutBlob(ctx, payload)
		if err != nil {
			t.Fatal(err)
		}
		h.putEnv(id, &job.Spec{Version: job.SpecVersion, JobID: id, Kind: job.KindPickle, Python: h.py,
			Payload: &job.BlobRef{Key: key, SHA256: sum, Size: int64(len(payload))}}, nil)
		got := h.value(id)
		if want := fmt.Sprintf("(9, %d)", h.serverPID()); got != want {
			t.Errorf("job %d: value %s, want %s (run by the warm server)", i, got, want)
		}
	}
}

// leakSrc: leak leaves state in its process (a module's attribute and entry, a variable,
// sys.path, a file in its directory, a thread) and returns its pid; check reports what
// of it a later call sees, with its pid and its parent's.
const leakSrc = `
import os, sys, json, threading, time
def leak():
    json.KINETIC_LEAK = 1
    sys.modules["kinetic_leaky"] = json
    os.environ["KINETIC_LEAK"] = "1"
    sys.path.append("/kinetic-leak")
    open("left-behind", "w").close()
    threading.Thread(target=time.sleep, args=(30,), daemon=True, name="kinetic-leak").start()
    return os.getpid()
def check():
    return [hasattr(json, "KINETIC_LEAK"), "kinetic_leaky" in sys.modules, os.environ.get("KINETIC_LEAK"),
            "/kinetic-leak" in sys.path, os.path.exists("left-behind"),
            any(t.name == "kinetic-leak" for t in threading.enumerate()), os.getpid(), os.getppid()]
`

// leakFree is check's answer when nothing leaked, in process pid (any if 0) of parent ppid.
func leakFree(got string, pid, ppid int) bool {
	const clean = "[False, False, None, False, False, False, "
	var gp, gpp int
	if !strings.HasPrefix(got, clean) {
		return false
	}
	if _, err := fmt.Sscanf(got[len(clean):], "%d, %d]", &gp, &gpp); err != nil {
		return false
	}
	return (pid == 0 || gp == pid) && gpp == ppid
}

func TestWarmIsolation(t *testing.T) {
	h := newHarness(t)
	if got := h.value(h.entry(leakSrc, "leak", nil)); got == "" || strings.Trim(got, "0123456789") != "" {
		t.Fatalf("leak: %s", got)
	}
	if got := h.value(h.entry(leakSrc, "check", nil)); !leakFree(got, 0, h.serverPID()) {
		t.Errorf("after a job leaked state, the next saw %s, want nothing of it, run by the warm server %d", got, h.serverPID())
	}
}

// TestWarmKeepsNoRequest: the server forks every later child from its own memory, so it
// must keep nothing of a request it served (the job's environment holds secrets). A
// second job looks through every object it inherited for the first job's value.
func TestWarmKeepsNoRequest(t *testing.T) {
	h := newHarness(t)
	src := `
import gc, os
def first():
    return os.environ["KINETIC_TEST_SECRET"]
def second(reversed_secret):
    secret = reversed_secret[::-1]  # as given, it is in this job's own arguments
    gc.unfreeze()  # the server froze what it had (gc.freeze): get_objects shows it now
    hits = []
    for o in gc.get_objects():
        try:
            if isinstance(o, dict):
                vals = list(o.values())
            elif isinstance(o, (list, tuple)):
                vals = list(o)
            else:
                vals = list(vars(o).values()) if hasattr(o, "__dict__") else []
        except Exception:
            continue
        for v in vals:
            if isinstance(v, (str, bytes, bytearray)) and secret.encode() in (v.encode() if isinstance(v, str) else bytes(v)):
                hits.append(type(o).__name__)
    return hits
`
	secret := "kn-secret-" + strconv.Itoa(os.Getpid()) + "-4f1c9a"
	// Two jobs with it: the spare that runs the next one was forked after at least one of
	// their requests was served (the first may have found a spare forked before it).
	// Each given time for the spare forked after it to warm up (a call that finds none
	// ready forks on arrival, after its own request was read).
	for range 2 {
		if got := h.value(h.entry(src, "first", map[string]string{"KINETIC_TEST_SECRET": secret})); got != "'"+secret+"'" {
			t.Fatalf("first: %s", got)
		}
		time.Sleep(time.Second)
	}
	reversed := []rune(secret)
	for i, j := 0, len(reversed)-1; i < j; i, j = i+1, j-1 {
		reversed[i], reversed[j] = reversed[j], reversed[i]
	}
	if got := h.value(h.entry(src, "second", nil, "'"+string(reversed)+"'")); got != "[]" {
		t.Errorf("a later job found the first job's environment value in objects of types %s", got)
	}
}

func TestWarmCrashFailsOnlyThatJob(t *testing.T) {
	h := newHarness(t)
	src := `
import os
def exit3():
    os._exit(3)
def segv():
    import ctypes
    ctypes.string_at(0)
def boom():
    raise ValueError("boom")
` + pidsSrc
	h.value(h.entry(src, "pids", nil))
	server := h.serverPID()
	for _, c := range []struct{ fn, want string }{
		{"exit3", "python exited without a result (exit code 3)"},
		{"segv", "python exited without a result (killed by signal segmentation fault)"},
		{"boom", "boom"},
	} {
		out := &syncBuffer{}
		env := h.run(context.Background(), h.entry(src, c.fn, nil), out)
		if env.Success {
			t.Fatalf("%s: succeeded, want a failure", c.fn)
		}
		if !strings.Contains(env.ExcMessage, c.want) {
			t.Errorf("%s: reason %q, want it to contain %q\n%s", c.fn, env.ExcMessage, c.want, out)
		}
		_, ppid := pids(t, h.value(h.entry(src, "pids", nil)))
		if ppid != server || h.serverPID() != server {
			t.Errorf("after %s: next job ran under %d, want the same server %d", c.fn, ppid, server)
		}
	}
}

func TestWarmCancel(t *testing.T) {
	const Grace = 1500 * time.Millisecond
	h := newHarness(t)
	src := `
import os, signal, sys, time
def sleep(ignore_term=False):
    if ignore_term:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    print("started %d ppid %d ." % (os.getpid(), os.getppid()), flush=True)
    time.sleep(60)
`
	for _, c := range []struct {
		name string
		args []string
	}{{"term", nil}, {"ignores-term", []string{"True"}}} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			out := &syncBuffer{mark: " .", seen: make(chan struct{})}
			seen := out.seen
			id := h.entry(src, "sleep", nil, c.args...)
			type res struct {
				env *job.Envelope
				at  time.Time
			}
			done := make(chan res, 1)
			go func() {
				env, _ := Run(ctx, Options{StoreURL: h.url, JobID: id, Workspace: filepath.Join(h.ws, id), Stdout: out, WarmDir: h.warm, Grace: Grace})
				done <- res{env, time.Now()}
			}()
			select {
			case <-seen:
			case <-time.After(20 * time.Second):
				t.Fatalf("job did not start\n%s", out)
			}
			var pid, ppid int
			if _, err := fmt.Sscanf(out.String()[strings.Index(out.String(), "started"):], "started %d ppid %d", &pid, &ppid); err != nil || pid <= 0 {
				t.Fatalf("job output %q: %v", out, err)
			}
			if ppid != h.serverPID() {
				t.Errorf("job's parent %d is not the warm server %d", ppid, h.serverPID())
			}
			start := time.Now()
			cancel()
			var r res
			select {
			case r = <-done:
			case <-time.After(Grace + 5*time.Second):
				t.Fatalf("cancelled job still running after %s", Grace+5*time.Second)
			}
			if took := r.at.Sub(start); took > Grace+2*time.Second {
				t.Errorf("cancel took %s, want within Grace %s", took, Grace)
			}
			if r.env == nil || r.env.Success || !strings.Contains(r.env.ExcMessage, "cancelled") {
				t.Errorf("envelope %+v, want a cancelled failure", r.env)
			}
			if !gone(pid, 2*time.Second) {
				t.Errorf("job process %d still alive after cancel", pid)
			}
		})
	}
}

// gone waits up to d for pid to disappear.
func gone(pid int, d time.Duration) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if syscall.Kill(pid, 0) == syscall.ESRCH {
			return true
		}
	}
	return false
}

// TestWarmRunnerDeathKillsJob speaks the protocol by hand and then drops the connection,
// as a dying runner would: the server must kill the job.
func TestWarmRunnerDeathKillsJob(t *testing.T) {
	h := newHarness(t)
	w, err := warmFor(h.warm, h.py, os.Environ())
	if err != nil {
		t.Fatal(err)
	}
	conn, err := w.connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	runnerDies(t, conn, 0)
}

// runnerDies runs a job on conn (to the server, or to a leased spare) that starts a
// grandchild and sleeps, then closes conn as a dying runner would, and checks that the
// job's whole group is gone. want, if not 0, is the pid the job must run in.
func runnerDies(t *testing.T, conn *net.UnixConn, want int) {
	t.Helper()
	script := filepath.Join(t.TempDir(), "sleeper.py")
	os.WriteFile(script, []byte("import subprocess, time\nsubprocess.Popen(['sleep', '60'])\nprint('started', flush=True)\ntime.sleep(60)\n"), 0o644)
	pr, pw, _ := os.Pipe()
	defer pr.Close()
	env := map[string]string{"PATH": os.Getenv("PATH")}
	if err := sendWarmRequest(conn, pw, warmRequest{V: warmProto, Argv: []string{script}, Env: env, Cwd: filepath.Dir(script)}); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	var rep warmReply
	line := make([]byte, 100)
	n, err := conn.Read(line)
	if err != nil || json.Unmarshal(line[:n], &rep) != nil || rep.Pid <= 0 || want != 0 && rep.Pid != want {
		t.Fatalf("reply %q, %v; want a pid (%d if not 0)", line[:n], err, want)
	}
	buf := make([]byte, 7)
	if _, err := io.ReadFull(pr, buf); err != nil || string(buf) != "started" {
		t.Fatalf("job output %q, %v", buf, err)
	}
	conn.Close()
	if !gone(rep.Pid, 3*time.Second) {
		t.Fatalf("job %d still alive after its runner went away", rep.Pid)
	}
	// Its whole process group went too: the grandchild held the pipe, which now ends.
	pr.SetReadDeadline(time.Now().Add(3 * time.Second))
	if _, err := io.ReadAll(pr); err != nil {
		t.Errorf("the job's group kept its output open: %v", err)
	}
}

func TestWarmConcurrentJobs(t *testing.T) {
	h := newHarness(t)
	const n = 8
	ids := make([]string, n)
	for i := range ids {
		ids[i] = h.entry(pidsSrc, "pids", nil)
	}
	vals := make([]string, n)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			env, err := Run(context.Background(), Options{StoreURL: h.url, JobID: ids[i], Workspace: filepath.Join(h.ws, ids[i]), WarmDir: h.warm})
			if err != nil || !env.Success {
				t.Errorf("job %d: %v %+v", i, err, env)
				return
			}
			vals[i] = env.ValueRepr
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	server := h.serverPID() // exactly one server, however many runners raced to start it
	seen := map[int]bool{}
	for _, v := range vals {
		pid, ppid := pids(t, v)
		if ppid != server {
			t.Errorf("job ran under %d, want the server %d", ppid, server)
		}
		if seen[pid] {
			t.Errorf("two jobs ran in process %d", pid)
		}
		seen[pid] = true
	}
}

// TestWarmOff: without a warm directory (the local backend's setting warm=false) every
// call starts cold and nothing is left in the warm directory.
func TestWarmOff(t *testing.T) {
	h := newHarness(t)
	h.cold = true
	_, ppid := pids(t, h.value(h.entry(pidsSrc, "pids", nil)))
	if ppid != os.Getpid() {
		t.Errorf("with warm off the job's parent is %d, want this process %d (cold start)", ppid, os.Getpid())
	}
	if files, _ := filepath.Glob(filepath.Join(h.warm, "*")); len(files) != 0 {
		t.Errorf("warm off left files in the warm dir: %v", files)
	}
}

func TestWarmStartupEnvStartsCold(t *testing.T) {
	if os.Getenv("PYTHONHASHSEED") != "" {
		t.Skip("PYTHONHASHSEED is set for the runner itself")
	}
	h := newHarness(t)
	src := `
import os, sys
def f():
    return [sys.flags.hash_randomization, os.getppid()]
`
	got := h.value(h.entry(src, "f", map[string]string{"PYTHONHASHSEED": "0"}))
	if want := fmt.Sprintf("[0, %d]", os.Getpid()); got != want {
		t.Errorf("job with PYTHONHASHSEED=0 returned %s, want %s (a cold start that applies it)", got, want)
	}
	// Other captured variables are fine warm.
	got = h.value(h.entry(`
import os
def f():
    return [os.environ["MY_SETTING"], os.getppid()]
`, "f", map[string]string{"MY_SETTING": "x"}))
	if want := fmt.Sprintf("['x', %d]", h.serverPID()); got != want {
		t.Errorf("job with MY_SETTING returned %s, want %s", got, want)
	}
}

// killedServer runs a job to start a server, kills the server and returns its pid and
// the socket and alive file it left behind.
func killedServer(t *testing.T, h *harness) (pid int, sock, alive string) {
	t.Helper()
	h.value(h.entry(pidsSrc, "pids", nil))
	pid = h.serverPID()
	syscall.Kill(pid, syscall.SIGKILL)
	if !gone(pid, 5*time.Second) {
		t.Fatalf("server %d did not die", pid)
	}
	socks, _ := filepath.Glob(filepath.Join(h.warm, "*.sock"))
	alives, _ := filepath.Glob(filepath.Join(h.warm, "*.alive"))
	if len(socks) != 1 || len(alives) != 1 {
		t.Fatalf("want the dead server's socket and alive file left behind, have %v %v", socks, alives)
	}
	return pid, socks[0], alives[0]
}

func TestWarmStaleSocketReplaced(t *testing.T) {
	h := newHarness(t)
	old, _, _ := killedServer(t, h)
	_, ppid := pids(t, h.value(h.entry(pidsSrc, "pids", nil)))
	server := h.serverPID()
	if server == old || ppid != server {
		t.Errorf("after the server died: job under %d, server %d (old %d); want a new server running the job", ppid, server, old)
	}
}

// TestWarmServerDiesLeavingAChild: a server killed right after a fork leaves a child that
// has not yet closed the server's files (under load it may not run for a while). That
// child must not keep a new server from starting: the job would run cold. Here the
// child is made to wait on purpose.
func TestWarmServerDiesLeavingAChild(t *testing.T) {
	h := newHarness(t)
	_, sock, alive := killedServer(t, h)
	script := filepath.Join(t.TempDir(), "ws.py")
	if err := os.WriteFile(script, warmServerPy, 0o600); err != nil {
		t.Fatal(err)
	}
	// A server that listens, forks a child that keeps every file of the server's (as a
	// child does until it runs leave_server), and dies.
	prog := `
import importlib.util, os, sys, time
spec = importlib.util.spec_from_file_location("ws", sys.argv[1])
ws = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ws)
srv = ws.Server(sys.argv[2], sys.argv[3], 60)
srv.listen()
pid = os.fork()
if pid == 0:
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    time.sleep(60)
    os._exit(0)
print(pid, flush=True)
os._exit(0)
`
	out, err := exec.Command(h.py, "-c", prog, script, sock, alive).CombinedOutput()
	if err != nil {
		t.Fatalf("the dying server: %v: %s", err, out)
	}
	child, _ := strconv.Atoi(strings.TrimSpace(string(out)))
	if child <= 0 {
		t.Fatalf("the dying server printed %q", out)
	}
	defer syscall.Kill(child, syscall.SIGKILL)
	dead := readPid(alive)
	_, ppid := pids(t, h.value(h.entry(pidsSrc, "pids", nil)))
	if server := h.serverPID(); server == dead || ppid != server {
		t.Errorf("with the dead server's child still there: job under %d, server %d (dead %d); want a new server running the job", ppid, server, dead)
	}
}

func TestWarmServerExitsWhenIdle(t *testing.T) {
	h := newHarness(t)
	h.idle = 500 * time.Millisecond
	h.value(h.entry(pidsSrc, "pids", nil))
	server := h.serverPID()
	if !gone(server, 10*time.Second) {
		t.Fatalf("idle server %d did not exit", server)
	}
	if socks, _ := filepath.Glob(filepath.Join(h.warm, "*.sock")); len(socks) != 0 {
		t.Errorf("idle server left its socket: %v", socks)
	}
	_, ppid := pids(t, h.value(h.entry(pidsSrc, "pids", nil)))
	if ppid != h.serverPID() || ppid == server {
		t.Errorf("after the idle exit, job ran under %d; want a new server", ppid)
	}
}

func TestWarmForRefusals(t *testing.T) {
	py := realPython(t, false)
	base := os.Environ()
	dir := t.TempDir()
	shim := filepath.Join(dir, "python3")
	os.WriteFile(shim, []byte("#!/bin/sh\nexec python3 \"$@\"\n"), 0o755)
	for _, c := range []struct {
		name    string
		py      string
		env     []string
		dir     string
		wantErr string
	}{
		{"ok", py, base, dir, ""},
		{"startup var set", py, append(append([]string{}, base...), "PYTHONHASHSEED=1"), dir, "PYTHONHASHSEED"},
		{"LD var set", py, append(append([]string{}, base...), "LD_PRELOAD=/x.so"), dir, "LD_PRELOAD"},
		{"script interpreter", shim, base, dir, "is a script"},
		{"no interpreter", filepath.Join(dir, "nope"), base, dir, "nope"},
		{"socket path too long", py, base, filepath.Join(dir, strings.Repeat("d", 100)), "too long"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if strings.HasPrefix(c.name, "startup") && os.Getenv("PYTHONHASHSEED") == "1" {
				t.Skip("PYTHONHASHSEED=1 already")
			}
			_, err := warmFor(c.dir, c.py, c.env)
			switch {
			case c.wantErr == "" && err != nil:
				t.Errorf("warmFor: %v", err)
			case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
				t.Errorf("warmFor: %v, want an error containing %q", err, c.wantErr)
			}
		})
	}
}

// BenchmarkColdVsWarm runs a no-op python-entry job through runner.Run, cold and warm.
func BenchmarkColdVsWarm(b *testing.B) {
	for _, mode := range []string{"cold", "warm"} {
		b.Run(mode, func(b *testing.B) {
			h := newHarness(b)
			if mode == "cold" {
				h.warm = ""
			}
			src := "def noop():\n    return None\n"
			h.value(h.entry(src, "noop", nil)) // start the server outside the timing
			ids := make([]string, b.N)
			for i := range ids {
				ids[i] = h.entry(src, "noop", nil)
			}
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				h.value(ids[i])
			}
			b.ReportMetric(float64(time.Since(start).Microseconds())/1000/float64(b.N), "ms/op")
		})
	}
}

func TestWarmServerExitsWhenItsDirGoes(t *testing.T) {
	h := newHarness(t)
	h.value(h.entry(pidsSrc, "pids", nil))
	server := h.serverPID()
	if err := os.RemoveAll(h.warm); err != nil {
		t.Fatal(err)
	}
	if !gone(server, 15*time.Second) {
		syscall.Kill(server, syscall.SIGKILL)
		t.Fatalf("server %d outlived its directory", server)
	}
}

// childOf returns a live child of pid other than not (0 if none).
func childOf(pid, not int) int {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		raw, err := os.ReadFile(filepath.Join(d, "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so parse after its ')'.
		s := string(raw)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		n, _ := strconv.Atoi(filepath.Base(d))
		if len(f) > 1 && f[0] != "Z" && f[1] == strconv.Itoa(pid) && n != not {
			return n
		}
	}
	return 0
}

// The server forks a spare child ahead of the next call, and that call runs in it.
func TestWarmSpareChildTakesTheNextCall(t *testing.T) {
	h := newHarness(t)
	first, _ := pids(t, h.value(h.entry(pidsSrc, "pids", nil)))
	server := h.serverPID()
	// A spare takes a call only once it has warmed up (a call before that forks as
	// before), so a call may miss a spare just forked; a few calls, each given longer
	// to find one ready, must not all miss.
	last := first
	for attempt := 1; attempt <= 5; attempt++ {
		spare := 0
		for deadline := time.Now().Add(10 * time.Second); spare == 0 && time.Now().Before(deadline); {
			// The last call's process may still be on its way out: it said it was done.
			if spare = childOf(server, last); spare == 0 {
				time.Sleep(20 * time.Millisecond)
			}
		}
		if spare == 0 {
			t.Fatal("the idle warm server has no spare child")
		}
		time.Sleep(time.Duration(attempt) * 300 * time.Millisecond)
		pid, ppid := pids(t, h.value(h.entry(pidsSrc, "pids", nil)))
		if pid == spare && ppid == server {
			return
		}
		t.Logf("call %d ran in %d (parent %d), not in the spare %d of the server %d", attempt, pid, ppid, spare, server)
		last = pid
	}
	t.Error("no call ran in the warm server's spare child")
}

// A process the job forks that returns from the call is not the job's end: the job
// ends when its own process does (a spare child reports its exit early, so only the
// job's process may).
func TestWarmForkedProcessReturningIsNotTheEnd(t *testing.T) {
	h := newHarness(t)
	src := `
import os, time
def forky():
    if os.fork() == 0:
        return "child"
    time.sleep(1)
    return "parent"
`
	h.value(h.entry(pidsSrc, "pids", nil)) // a server with a spare for the next call
	for i := 0; i < 2; i++ {
		if got := h.value(h.entry(src, "forky", nil)); got != "'parent'" {
			t.Errorf("call %d: value %s, want 'parent' (the job ended when a process it forked returned)", i, got)
		}
	}
}

// TestEntryOfAnSDKScript: a FILE::FUNC job whose file was written for the SDK (`import
// kinetic`, `@kinetic.run(...)`, kinetic.Data) runs where the SDK is not installed (a
// job's image): the function itself is called (kerastest found `No module named
// 'kinetic'` in the pod before this).
func TestEntryOfAnSDKScript(t *testing.T) {
	h := newHarness(t)
	src := "import kinetic\n\n@kinetic.run(accelerator='cpu')\ndef f(x):\n    return [x * 2, kinetic.Data('/d')]\n\n@kinetic.run\ndef g():\n    return 'bare'\n"
	if got := h.value(h.entry(src, "f", nil, "21")); got != "[42, '/d']" {
		t.Errorf("f(21) = %s, want [42, '/d']", got)
	}
	if got := h.value(h.entry(src, "g", nil)); got != "'bare'" {
		t.Errorf("g() = %s, want 'bare'", got)
	}
}
