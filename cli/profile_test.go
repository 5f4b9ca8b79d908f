package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kinetic-run/kinetic/config"
)

// cfgEnv isolates a test from the user's configuration: a temporary home and profiles
// file, and none of the variables that feed resolution. It returns the profiles file.
func cfgEnv(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("KINETIC_HOME", filepath.Join(home, "data"))
	for _, k := range config.Keys() {
		t.Setenv(k.EnvVar(), "")
	}
	for _, v := range []string{"KINETIC_PROFILE", "GOOGLE_CLOUD_PROJECT", "KUBECONFIG"} {
		t.Setenv(v, "")
	}
	path := filepath.Join(home, "kinetic", "profiles.json")
	t.Setenv("KINETIC_PROFILES_FILE", path)
	return path
}

// kinetic runs the command tree with args and returns stdout and stderr.
func kinetic(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	root := NewRoot()
	var out, errb bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetArgs(args)
	err = root.Execute()
	return out.String(), errb.String(), err
}

// must runs a command that has to succeed and returns its stdout.
func must(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, err := kinetic(t, args...)
	if err != nil {
		t.Fatalf("kinetic %s: %v\nstderr: %s", strings.Join(args, " "), err, errOut)
	}
	return out
}

func TestProfileLifecycle(t *testing.T) {
	path := cfgEnv(t)

	_, stderr, err := kinetic(t, "profile", "create", "dev", "--project", "p1", "--zone", "europe-west4-a",
		"--cluster", "c1", "--store", "/srv/store", "--output-dir", "/out")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr, "created profile dev (now active)") {
		t.Errorf("first create: stderr %q", stderr)
	}
	must(t, "profile", "create", "prod", "--project", "p2", "--backend", "gke", "--namespace", "jobs")

	wantLs := "" +
		"   NAME  PROJECT  ZONE            CLUSTER  NAMESPACE  BACKEND\n" +
		"*  dev   p1       europe-west4-a  c1       -          -\n" +
		"   prod  p2       -               -        jobs       gke\n"
	if diff := cmp.Diff(wantLs, must(t, "profile", "ls")); diff != "" {
		t.Errorf("profile ls (-want +got):\n%s", diff)
	}

	wantShow := "" +
		"KEY         VALUE\n" +
		"project     p1\n" +
		"zone        europe-west4-a\n" +
		"cluster     c1\n" +
		"store       file:///srv/store\n" +
		"output_dir  /out\n"
	if diff := cmp.Diff(wantShow, must(t, "profile", "show")); diff != "" {
		t.Errorf("profile show (-want +got):\n%s", diff)
	}

	must(t, "profile", "use", "prod")
	var ls []struct {
		Name     string            `json:"name"`
		Active   bool              `json:"active"`
		Settings map[string]string `json:"settings"`
	}
	if err := json.Unmarshal([]byte(must(t, "profile", "ls", "--json")), &ls); err != nil {
		t.Fatal(err)
	}
	if len(ls) != 2 || ls[0].Active || !ls[1].Active || ls[1].Settings["backend"] != "gke" {
		t.Errorf("profile ls --json after use prod: %+v", ls)
	}

	// The global --profile overrides the file's current for show.
	var shown struct {
		Name     string            `json:"name"`
		Active   bool              `json:"active"`
		Settings map[string]string `json:"settings"`
	}
	if err := json.Unmarshal([]byte(must(t, "--profile", "dev", "profile", "show", "--json")), &shown); err != nil {
		t.Fatal(err)
	}
	if shown.Name != "dev" || !shown.Active || shown.Settings["zone"] != "europe-west4-a" {
		t.Errorf("show --profile dev: %+v", shown)
	}

	_, stderr, err = kinetic(t, "profile", "rm", "prod", "--yes")
	if err != nil || !strings.Contains(stderr, "no profile is active now") {
		t.Errorf("rm active profile: %v, %q", err, stderr)
	}
	must(t, "profile", "use", "dev")
	must(t, "profile", "unset")
	f, err := config.LoadProfiles(path)
	if err != nil {
		t.Fatal(err)
	}
	if f.Current != "" || len(f.Profiles) != 1 {
		t.Errorf("after rm and unset: current %q, profiles %v", f.Current, f.Names())
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("profiles file mode: %v %v", st, err)
	}
}

