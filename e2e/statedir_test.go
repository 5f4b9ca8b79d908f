package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kinetic-run/kinetic/testkit/faultfs"
	"github.com/kinetic-run/kinetic/testkit/testproc"
)

// A full or read-only state directory (issue 45, item 1): KINETIC_HOME on a small file
// system of its own, the store elsewhere. `kinetic run` used to submit, then wait for
// ever "for a free slot (local_slots)": the supervisor could not write its claim, and
// tried again and again. Now the job fails within seconds naming the directory and the
// cause.
func TestStateDirFull(t *testing.T) {
	e := newEnv(t)
	home := faultfs.Tmpfs(t, 1024)
	testproc.StopUnderAtCleanup(t, home) // before the unmount
	faultfs.Fill(t, home)
	extra := []string{"KINETIC_HOME=" + home, "KINETIC_STORE=file://" + e.store}
	start := time.Now()
	r := e.runTimed(t, 60*time.Second, extra, "run", "examples/hello.py::main", "2")
	took := time.Since(start)
	if r.code == 0 {
		t.Fatalf("run on a full state directory succeeded: %q %q", r.stdout, r.stderr)
	}
	for _, want := range []string{home, "no space left on device", "KINETIC_HOME"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("the error does not say %q: %q", want, r.stderr)
		}
	}
	if took > 20*time.Second {
		t.Errorf("the job took %v to fail", took)
	}
	// A batch (its workers' state is there too).
	os.WriteFile(filepath.Join(e.dir, "m.py"), []byte(`import kinetic
@kinetic.run(accelerator="cpu")
def f(x):
    return x
try:
    f.run_async_map(range(3)).results(timeout=30)
except Exception as e:
    print(type(e).__name__, e)
`), 0o644)
	cmd := exec.Command("python3", "m.py")
	cmd.Dir = e.dir
	cmd.Env = append(os.Environ(), "KINETIC_BIN="+e.bin, "PYTHONPATH="+filepath.Join(repoRoot(), "python"), "HOME="+e.home, "KINETIC_PROJECT=",
		"KINETIC_PROFILES_FILE="+filepath.Join(e.home, "profiles.json"), "KINETIC_HOME="+home, "KINETIC_STORE=file://"+e.store)
	out, _ := cmd.CombinedOutput()
	for _, want := range []string{home, "no space left on device", "KINETIC_HOME"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("a batch's error does not say %q: %q", want, out)
		}
	}
}

func TestStateDirReadOnly(t *testing.T) {
	e := newEnv(t)
	home := faultfs.Tmpfs(t, 1024)
	testproc.StopUnderAtCleanup(t, home)
	if err := syscall.Mount("", home, "", syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
		t.Skipf("cannot remount read-only: %v", err)
	}
	extra := []string{"KINETIC_HOME=" + home, "KINETIC_STORE=file://" + e.store}
	r := e.runTimed(t, 60*time.Second, extra, "run", "examples/hello.py::main", "2")
	if r.code == 0 {
		t.Fatalf("run on a read-only state directory succeeded: %q %q", r.stdout, r.stderr)
	}
	for _, want := range []string{home, "read-only", "KINETIC_HOME"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("the error does not say %q: %q", want, r.stderr)
		}
	}
	if strings.Contains(r.stderr, "mkdir ") {
		t.Errorf("Go's words reach the user: %q", r.stderr)
	}
}

// runTimed runs the binary as runEnv does, killing it (and failing t) after limit.
func (e *env) runTimed(t *testing.T, limit time.Duration, extra []string, args ...string) result {
	t.Helper()
	done := make(chan result, 1)
	var cmdErr error
	go func() {
		r := e.runEnvCatch(extra, &cmdErr, args...)
		done <- r
	}()
	select {
	case r := <-done:
		return r
	case <-time.After(limit):
		t.Fatalf("kinetic %v still running after %v", args, limit)
	}
	return result{}
}

// runEnvCatch is runWith without t (for a goroutine): err is set if the binary could not
// be run at all.
func (e *env) runEnvCatch(extra []string, errp *error, args ...string) result {
	cmd := exec.Command(e.bin, args...)
	cmd.Dir = e.dir
	cmd.Env = append(append(os.Environ(), "KINETIC_HOME="+e.home+"/data", "KINETIC_PROFILES_FILE="+e.home+"/profiles.json", "HOME="+e.home, "KINETIC_PROJECT="), extra...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		*errp = err
		code = -1
	}
	return result{out.String(), errb.String(), code}
}
