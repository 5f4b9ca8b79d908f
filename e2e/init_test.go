package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kinetic-run/kinetic/testkit/tmuxtest"
)

// TestInitInTerminal runs `kinetic init` in a real terminal (tmux) with a kubeconfig of
// two contexts, a gcloud configuration and an existing profile: the screen lists what was
// found and the choices; a wrong answer is asked again; staying local writes the profile
// and makes it active.
func TestInitInTerminal(t *testing.T) {
	e := newEnv(t)
	os.MkdirAll(filepath.Join(e.home, ".kube"), 0o755)
	os.WriteFile(filepath.Join(e.home, ".kube", "config"), []byte(`apiVersion: v1
kind: Config
current-context: dev
clusters:
- name: c1
  cluster: {server: "https://10.0.0.1:6443"}
- name: c2
  cluster: {server: "https://prod.example.com"}
contexts:
- name: dev
  context: {cluster: c1, user: u}
- name: production
  context: {cluster: c2, user: u}
users:
- name: u
  user: {token: x}
`), 0o600)
	gdir := filepath.Join(e.home, ".config", "gcloud")
	os.MkdirAll(filepath.Join(gdir, "configurations"), 0o755)
	os.WriteFile(filepath.Join(gdir, "active_config"), []byte("work"), 0o644)
	os.WriteFile(filepath.Join(gdir, "configurations", "config_work"), []byte("[core]\nproject = my-proj\n[compute]\nzone = europe-west4-a\n"), 0o644)
	os.WriteFile(filepath.Join(gdir, "application_default_credentials.json"), []byte("{}"), 0o600)
	profiles := filepath.Join(e.home, "profiles.json")
	os.WriteFile(profiles, []byte(`{"current": "team", "profiles": {"team": {"backend": "k8s", "namespace": "ml"}}}`), 0o600)

	env := []string{"HOME=" + e.home, "KINETIC_HOME=" + filepath.Join(e.home, "data"), "KINETIC_PROFILES_FILE=" + profiles,
		"KUBECONFIG=", "CLOUDSDK_CONFIG=", "CLOUDSDK_CORE_PROJECT=", "GOOGLE_CLOUD_PROJECT=", "GOOGLE_APPLICATION_CREDENTIALS=", "KINETIC_PROFILE="}
	term := tmuxtest.Start(t, e.dir, env, e.bin, "init")
	screen := term.WaitFor("choice [1]:", 20*time.Second)
	for _, want := range []string{
		"Kubernetes: 2 context(s) in " + filepath.Join(e.home, ".kube", "config"),
		"* dev         https://10.0.0.1:6443",
		"  production  https://prod.example.com",
		"Google Cloud: project my-proj (from gcloud configuration work)",
		"Google credentials: gcloud application default credentials",
		"Profiles: team (active) in " + profiles,
		"1) join Kubernetes context dev (https://10.0.0.1:6443)",
		"2) join Kubernetes context production (https://prod.example.com)",
		"3) create a GKE cluster in project my-proj",
		"4) join an existing GKE cluster in project my-proj",
		"5) stay local: run jobs on this machine",
	} {
		if !strings.Contains(screen, want) {
			t.Errorf("the screen does not show %q:\n%s", want, screen)
		}
	}
	term.Type("7")
	term.WaitFor("(a number from 1 to 5)", 5*time.Second)
	term.Type("5")
	term.WaitFor("Profile to write [default]:", 5*time.Second)
	term.Type("laptop")
	term.WaitFor("write it? [y/N]", 5*time.Second)
	term.Type("y")
	screen = term.WaitFor("wrote profile laptop", 5*time.Second)
	if code := term.Exit(10 * time.Second); code != 0 {
		t.Fatalf("init exited %d:\n%s", code, screen)
	}
	var f struct {
		Current  string
		Profiles map[string]map[string]any
	}
	b, _ := os.ReadFile(profiles)
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	if f.Current != "laptop" || f.Profiles["laptop"]["backend"] != "local" || f.Profiles["team"]["namespace"] != "ml" {
		t.Errorf("profiles after init: %s", b)
	}

	// Answering no writes nothing.
	term = tmuxtest.Start(t, e.dir, env, e.bin, "init")
	term.WaitFor("choice [1]:", 20*time.Second)
	term.Type("5")
	term.WaitFor("Profile to write [default]:", 5*time.Second)
	term.Type("")
	term.WaitFor("write it? [y/N]", 5*time.Second)
	term.Type("")
	term.WaitFor("nothing written", 5*time.Second)
	if code := term.Exit(10 * time.Second); code == 0 {
		t.Error("init answered no exited 0")
	}
	if b2, _ := os.ReadFile(profiles); string(b2) != string(b) {
		t.Errorf("init answered no changed the profiles:\n%s", b2)
	}
}

