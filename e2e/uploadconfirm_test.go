package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kinetic-run/kinetic/testkit/tmuxtest"
)

// storeHolds lists the objects under the store's prefix (relative keys).
func (e *env) storeHolds(prefix string) []string {
	var out []string
	filepath.WalkDir(filepath.Join(e.store, prefix), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(e.store, p)
			out = append(out, rel)
		}
		return nil
	})
	return out
}

// TestLargeUploadNeedsYes: a working directory above upload_confirm_mb is not uploaded
// by `kinetic run` without a terminal unless --yes is given: exit 2, the flag named,
// nothing in the store (issue 46).
func TestLargeUploadNeedsYes(t *testing.T) {
	e := newEnv(t)
	if err := os.WriteFile(filepath.Join(e.dir, "big.bin"), make([]byte, 3<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	small := []string{"KINETIC_UPLOAD_CONFIRM_MB=2"}
	r := e.runEnv(small, "run", "examples/hello.py::main", "1")
	if r.code != 2 || !strings.Contains(r.stderr, "--yes") || !strings.Contains(r.stderr, "upload_confirm_mb") || !strings.Contains(r.stderr, "3.0 MiB") {
		t.Fatalf("run over the limit without --yes: code %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if jobs, blobs := e.jobsInStore(), e.storeHolds("blobs"); len(jobs) > 0 || len(blobs) > 0 {
		t.Fatalf("a refused upload left jobs %v and blobs %v in the store", jobs, blobs)
	}
	r = e.runEnv(small, "run", "--yes", "examples/hello.py::main", "1")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "{'sum': 3, 'steps': 1}" {
		t.Fatalf("run --yes: code %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	// Under the limit (the default, 1 GiB), nothing is asked.
	r = e.run("run", "examples/hello.py::main", "1")
	if r.code != 0 {
		t.Fatalf("run under the limit: code %d, stderr %q", r.code, r.stderr)
	}
}

// TestLargeUploadAsksOnATerminal: on a terminal, `kinetic run` asks (y/N) before a large
// upload; no (the default) leaves nothing in the store, yes runs the job.
func TestLargeUploadAsksOnATerminal(t *testing.T) {
	e := newEnv(t)
	if err := os.WriteFile(filepath.Join(e.dir, "big.bin"), make([]byte, 3<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"HOME=" + e.home, "KINETIC_HOME=" + filepath.Join(e.home, "data"), "KINETIC_PROFILES_FILE=" + filepath.Join(e.home, "profiles.json"),
		"KINETIC_PROJECT=", "GOOGLE_CLOUD_PROJECT=", "KINETIC_BACKEND=", "KINETIC_UPLOAD_CONFIRM_MB=2", "PS1=$ "}
	tm := tmuxtest.Start(t, e.dir, env, "sh")
	tm.Type(e.bin + ` run examples/hello.py::main 1; echo "exit=$?"`)
	s := tm.WaitFor("Upload it? [y/N]", 60*time.Second)
	if !strings.Contains(s, "3.0 MiB") {
		t.Errorf("the question does not say how much:\n%s", s)
	}
	tm.Type("")
	s = tm.WaitFor("exit=2", 30*time.Second)
	if !strings.Contains(s, "nothing was uploaded") {
		t.Errorf("no after the question:\n%s", s)
	}
	if jobs, blobs := e.jobsInStore(), e.storeHolds("blobs"); len(jobs) > 0 || len(blobs) > 0 {
		t.Fatalf("a no left jobs %v and blobs %v in the store", jobs, blobs)
	}
	tm.Type("clear; " + e.bin + ` run examples/hello.py::main 1; echo "exit=$?"`)
	tm.WaitFor("Upload it? [y/N]", 60*time.Second)
	tm.Type("y")
	tm.WaitFor("{'sum': 3, 'steps': 1}", 60*time.Second)
	tm.WaitFor("exit=0", 30*time.Second)
}
