package runner

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
)

// lockedBuffer is a log the executor's output goroutine writes while the test reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// pickled runs Python source that writes a pickle to stdout.
func pickled(t *testing.T, py, src string) []byte {
	t.Helper()
	out, err := exec.Command(py, "-c", "import cloudpickle, sys\n"+src).Output()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return out
}

// executorModes runs a test of executors started cold and by a warm server.
func executorModes(t *testing.T, test func(t *testing.T, warmDir string)) {
	t.Run("cold", func(t *testing.T) { test(t, "") })
	t.Run("warm", func(t *testing.T) {
		dir := t.TempDir()
		t.Cleanup(func() { killServers(dir) })
		test(t, dir)
	})
}

// checkStarter checks that x was started the way warmDir says: by the warm server in it,
// or by us.
func checkStarter(t *testing.T, x *Executor, warmDir string) {
	t.Helper()
	if warmDir == "" {
		if x.warm != nil {
			t.Errorf("started by a warm server without a warm directory")
		}
		return
	}
	files, _ := filepath.Glob(filepath.Join(warmDir, "*.alive"))
	if x.warm == nil || len(files) != 1 {
		t.Fatalf("the executor was not started by a warm server (alive files %v)", files)
	}
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", x.pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(raw)[strings.LastIndexByte(string(raw), ')')+1:])
	if server := readPid(files[0]); f[1] != strconv.Itoa(server) {
		t.Errorf("the executor's parent is %s, want the warm server %d", f[1], server)
	}
}

