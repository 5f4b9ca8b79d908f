// Package e2e drives the built kinetic binary the way a person does: through the CLI,
// with a real file store and the local backend.
package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kinetic-run/kinetic/testkit/srcroot"
	"github.com/kinetic-run/kinetic/testkit/testbin"
	"github.com/kinetic-run/kinetic/testkit/testproc"
)

type env struct {
	t     *testing.T
	bin   string
	home  string
	store string
	dir   string
}

func newEnv(t *testing.T) *env {
	home := t.TempDir()
	// Long-lived supervisors and jobs still winding down must not write into home while
	// it is removed.
	testproc.StopUnderAtCleanup(t, home)
	// A small project of its own, so jobs do not ship the whole repository.
	dir := filepath.Join(home, "proj")
	os.MkdirAll(filepath.Join(dir, "examples"), 0o755)
	b, err := os.ReadFile(filepath.Join(repoRoot(), "examples", "hello.py"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "examples", "hello.py"), b, 0o644)
	os.WriteFile(filepath.Join(dir, "requirements.txt"), nil, 0o644)
	return &env{t: t, bin: testbin.Path(t), home: home, store: filepath.Join(home, "data", "store"), dir: dir}
}

func repoRoot() string {
	return srcroot.MustDir()
}

type result struct {
	stdout, stderr string
	code           int
}

func (e *env) run(args ...string) result {
	e.t.Helper()
	return e.runIn(e.dir, args...)
}

func (e *env) runIn(dir string, args ...string) result {
	e.t.Helper()
	return e.runWith(dir, nil, args...)
}

// runEnv runs the binary in the project with extra environment variables.
func (e *env) runEnv(extra []string, args ...string) result {
	e.t.Helper()
	return e.runWith(e.dir, extra, args...)
}

func (e *env) runWith(dir string, extra []string, args ...string) result {
	e.t.Helper()
	cmd := exec.Command(e.bin, args...)
	cmd.Dir = dir
	// KINETIC_PROJECT from the caller's shell would choose GKE for every job (config's
	// backend default): tests that want a project give it in extra.
	cmd.Env = append(append(os.Environ(), "KINETIC_HOME="+filepath.Join(e.home, "data"), "KINETIC_PROFILES_FILE="+filepath.Join(e.home, "profiles.json"), "HOME="+e.home, "KINETIC_PROJECT="), extra...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		e.t.Fatal(err)
	}
	return result{out.String(), errb.String(), code}
}

// jobsInStore lists the job prefixes in the store.
func (e *env) jobsInStore() []string {
	ents, _ := os.ReadDir(filepath.Join(e.store, "jobs"))
	var out []string
	for _, d := range ents {
		out = append(out, d.Name())
	}
	return out
}

func TestRunFunction(t *testing.T) {
	e := newEnv(t)
	r := e.run("run", "examples/hello.py::main", "2")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "{'sum': 3, 'steps': 2}" {
		t.Fatalf("run: code %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "step 2/2") {
		t.Errorf("logs were not streamed to stderr: %q", r.stderr)
	}
}

// TestRunMethod: FILE.py::Class.method runs a static or class method.
func TestRunMethod(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "m.py"), []byte("class Trainer:\n    @staticmethod\n    def fit(a, b):\n        return a * b\n"), 0o644)
	r := e.runIn(dir, "run", "m.py::Trainer.fit", "6", "7")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "42" {
		t.Fatalf("run m.py::Trainer.fit: code %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r = e.runIn(dir, "run", "m.py::Trainer.nope")
	if r.code == 0 || !strings.Contains(r.stderr, "has no function 'Trainer.nope'") {
		t.Fatalf("a missing method: code %d, stderr %q", r.code, r.stderr)
	}
}

func TestRunCommandExitCode(t *testing.T) {
	e := newEnv(t)
	r := e.run("run", "--", "sh", "-c", "echo out; exit 4")
	if r.code != 4 || !strings.Contains(r.stderr, "exit code 4") {
		t.Fatalf("code %d, stderr %q", r.code, r.stderr)
	}
}

func TestRemoteExceptionCLI(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "bad.py"), []byte("def f():\n    raise KeyError('missing')\n"), 0o644)
	r := e.runIn(dir, "run", "bad.py::f")
	if r.code != 1 || !strings.Contains(r.stderr, "KeyError") || !strings.Contains(r.stderr, "raise KeyError('missing')") {
		t.Fatalf("code %d, stderr %q", r.code, r.stderr)
	}
}

