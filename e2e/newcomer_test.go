package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kinetic-run/kinetic/testkit/tmuxtest"
)

// TestNewcomerWalksTheReadme: the README opens with the two commands a fresh machine
// runs (make demo, make test), and its first `kinetic` commands, typed in a real
// terminal by a newcomer, show what they promise: help, the job's logs and value, an
// error that says what was expected (exit 2), the next steps after --async, and a doctor
// that says this machine is ready (issue 46).
func TestNewcomerWalksTheReadme(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(repoRoot(), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	first := regexp.MustCompile("(?s)```sh\n(.*?)```").FindSubmatch(readme)
	if first == nil || !strings.HasPrefix(string(first[1]), "make demo") || !strings.Contains(string(first[1]), "\nmake test") {
		t.Fatalf("the README's first commands are not make demo and make test:\n%s", first)
	}
	for _, s := range []string{"## Install", "## Run a function", "## Batches", "## Dashboard", "kinetic up", "## Examples", "## Documentation", "CONTRIBUTING.md", "docs/infrastructure.md"} {
		if !strings.Contains(string(readme), s) {
			t.Errorf("the README lacks %q", s)
		}
	}
	if i, j := strings.Index(string(readme), "containerd"), strings.Index(string(readme), "## Run a function"); i >= 0 && i < j {
		t.Errorf("contributor material (containerd) comes before the first job in the README")
	}

	e := newEnv(t)
	bin := filepath.Join(e.home, "bin")
	os.MkdirAll(bin, 0o755)
	if err := os.Symlink(e.bin, filepath.Join(bin, "kinetic")); err != nil {
		t.Fatal(err)
	}
	env := []string{"HOME=" + e.home, "KINETIC_HOME=" + filepath.Join(e.home, "data"), "KINETIC_PROFILES_FILE=" + filepath.Join(e.home, "profiles.json"),
		"PATH=" + bin + ":" + os.Getenv("PATH"), "KINETIC_PROJECT=", "GOOGLE_CLOUD_PROJECT=", "KINETIC_BACKEND=", "PS1=$ "}
	tm := tmuxtest.Start(t, e.dir, env, "sh")
	step := func(cmd, want string) string {
		t.Helper()
		tm.Type(cmd + `; echo "exit=$?"`)
		return tm.WaitFor(want, 90*time.Second)
	}

	// As the README says after make demo: bin/ on PATH.
	tm.Type("export PATH=" + bin + ":$PATH")
	s := step("kinetic --help", "exit=0")
	for _, w := range []string{"Usage:", "kinetic run examples/hello.py::main", "jobs"} {
		if !strings.Contains(s, w) {
			t.Errorf("kinetic --help lacks %q:\n%s", w, s)
		}
	}
	s = step("kinetic run examples/hello.py::main", "{'sum': 3, 'steps': 3}")
	if !strings.Contains(s, "step 3/3") {
		t.Errorf("the job's logs are not on the screen:\n%s", s)
	}
	tm.WaitFor("exit=0", 30*time.Second)
	s = step("kinetic jobs status", "exit=2")
	if !strings.Contains(s, "missing JOB_ID: kinetic jobs status JOB_ID (list them with `kinetic jobs list`)") || strings.Contains(s, "arg(s)") {
		t.Errorf("a missing JOB_ID:\n%s", s)
	}
	s = step("kinetic run examples/hello.py::mian", "did you mean main?")
	tm.WaitFor("exit=2", 30*time.Second)
	s = step("kinetic run --async examples/hello.py::main", "kinetic jobs result")
	if !regexp.MustCompile(`next: .kinetic jobs logs -f job-[0-9a-v]+`).MatchString(s) {
		t.Errorf("no next steps after --async:\n%s", s)
	}
	tm.WaitFor("exit=0", 30*time.Second)
	s = step("kinetic doctor", "ready: jobs can run")
	if strings.Contains(s, "kubeconfig") || strings.Contains(s, "not ready") {
		t.Errorf("doctor on the local backend:\n%s", s)
	}
	for _, g := range []string{"context canceled", "panic:", "goroutine "} {
		if strings.Contains(tm.Screen(), g) {
			t.Errorf("the terminal shows %q:\n%s", g, tm.Screen())
		}
	}
}
