package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kinetic-run/kinetic/testkit/tmuxtest"
)

// TestProfilesNameClusters: two profiles for two clusters, each with its own store.
// --profile picks one for any command; the handle records the cluster, namespace,
// project, zone and kube context of the profile it was submitted with, so observing the
// job later does not depend on which profile is active.
func TestProfilesNameClusters(t *testing.T) {
	e := newEnv(t)
	storeA, storeB := filepath.Join(e.home, "store-a"), filepath.Join(e.home, "store-b")
	os.WriteFile(filepath.Join(e.home, "profiles.json"), []byte(fmt.Sprintf(`{"current": "b", "profiles": {
  "a": {"backend": "local", "project": "pa", "zone": "europe-west4-a", "cluster": "gpu-eu", "namespace": "team-a", "kube_context": "ctx-a", "store": %q},
  "b": {"backend": "local", "project": "pb", "zone": "us-central1-a", "cluster": "tpu-us", "namespace": "team-b", "store": %q}}}`, storeA, storeB)), 0o600)

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
	if r := e.run("--profile", "a", "jobs", "result", "--no-cleanup", id); r.code != 0 || strings.TrimSpace(r.stdout) != "3" {
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

// KINETIC_HOME moves all of Kinetic's state, the profiles file included; and a command
// that only looks never creates a store (a profile's store for another machine, a typo).
func TestKineticHomeAndLookOnlyCommands(t *testing.T) {
	e := newEnv(t)
	home := filepath.Join(e.home, "elsewhere")
	cmd := exec.Command(e.bin, "profile", "create", "moved", "--backend", "local")
	cmd.Env = append(os.Environ(), "KINETIC_HOME="+home, "HOME="+e.home, "KINETIC_PROFILES_FILE=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("profile create: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(home, "profiles.json")); err != nil {
		t.Errorf("KINETIC_HOME did not move the profiles file: %v", err)
	}
	if _, err := os.Stat(filepath.Join(e.home, ".kinetic", "profiles.json")); err == nil {
		t.Error("the profile went to ~/.kinetic despite KINETIC_HOME")
	}

	missing := filepath.Join(e.home, "srv", "kinetic")
	for _, args := range [][]string{{"jobs", "list"}, {"batch", "list"}, {"jobs", "status", "job-01k865go4h84k7p9pg3a2qr"},
		{"jobs", "logs", "job-01k865go4h84k7p9pg3a2qr"}, {"batch", "status", "grp-01k865go4h84k7p9pg3a2qr"}} {
		cmd := exec.Command(e.bin, args...)
		cmd.Env = append(os.Environ(), "KINETIC_HOME="+home, "HOME="+e.home, "KINETIC_PROFILES_FILE=", "KINETIC_STORE=file://"+missing)
		out, err := cmd.CombinedOutput()
		if _, serr := os.Stat(missing); serr == nil {
			t.Fatalf("kinetic %s created the store %s", strings.Join(args, " "), missing)
		}
		list := args[1] == "list"
		if list && err != nil || !list && (err == nil || !strings.Contains(string(out), "does not exist")) {
			t.Errorf("kinetic %s on a store that does not exist: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// profile create with no name and no settings on a terminal asks for them, defaults
// shown; what is left at its default is not written (the default keeps applying).
func TestProfileCreatePrompts(t *testing.T) {
	e := newEnv(t)
	pf := filepath.Join(e.home, "profiles.json")
	envs := []string{"KINETIC_HOME=" + filepath.Join(e.home, "data"), "KINETIC_PROFILES_FILE=" + pf, "HOME=" + e.home, "PATH=" + os.Getenv("PATH")}
	// No NAME either: asked first, as the reference's `profile create` does.
	tm := tmuxtest.Start(t, e.dir, envs, e.bin, "profile", "create")
	tm.WaitFor("Profile name", 30*time.Second)
	tm.Type("team")
	s := tm.WaitFor("choice [", 30*time.Second)
	m := regexp.MustCompile(`(?m)^\s*(\d+)\) k8s$`).FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("no k8s in the backend choice:\n%s", s)
	}
	tm.Type(m[1])
	tm.WaitFor("Google Cloud project", 10*time.Second)
	tm.Type("proj-1")
	tm.WaitFor("zone [us-central1-a]", 10*time.Second)
	tm.Type("")
	tm.WaitFor("cluster [kinetic-cluster]", 10*time.Second)
	tm.Type("gpu-eu")
	tm.WaitFor("namespace [default]", 10*time.Second)
	tm.Type("ml")
	tm.WaitFor("store URL", 10*time.Second)
	tm.Type("")
	if code := tm.Exit(20 * time.Second); code != 0 {
		t.Fatalf("profile create: exit %d\n%s", code, tm.Screen())
	}
	b, err := os.ReadFile(pf)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Profiles map[string]map[string]string `json:"profiles"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	got := f.Profiles["team"]
	want := map[string]string{"backend": "k8s", "project": "proj-1", "cluster": "gpu-eu", "namespace": "ml"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("profile team %s = %q, want %q (%v)", k, got[k], v, got)
		}
	}
	if got["zone"] != "" {
		t.Errorf("the default zone was written: %v", got)
	}
}