func TestAsyncLifecycle(t *testing.T) {
	e := newEnv(t)
	r := e.run("run", "--async", "--json", "--", "sh", "-c", "echo begin; sleep 300")
	if r.code != 0 {
		t.Fatalf("submit: %d %s", r.code, r.stderr)
	}
	var h map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &h); err != nil {
		t.Fatalf("handle JSON: %v: %q", err, r.stdout)
	}
	id := h["job_id"].(string)
	for k, v := range h {
		if _, ok := v.(string); !ok {
			t.Errorf("handle field %s is %T, want a string", k, v)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		r = e.run("jobs", "status", id)
		if strings.TrimSpace(r.stdout) == "RUNNING" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("never RUNNING: %q %q", r.stdout, r.stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	r = e.run("jobs", "list", "--json")
	var rows []map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil || len(rows) != 1 || rows[0]["status"] != "RUNNING" {
		t.Fatalf("list: %v %q", err, r.stdout)
	}
	// RUNNING is recorded before the command starts: under load "begin" can come later.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if r = e.run("jobs", "logs", id); strings.Contains(r.stdout, "begin") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the job never printed begin: %q %q", r.stdout, r.stderr)
		}
	}
	if r = e.run("jobs", "cancel", id); r.code != 0 {
		t.Fatalf("cancel: %d %s", r.code, r.stderr)
	}
	r = e.run("jobs", "status", "--json", id)
	var st map[string]any
	json.Unmarshal([]byte(r.stdout), &st)
	if st["status"] != "FAILED" || st["reason"] != "cancelled" {
		t.Fatalf("status after cancel: %q", r.stdout)
	}
	if r = e.run("jobs", "logs", "-n", "2", id); !strings.HasPrefix(r.stdout, "begin\n") || !strings.Contains(r.stdout, "cancelled") {
		t.Fatalf("logs -n 2: %q", r.stdout)
	}
	if r = e.run("jobs", "cleanup", id); r.code != 0 {
		t.Fatalf("cleanup: %d %s", r.code, r.stderr)
	}
	if r = e.run("jobs", "status", id); r.code == 0 || !strings.Contains(r.stderr, "no job") {
		t.Fatalf("status after cleanup: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if got := e.jobsInStore(); len(got) != 0 {
		out, _ := exec.Command("find", filepath.Join(e.store, "jobs")).CombinedOutput()
		t.Fatalf("cleanup left %v in the store: %s", got, out)
	}
}

// TestBadInput: each bad input names itself and the fix, exits non-zero, and leaves
// nothing in the store.
func TestBadInput(t *testing.T) {
	e := newEnv(t)
	gone := filepath.Join(t.TempDir(), "gone")
	os.Mkdir(gone, 0o755)
	for name, tc := range map[string]struct {
		dir  string
		args []string
		want []string
	}{
		"unknown accelerator": {"", []string{"run", "-a", "tpu-v6e-7", "examples/hello.py::add", "1", "2"}, []string{`"tpu-v6e-7"`, "did you mean tpu-v6e-8"}},
		"not FILE::FUNC":      {"", []string{"run", "examples/hello.py"}, []string{"FILE.py::FUNC"}},
		"missing file":        {"", []string{"run", "nope.py::f"}, []string{"nope.py"}},
		"bad store URL":       {"", []string{"run", "--store", "ftp://x/y", "examples/hello.py::add"}, []string{"ftp://x/y"}},
		"unknown job":         {"", []string{"jobs", "status", "job-0000000000000000000000a"}, []string{"no job job-0000000000000000000000a", "kinetic jobs list"}},
		"not a job ID":        {"", []string{"jobs", "result", "../../etc"}, []string{`"../../etc" is not a job ID`}},
		"deleted workdir":     {gone, []string{"run", "--", "true"}, []string{"working directory"}},
		// The fault corpus's bad inputs (docs/status.md).
		"missing python":  {"", []string{"run", "--python", "/nonexistent/python3", "examples/hello.py::add", "1", "2"}, []string{`"/nonexistent/python3" is not an executable file`}},
		"negative tail":   {"", []string{"jobs", "logs", "-n", "-5", "job-0000000000000000000000a"}, []string{"-n -5", "at least 1"}},
		"huge bad python": {"", []string{"run", "--python", "/x" + strings.Repeat("y", 100<<10), "--", "true"}, []string{"bytes)"}},
		"non-UTF-8 arg":   {"", []string{"run", "--", "echo", "caf\xe9"}, []string{"not valid UTF-8"}},
		"missing store":   {"", []string{"jobs", "list", "--store", "file:///no/such/kinetic-store"}, []string{"no such directory"}},
	} {
		t.Run(name, func(t *testing.T) {
			dir := e.dir
			if tc.dir != "" {
				dir = tc.dir
				if tc.dir == gone {
					// A working directory that vanished under the shell.
					cmd := exec.Command("sh", "-c", "cd "+gone+" && rmdir "+gone+" && exec \"$@\"", "sh", e.bin)
					cmd.Args = append(cmd.Args, tc.args...)
					cmd.Env = append(os.Environ(), "KINETIC_HOME="+filepath.Join(e.home, "data"))
					out, err := cmd.CombinedOutput()
					if err == nil || !strings.Contains(string(out), "working directory") {
						t.Fatalf("err %v, output %q", err, out)
					}
					return
				}
			}
			r := e.runIn(dir, tc.args...)
			if r.code == 0 {
				t.Fatalf("exit 0; stdout %q", r.stdout)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr %q lacks %q", r.stderr, w)
				}
			}
			if len(r.stderr) > 4<<10 {
				t.Errorf("stderr is %d bytes: an error must not echo a huge input whole", len(r.stderr))
			}
			if got := e.jobsInStore(); len(got) != 0 {
				t.Fatalf("bad input left %v in the store", got)
			}
		})
	}
}