func TestProfileErrors(t *testing.T) {
	cfgEnv(t)
	must(t, "profile", "create", "dev", "--zone", "z")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"profile", "use", "dve"}, `profile "dve" does not exist; existing profiles: dev`},
		{[]string{"profile", "show", "nope"}, `profile "nope" does not exist`},
		{[]string{"profile", "rm", "nope", "--yes"}, `profile "nope" does not exist`},
		{[]string{"profile", "create", "dev"}, `profile "dev" already exists (use --force`},
		{[]string{"profile", "create", "x", "--backend", "nosuch"}, `--backend "nosuch": must be one of gke, k8s, local, pathways`},
		{[]string{"profile", "create", "y", "--namespace", "Bad_NS"}, `--namespace "Bad_NS": a namespace must be`},
		{[]string{"profile", "create", "bad/name"}, `invalid profile name "bad/name"`},
		{[]string{"--profile", "ghost", "config", "show"}, `profile "ghost" does not exist (named by --profile); existing profiles: dev`},
	}
	for _, tc := range tests {
		_, _, err := kinetic(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("kinetic %s: error %v, want it to contain %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
	// --force replaces.
	must(t, "profile", "create", "dev", "--zone", "z2", "--force")
	if out := must(t, "profile", "show", "dev"); !strings.Contains(out, "z2") {
		t.Errorf("after --force: %q", out)
	}
}

func TestProfileCorruptFile(t *testing.T) {
	path := cfgEnv(t)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(`{"profiles": `), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"profile", "ls"}, {"config", "show"}, {"profile", "create", "x"}} {
		_, _, err := kinetic(t, args...)
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "fix it by hand") {
			t.Errorf("kinetic %s on a corrupt file: %v", strings.Join(args, " "), err)
		}
	}
}

func TestProfileEmpty(t *testing.T) {
	path := cfgEnv(t)
	out, stderr, err := kinetic(t, "profile", "ls")
	if err != nil || out != "" || !strings.Contains(stderr, "no profiles") {
		t.Errorf("ls with no file: %q, %q, %v", out, stderr, err)
	}
	if out := must(t, "profile", "ls", "--json"); out != "[]\n" {
		t.Errorf("ls --json with no file: %q", out)
	}
	if _, _, err := kinetic(t, "profile", "show"); err == nil || !strings.Contains(err.Error(), "no active profile") {
		t.Errorf("show with no profile: %v", err)
	}
	must(t, "profile", "unset")
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("unset with nothing to do wrote the file: %v", err)
	}
}

// TestProfileSetAndUnsetKey: `profile set KEY=VALUE...` changes the active profile (or
// --profile's), validates like create, and `profile unset-key` removes keys again.
func TestProfileSetAndUnsetKey(t *testing.T) {
	path := cfgEnv(t)
	if _, _, err := kinetic(t, "profile", "set", "zone=europe-west4-a"); err == nil || !strings.Contains(err.Error(), "kinetic profile create") {
		t.Fatalf("set without a profile = %v, want the fix", err)
	}
	must(t, "profile", "create", "dev", "--zone", "us-central1-a")
	must(t, "profile", "create", "other")
	must(t, "profile", "set", "zone=europe-west4-a", "image-registry=r.example/p", "warm=0")
	must(t, "profile", "set", "--profile", "other", "cluster=tpus")
	for _, bad := range [][]string{{"nosuchkey=1"}, {"zone"}, {"namespace=Not_Valid"}} {
		if _, _, err := kinetic(t, append([]string{"profile", "set"}, bad...)...); err == nil {
			t.Errorf("profile set %v was accepted", bad)
		}
	}
	f, err := config.LoadProfiles(path)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]config.Profile{
		"dev":   {"zone": "europe-west4-a", "image_registry": "r.example/p", "warm": "false"},
		"other": {"cluster": "tpus"},
	}
	if d := cmp.Diff(want, f.Profiles); d != "" {
		t.Errorf("profiles (-want +got):\n%s", d)
	}
	must(t, "profile", "unset-key", "image_registry", "warm")
	if f, _ = config.LoadProfiles(path); !cmp.Equal(f.Profiles["dev"], config.Profile{"zone": "europe-west4-a"}) {
		t.Errorf("after unset-key: %v", f.Profiles["dev"])
	}
}

// profile rm asks first: with no terminal to ask on and no --yes, nothing is deleted.
func TestProfileRmNeedsYesWithoutTerminal(t *testing.T) {
	t.Setenv("KINETIC_PROFILES_FILE", filepath.Join(t.TempDir(), "profiles.json"))
	if _, _, err := kinetic(t, "profile", "create", "keep", "--backend", "local"); err != nil {
		t.Fatal(err)
	}
	_, stderr, err := kinetic(t, "profile", "rm", "keep")
	if err == nil || !strings.Contains(err.Error()+stderr, "give --yes") {
		t.Fatalf("profile rm without --yes and no terminal: %v %s", err, stderr)
	}
	out, _, _ := kinetic(t, "profile", "ls")
	if !strings.Contains(out, "keep") {
		t.Errorf("the profile was deleted without --yes:\n%s", out)
	}
}

// TestProfileCreateAsksName: NAME may be left out, as in the reference; without a
// terminal to ask on, the error says what to give (e2e/profiles_test.go asks in tmux).
func TestProfileCreateAsksName(t *testing.T) {
	path := cfgEnv(t)
	root := NewRoot()
	var out, errb bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetIn(strings.NewReader("mine\n")) // not a terminal: not read
	root.SetArgs([]string{"profile", "create", "--backend", "local"})
	err := root.Execute()
	if err == nil || !strings.Contains(err.Error(), "kinetic profile create NAME") {
		t.Fatalf("profile create without NAME or terminal: %v", err)
	}
	if _, serr := os.Stat(path); serr == nil {
		t.Error("a profiles file was written for a refused create")
	}
}
