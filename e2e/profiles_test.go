package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestProfilesNameClusters: two profiles for two clusters, each with its own store.
// --profile picks one for any command; the handle records the cluster, namespace,
// project, zone and kube context of the profile it was submitted with, so observing the
// job later does not depend on which profile is active.
func TestProfilesNameClusters(t *testing.T) {
	e := newEnv(t)
	storeA, storeB := filepath.Join(e.home, "store-a"), filepath.Join(e.home, "store-b")
	os.WriteFile(filepath.Join(e.home, "profiles.json"), []byte(fmt.Sprintf(`{"current": "b", "profiles": {
  "a": {"project": "pa", "zone": "europe-west4-a", "cluster": "gpu-eu", "namespace": "team-a", "kube_context": "ctx-a", "store": %q},
  "b": {"project": "pb", "zone": "us-central1-a", "cluster": "tpu-us", "namespace": "team-b", "store": %q}}}`, storeA, storeB)), 0o600)

	r := e.run("--profile", "a", "run", "--async", "--json", "examples/hello.py::add", "1", "2")
	if r.code != 0 {
		t.Fatalf("submit with --profile a: %d %s", r.code, r.stderr)
	}
	var h map[string]string
	if err := json.Unmarshal([]byte(r.stdout), &h); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"project": "pa", "zone": "europe-west4-a", "cluster_name": "gpu-eu", "namespace": "team-a", "kube_context": "ctx-a", "spot": "false"}
	for k, v := range want {
		if h[k] != v {
			t.Errorf("handle %s = %q, want %q (profile a's)", k, h[k], v)
		}
	}
	if h["store"] != "file://"+storeA {
		t.Errorf("handle store = %q, want profile a's %s", h["store"], storeA)
	}
	id := h["job_id"]
	// Profile b is active: its store does not hold the job; --profile a (or the handle's
	// store) finds it, on every command.
	if r := e.run("jobs", "status", id); r.code == 0 || !strings.Contains(r.stderr, "no job "+id) {
		t.Errorf("status under profile b: %d %s", r.code, r.stderr)
	}
	if r := e.run("--profile", "a", "jobs", "result", id); r.code != 0 || strings.TrimSpace(r.stdout) != "3" {
		t.Errorf("result with --profile a: %d %q %s", r.code, r.stdout, r.stderr)
	}
	if r := e.run("jobs", "status", id, "--store", h["store"]); r.code != 0 || !strings.HasPrefix(r.stdout, "SUCCEEDED") {
		t.Errorf("status by the handle's store: %d %q %s", r.code, r.stdout, r.stderr)
	}
	if r := e.run("--profile", "a", "jobs", "debug", id); r.code == 0 || !strings.Contains(r.stderr, "not submitted with debug=True") {
		t.Errorf("jobs debug with --profile a: %d %s", r.code, r.stderr)
	}
	if r := e.run("--profile", "a", "store", "create"); r.code == 0 || !strings.Contains(r.stderr, "only gs:// stores") || !strings.Contains(r.stderr, storeA) {
		t.Errorf("store create with --profile a: %d %s", r.code, r.stderr)
	}
	if r := e.run("--profile", "nope", "jobs", "list"); r.code == 0 || !strings.Contains(r.stderr, "nope") {
		t.Errorf("unknown profile: %d %s", r.code, r.stderr)
	}
}