// Kinetic's own state inside the shipped root (KINETIC_HOME, and so the file store, in
// the project directory, or a root that is the home directory) never ships: it changes
// while it is scanned ("file changed since it was scanned") and holds every job.
func TestStateInsideTheRootIsNotShipped(t *testing.T) {
	e := newEnv(t)
	home := filepath.Join(e.dir, "state")
	for i := 0; i < 2; i++ {
		cmd := exec.Command(e.bin, "run", "--json", "--", "sh", "-c", "ls -a; test ! -e state")
		cmd.Dir = e.dir
		cmd.Env = append(os.Environ(), "KINETIC_HOME="+home, "KINETIC_PROFILES_FILE="+filepath.Join(e.home, "profiles.json"), "HOME="+e.home)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("run %d with KINETIC_HOME inside the project: %v\n%s", i, err, out)
		}
	}
}

// kinetic run finds the interpreter behind a python3 shim (pyenv's is a shell script):
// the job records the real interpreter, which warm workers are made of.
func TestRunResolvesAPythonShim(t *testing.T) {
	real := "/usr/bin/python3" // Debian's; the shim below stands for pyenv's
	if _, err := os.Stat(real); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	e := newEnv(t)
	shims := filepath.Join(e.home, "shims")
	os.MkdirAll(shims, 0o755)
	os.WriteFile(filepath.Join(shims, "python3"), []byte("#!/bin/sh\nexec "+real+" \"$@\"\n"), 0o755)
	os.WriteFile(filepath.Join(e.dir, "which.py"), []byte("def main():\n    return 1\n"), 0o644)
	cmd := exec.Command(e.bin, "run", "--json", "which.py::main")
	cmd.Dir = e.dir
	cmd.Env = append(os.Environ(), "PATH="+shims+string(os.PathListSeparator)+os.Getenv("PATH"),
		"KINETIC_HOME="+filepath.Join(e.home, "data"), "KINETIC_PROFILES_FILE="+filepath.Join(e.home, "profiles.json"), "HOME="+e.home)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	id := submittedID.FindStringSubmatch(string(out))
	if id == nil {
		t.Fatalf("no job ID:\n%s", out)
	}
	// The job was collected: its spec is gone; the workspace's copy is what the runner read.
	specs, _ := filepath.Glob(filepath.Join(e.store, "jobs", id[1], "spec.json"))
	raw, err := os.ReadFile(filepath.Join(e.home, "data", "local", "jobs", id[1], "spec.json"))
	if len(specs) > 0 {
		raw, err = os.ReadFile(specs[0])
	}
	if err != nil {
		t.Skipf("the job's spec is not kept after collection: %v", err)
	}
	var spec struct{ Python string }
	json.Unmarshal(raw, &spec)
	if spec.Python != real {
		t.Errorf("the job's python is %q, want %q (the shim resolved)", spec.Python, real)
	}
}