// newBatch prepares a batch whose function is the pickle fn.
func newBatch(t *testing.T, py string, fn []byte, isolation string, warmDir ...string) *Batch {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, "file://"+t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	sum := sha256.Sum256(fn)
	ref := &job.BlobRef{Key: store.BlobKey(hex.EncodeToString(sum[:])), SHA256: hex.EncodeToString(sum[:]), Size: int64(len(fn))}
	if err := st.Put(ctx, ref.Key, fn); err != nil {
		t.Fatal(err)
	}
	spec := &job.Spec{Version: job.SpecVersion, JobID: "job-batch", Kind: job.KindPickle, Payload: ref}
	b, err := PrepareBatch(ctx, st, spec, map[string]string{"CAPTURED": "yes"}, isolation, Options{Store: st, TreeDir: t.TempDir(), Python: py, WarmDir: strings.Join(warmDir, "")}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestExecutor: one Python runs input after input; each input's output reaches its own
// log (stdout and stderr, split at the marker even when it arrives in pieces), its value
// comes back pickled, an exception is an envelope with the exception pickled, and the
// captured environment and KINETIC_JOB_ID are the input's.
func TestExecutor(t *testing.T) { executorModes(t, testExecutor) }

func testExecutor(t *testing.T, warmDir string) {
	py := realPython(t, true)
	fn := pickled(t, py, `
import os
def f(x):
    if x == "boom":
        raise ValueError("bad input")
    print("out", x, os.environ["KINETIC_JOB_ID"], os.environ["CAPTURED"])
    print("err", x, file=sys.stderr)
    return x * 2
sys.stdout.buffer.write(cloudpickle.dumps(f))`)
	b := newBatch(t, py, fn, IsolationWorker, warmDir)
	own := &lockedBuffer{}
	x, err := b.Start(own)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	checkStarter(t, x, warmDir)
	if x.Failed != nil {
		t.Fatalf("the function did not load: %+v", x.Failed)
	}
	for i, in := range []string{"a", "boom", "c"} {
		args := pickled(t, py, `sys.stdout.buffer.write(cloudpickle.dumps(((`+"'"+in+"'"+`,), {})))`)
		log := &lockedBuffer{}
		env, value, err := x.Run(Input{JobID: "job-" + in}, args, log)
		if err != nil {
			t.Fatalf("input %d: %v", i, err)
		}
		if in == "boom" {
			if env.Success || env.ExcType != "builtins.ValueError" || env.Phase != "call" || !env.HasValue || len(value) == 0 {
				t.Errorf("a raising input: %+v, %d bytes", env, len(value))
			}
			if !strings.Contains(log.String(), "the call raised builtins.ValueError") {
				t.Errorf("its log %q", log.String())
			}
			continue
		}
		if !env.Success || env.ValueRepr != "'"+in+in+"'" || len(value) == 0 {
			t.Errorf("input %s: %+v", in, env)
		}
		if want := "out " + in + " job-" + in + " yes\nerr " + in + "\n"; log.String() != want {
			t.Errorf("input %s logged %q, want %q", in, log.String(), want)
		}
	}
	if strings.Contains(own.String(), "out ") {
		t.Errorf("an input's output reached the executor's own log: %q", own.String())
	}
}

// TestExecutorFailures: a function that cannot be loaded fails every input with the
// reason; an input that kills its Python is an error and the next executor runs on;
// with isolation "process" a crash is that input's envelope and the executor lives.
func TestExecutorFailures(t *testing.T) { executorModes(t, testExecutorFailures) }

func testExecutorFailures(t *testing.T, warmDir string) {
	py := realPython(t, true)
	bad := newBatch(t, py, []byte("not a pickle"), IsolationWorker, warmDir)
	x, err := bad.Start(&lockedBuffer{})
	if err != nil {
		t.Fatal(err)
	}
	env, _, err := x.Run(Input{JobID: "job-a"}, []byte("x"), &lockedBuffer{})
	if err != nil || env.Success || env.Phase != "unpickle" || env.ExcMessage == "" {
		t.Errorf("an unloadable function: %+v, %v", env, err)
	}
	x.Close()

	fn := pickled(t, py, `
import os
def f(x):
    if x == 2:
        os._exit(3)
    return x
sys.stdout.buffer.write(cloudpickle.dumps(f))`)
	args := func(v string) []byte {
		return pickled(t, py, `sys.stdout.buffer.write(cloudpickle.dumps(((`+v+`,), {})))`)
	}
	worker := newBatch(t, py, fn, IsolationWorker, warmDir)
	x, err = worker.Start(&lockedBuffer{})
	if err != nil {
		t.Fatal(err)
	}
	checkStarter(t, x, warmDir)
	if _, _, err := x.Run(Input{JobID: "job-2"}, args("2"), &lockedBuffer{}); err == nil || !strings.Contains(err.Error(), "python exited without a result (exit code 3)") {
		t.Errorf("a crash in the executor: %v", err)
	}
	x, err = worker.Start(&lockedBuffer{})
	if err != nil {
		t.Fatal(err)
	}
	if env, _, err := x.Run(Input{JobID: "job-1"}, args("1"), &lockedBuffer{}); err != nil || !env.Success {
		t.Errorf("after a crash, a new executor: %+v, %v", env, err)
	}
	x.Close()

	proc := newBatch(t, py, fn, IsolationProcess, warmDir)
	x, err = proc.Start(&lockedBuffer{})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	env, _, err = x.Run(Input{JobID: "job-2"}, args("2"), &lockedBuffer{})
	if err != nil || env.Success || !strings.Contains(env.ExcMessage, "exit code 3") {
		t.Errorf("a crash in a forked child: %+v, %v", env, err)
	}
	if env, _, err := x.Run(Input{JobID: "job-1"}, args("1"), &lockedBuffer{}); err != nil || !env.Success {
		t.Errorf("the same executor after a child's crash: %+v, %v", env, err)
	}
}

// TestCopyOutputSplitsAtTheMarker: the marker after an input's output is found when it
// arrives in pieces, and bytes that only look like its start are passed on.
func TestCopyOutputSplitsAtTheMarker(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	own, first := &lockedBuffer{}, &lockedBuffer{}
	x := &Executor{ended: make(chan struct{}, 1), own: own, sink: first}
	done := make(chan struct{})
	go func() { x.copyOutput(r); close(done) }()
	half := len(endOfInput) / 2
	w.Write([]byte("one\x00kin"))   // looks like the marker's start, is not
	w.Write([]byte("etic\nmore\n")) // ...
	w.Write(append([]byte("end"), endOfInput[:half]...))
	time.Sleep(20 * time.Millisecond)
	w.Write(endOfInput[half:])
	<-x.ended
	w.Write([]byte("between inputs\n"))
	w.Close()
	<-done
	if got := first.String(); got != "one\x00kinetic\nmore\nend" {
		t.Errorf("the input's log %q", got)
	}
	if got := own.String(); got != "between inputs\n" {
		t.Errorf("the executor's own log %q", got)
	}
}