// TestInitWithoutTerminal: no terminal and no -y is refused with the flags to give;
// -y with flags writes the profile.
func TestInitWithoutTerminal(t *testing.T) {
	e := newEnv(t)
	r := e.run("init")
	if r.code == 0 || !strings.Contains(r.stderr, "no terminal to ask on") || !strings.Contains(r.stderr, "kinetic init -y --backend local") {
		t.Errorf("init without a terminal: %d %s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(e.home, "profiles.json")); err == nil {
		t.Error("a refused init wrote the profiles file")
	}
	if r := e.run("init", "-y"); r.code == 0 || !strings.Contains(r.stderr, "needs --backend") {
		t.Errorf("init -y without --backend: %d %s", r.code, r.stderr)
	}
	if r := e.run("init", "-y", "--backend", "k8s", "--context", "nope"); r.code == 0 || !strings.Contains(r.stderr, "--registry") {
		t.Errorf("init -y --backend k8s without a registry: %d %s", r.code, r.stderr)
	}
	if r := e.run("--profile", "here", "init", "-y", "--backend", "local"); r.code != 0 || !strings.Contains(r.stderr, "wrote profile here") {
		t.Fatalf("init -y --backend local: %d %s", r.code, r.stderr)
	}
	if r := e.run("config", "show"); r.code != 0 || !strings.Contains(r.stdout, "local") {
		t.Errorf("config show after init: %d %s %s", r.code, r.stdout, r.stderr)
	}
}

// TestInitJoinsGKE: `init --backend gke --join` joins an existing GKE cluster by project,
// zone and cluster, as the reference's init does: the profile is named after the cluster
// (or --profile-name), made active, and nothing is created (no API is called).
func TestInitJoinsGKE(t *testing.T) {
	e := newEnv(t)
	if r := e.run("init", "-y", "--backend", "gke", "--join", "--project", "p", "--zone", "us-central1-a", "--cluster", "team-a"); r.code != 0 || !strings.Contains(r.stderr, "wrote profile team-a") {
		t.Fatalf("init --join: %d %s", r.code, r.stderr)
	}
	b, err := os.ReadFile(filepath.Join(e.home, "profiles.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"current": "team-a"`, `"cluster": "team-a"`, `"project": "p"`, `"backend": "gke"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("profiles.json lacks %s:\n%s", want, b)
		}
	}
	if r := e.run("config", "show"); !strings.Contains(r.stdout, "gs://p-kn-team-a-jobs") {
		t.Errorf("config show after the join: the store is not the cluster's bucket:\n%s", r.stdout)
	}
	if r := e.run("init", "-y", "--backend", "gke", "--join", "--project", "p", "--zone", "z", "--cluster", "c", "--profile-name", "mine"); r.code != 0 || !strings.Contains(r.stderr, "wrote profile mine") {
		t.Errorf("init --join --profile-name: %d %s", r.code, r.stderr)
	}
	if r := e.run("init", "-y", "--backend", "local", "--join"); r.code == 0 || !strings.Contains(r.stderr, "--join is for GKE") {
		t.Errorf("init --join with local: %d %s", r.code, r.stderr)
	}
}