// TestSeedsConfigurationWithoutCredentials: with only KINETIC_PROJECT and KINETIC_CLUSTER
// set (the seeds' configuration) a call does not run on the local backend, and on a
// machine without Google credentials it says so and how to make them: nothing on stdout
// (gocloud's gs:// opener printed a warning there and went on with an empty key, whose
// first request failed with ASN.1 text), no library text on stderr.
func TestSeedsConfigurationWithoutCredentials(t *testing.T) {
	e := newEnv(t)
	seeds := []string{"KINETIC_PROJECT=p", "KINETIC_CLUSTER=c", "GOOGLE_APPLICATION_CREDENTIALS=", "CLOUDSDK_CONFIG=" + filepath.Join(e.home, "gcloud")}
	// No credentials at all. Google's lookup asks the metadata server of a GCE machine
	// (metadata.google.internal, 169.254.169.254), so the binary runs in a network
	// namespace of its own with nothing but loopback: it reaches nothing off this machine.
	if err := exec.Command("unshare", "-n", "true").Run(); err != nil {
		t.Logf("no network namespace (unshare -n: %v): the case without any credentials is not run", err)
	} else {
		bin := e.bin
		e.bin = "unshare"
		r := e.runEnv(seeds, "-n", bin, "run", "examples/hello.py::add", "1", "2")
		e.bin = bin
		checkNoCredentials(t, e, r, "no Google credentials to reach Cloud Storage")
	}
	// Credentials that give no token: a metadata server (here a closed local port) that
	// does not answer.
	r := e.runEnv(append(seeds, "GCE_METADATA_HOST=127.0.0.1:9"), "run", "examples/hello.py::add", "1", "2")
	checkNoCredentials(t, e, r, "the Google credentials found (from this machine's metadata server) give no access token")
}

func checkNoCredentials(t *testing.T, e *env, r result, says string) {
	t.Helper()
	if r.code == 0 {
		t.Fatalf("ran without credentials (on the local backend?): %+v", r)
	}
	if r.stdout != "" {
		t.Errorf("stdout is for data, got %q", r.stdout)
	}
	for _, want := range []string{`"gs://p-kn-c-jobs"`, says, "gcloud auth application-default login", "GOOGLE_APPLICATION_CREDENTIALS"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	for _, bad := range []string{"asn1", "Warning:", "blob (code=", "https://", "http://", "deadline", "dial tcp"} {
		if strings.Contains(r.stderr, bad) {
			t.Errorf("stderr has library text %q:\n%s", bad, r.stderr)
		}
	}
	if len(e.jobsInStore()) != 0 {
		t.Errorf("a job was recorded in the local store: %v", e.jobsInStore())
	}
}
