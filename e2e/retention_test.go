package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kinetic-run/kinetic/testkit/gcstest"
)

// TestCleanupKeepsOutputs: a job writes a checkpoint under KINETIC_OUTPUT_DIR; cleanup
// of both its backend resources and its store objects leaves the checkpoint.
func TestCleanupKeepsOutputs(t *testing.T) {
	e := newEnv(t)
	os.WriteFile(filepath.Join(e.dir, "ckpt.py"), []byte(`import os
def save():
    d = os.environ["KINETIC_OUTPUT_DIR"]
    os.makedirs(os.path.join(d, "ckpt"), exist_ok=True)
    with open(os.path.join(d, "ckpt", "step-1.txt"), "w") as f:
        f.write("weights")
    return d
`), 0o644)
	r := e.run("run", "ckpt.py::save")
	if r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	outDir := strings.Trim(strings.TrimSpace(r.stdout), "'")
	if !strings.HasPrefix(outDir, filepath.Join(e.store, "outputs")+"/") {
		t.Fatalf("output dir %q is not under the store's outputs/", outDir)
	}
	id := filepath.Base(outDir)
	if r := e.run("jobs", "cleanup", id); r.code != 0 {
		t.Fatalf("cleanup: %d %s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(e.store, "jobs", id)); !os.IsNotExist(err) {
		t.Errorf("cleanup left the job's store objects: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(outDir, "ckpt", "step-1.txt")); err != nil || string(b) != "weights" {
		t.Errorf("the checkpoint after cleanup: %q, %v", b, err)
	}
}

// TestStoreCreate: `kinetic store create` makes a gs:// store's bucket (on the GCS
// emulator), which a job store then opens; a second create leaves it alone.
func TestStoreCreate(t *testing.T) {
	e := newEnv(t)
	srv := gcstest.Start(t)
	url := "gs://kinetic-e2e-create/team?endpoint=" + srv.URL()
	r := e.run("store", "create", url, "--project", "p", "--zone", "europe-west4-b", "--json")
	if r.code != 0 {
		t.Fatalf("store create: %d %s", r.code, r.stderr)
	}
	var got struct {
		Created  bool     `json:"created"`
		Location string   `json:"location"`
		Expiring []string `json:"expiring"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || !got.Created || got.Location != "europe-west4" {
		t.Fatalf("store create --json: %v %s", err, r.stdout)
	}
	if r := e.run("jobs", "list", "--store", url); r.code != 0 {
		t.Fatalf("the new store does not open: %s", r.stderr)
	}
	r = e.run("store", "create", url, "--project", "p")
	if r.code != 0 || !strings.Contains(r.stderr, "bucket already exists") {
		t.Fatalf("second create: %d %s", r.code, r.stderr)
	}
	if os.Getenv("GOOGLE_CLOUD_PROJECT") != "" { // (KINETIC_PROJECT is cleared by runWith)
		return // a project comes from the environment
	}
	if r := e.run("store", "create", url); r.code == 0 || !strings.Contains(r.stderr, "needs the project") {
		t.Fatalf("create without a project: %d %s", r.code, r.stderr)
	}
}
