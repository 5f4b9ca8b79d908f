package e2e

import (
	"crypto/rand"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kinetic-run/kinetic/testkit/tmuxtest"
)

// Long work says so on stderr: a big upload ends with one line in a pipe and a bar then
// that line on a terminal; a job that waits for a free slot says why after 2 s; --quiet
// says nothing of either.
func TestProgressAndPendingNotices(t *testing.T) {
	e := newEnv(t)
	big := make([]byte, 24<<20)
	rand.Read(big)
	if err := os.WriteFile(filepath.Join(e.dir, "weights.bin"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	r := e.run("run", "--", "true")
	if r.code != 0 || !strings.Contains(r.stderr, "kinetic: uploading the working directory: 24.0 MiB in") {
		t.Errorf("a 24 MiB upload in a pipe: %d\n%s", r.code, r.stderr)
	}
	if strings.Contains(r.stderr, "\r") {
		t.Errorf("a bar was drawn into a pipe:\n%q", r.stderr)
	}

	// On a terminal: a new file makes the upload happen again.
	rand.Read(big)
	os.WriteFile(filepath.Join(e.dir, "weights.bin"), big, 0o644)
	envs := []string{"KINETIC_HOME=" + filepath.Join(e.home, "data"), "KINETIC_PROFILES_FILE=" + filepath.Join(e.home, "profiles.json"), "HOME=" + e.home, "PATH=" + os.Getenv("PATH")}
	tm := tmuxtest.Start(t, e.dir, envs, e.bin, "run", "--", "true")
	if code := tm.Exit(60 * time.Second); code != 0 {
		t.Fatalf("run on a terminal: exit %d\n%s", code, tm.Screen())
	}
	if s := tm.Screen(); !strings.Contains(s, "kinetic: uploading the working directory: 24.0 MiB in") {
		t.Errorf("the terminal after a 24 MiB upload:\n%s", s)
	}

	// --quiet: neither the upload line nor the submitted line.
	rand.Read(big)
	os.WriteFile(filepath.Join(e.dir, "weights.bin"), big, 0o644)
	if r := e.run("run", "--quiet", "--", "echo", "hi"); r.code != 0 || strings.Contains(r.stderr, "uploading") || strings.Contains(r.stderr, "submitted") || !strings.Contains(r.stderr+r.stdout, "hi") {
		t.Errorf("run --quiet: %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}

	// One slot, held by a long job: the next waits, and says why after 2 s.
	os.Remove(filepath.Join(e.dir, "weights.bin"))
	one := []string{"KINETIC_LOCAL_SLOTS=1"}
	hold := e.submitAsyncEnv(t, one, "sleep", "60")
	e.waitStatus(t, hold, "RUNNING")
	done := make(chan result, 1)
	go func() { done <- e.runEnv(one, "run", "--", "echo", "second") }()
	time.Sleep(5 * time.Second)
	e.run("jobs", "cancel", hold)
	r = <-done
	if r.code != 0 || !strings.Contains(r.stderr, "has not started after 2s: waiting for a free slot: this machine runs 1 jobs at once (the setting local_slots)") {
		t.Errorf("a job waiting for a slot: %d\n%s", r.code, r.stderr)
	}
}

func (e *env) submitAsyncEnv(t *testing.T, extra []string, argv ...string) string {
	t.Helper()
	r := e.runEnv(extra, append([]string{"run", "--async", "--"}, argv...)...)
	id := strings.TrimSpace(r.stdout)
	if r.code != 0 || !strings.HasPrefix(id, "job-") {
		t.Fatalf("submit %v: %d %q", argv, r.code, r.stderr)
	}
	return id
}

// BatchHandle.results() shows a bar on a terminal while it waits, and leaves the line
// clean once the values are in; in a pipe it prints nothing.
func TestPythonResultsBar(t *testing.T) {
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	e := newEnv(t)
	script := "import time, kinetic\n\n@kinetic.run(accelerator='cpu')\ndef slow(i):\n    import time\n    time.sleep(0.3 * (i % 4))\n    return i\n\n" +
		"b = slow.run_async_map(range(40))\nr = b.results()\nprint('SUM', sum(r))\ntime.sleep(30)\n"
	os.WriteFile(filepath.Join(e.dir, "mapit.py"), []byte(script), 0o644)
	envs := []string{"KINETIC_HOME=" + filepath.Join(e.home, "data"), "KINETIC_PROFILES_FILE=" + filepath.Join(e.home, "profiles.json"), "HOME=" + e.home,
		"PATH=" + os.Getenv("PATH"), "KINETIC_BIN=" + e.bin, "PYTHONPATH=" + filepath.Join(repoRoot(), "python")}
	tm := tmuxtest.Start(t, e.dir, envs, py, "mapit.py")
	s := tm.WaitFor("/40) [", 90*time.Second)
	// Kinetic's one bar style (internal/bar): what, ok and failed counts, a bar, the
	// count, the time so far and the time left.
	if !regexp.MustCompile(`kinetic: batch grp-\S+: \d+ ok, 0 failed +\d+% \|[█ ]{24}\| \(\d+/40\) \[\d+s:\d+s\]`).MatchString(s) {
		t.Errorf("no bar (with ok/failed counts and the time left) while results() waits:\n%s", s)
	}
	s = tm.WaitFor("SUM 780", 90*time.Second)
	if strings.Contains(s, "/40) [") {
		t.Errorf("the bar was left on the screen:\n%s", s)
	}
	// In a pipe: nothing.
	cmd := exec.Command(py, "-c", strings.Replace(script, "time.sleep(30)\n", "", 1))
	cmd.Dir = e.dir
	cmd.Env = append(os.Environ(), envs...)
	out, err := cmd.CombinedOutput()
	if err != nil || strings.Contains(string(out), "kinetic: batch") || !strings.Contains(string(out), "SUM 780") {
		t.Errorf("results() in a pipe: %v\n%s", err, out)
	}
}
