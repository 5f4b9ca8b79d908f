package gke_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/testkit/gketest"
	"github.com/kinetic-run/kinetic/testkit/imagetest"
	"github.com/kinetic-run/kinetic/testkit/testbin"
)

// TestCLI runs the real binary against the fakes, with every setting through config
// (KINETIC_* variables): up --preview, up without -y off a terminal, up -y twice, pool
// add/list, status, down.
func TestCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the kinetic binary")
	}
	f := gketest.Start(t, gketest.Options{})
	home, cmdFor := cliEnv(t, f)
	run := func(args ...string) (string, string, error) {
		cmd := cmdFor(args...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		return out.String(), errb.String(), err
	}
	must := func(args ...string) (string, string) {
		t.Helper()
		out, errOut, err := run(args...)
		if err != nil {
			t.Fatalf("kinetic %s: %v\n%s", strings.Join(args, " "), err, errOut)
		}
		return out, errOut
	}

	_, stderr := must("up", "--backend", "gke", "--preview")
	for _, want := range []string{"+ create   cluster kinetic-cluster", "+ create   profile kinetic-cluster", "--preview: nothing applied"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("up --preview does not say %q:\n%s", want, stderr)
		}
	}
	if m := f.Mutations(); len(m) != 0 {
		t.Errorf("--preview changed things: %v", m)
	}

	_, stderr, err := run("up", "--backend", "gke")
	if err == nil || !strings.Contains(stderr, "not a terminal") || !strings.Contains(stderr, "-y") || len(f.Mutations()) != 0 {
		t.Errorf("up without -y off a terminal: err %v, mutations %d\n%s", err, len(f.Mutations()), stderr)
	}

	_, stderr = must("up", "--backend", "gke", "-y")
	if !strings.Contains(stderr, "✓ create cluster kinetic-cluster") || !strings.Contains(stderr, "ready in") {
		t.Errorf("up -y:\n%s", stderr)
	}
	prof, err := config.LoadProfiles(filepath.Join(home, "profiles.json"))
	if err != nil {
		t.Fatal(err)
	}
	if p := prof.Profiles["kinetic-cluster"]; p["backend"] != "gke" || p["cluster"] != "kinetic-cluster" || p["service_account"] != "kinetic" || prof.Current != "kinetic-cluster" {
		t.Errorf("profile = %v (current %q)", p, prof.Current)
	}

	f.Reset()
	_, stderr = must("up", "--backend", "gke", "-y")
	if !strings.Contains(stderr, "no change") || len(f.Mutations()) != 0 {
		t.Errorf("second up: %d mutations\n%s", len(f.Mutations()), stderr)
	}

	_, stderr = must("pool", "add", "--accelerator", "tpu-v5p-16", "-y")
	if !strings.Contains(stderr, "TPU topology 2x2x4") {
		t.Errorf("pool add:\n%s", stderr)
	}
	out, _ := must("pool", "list", "--json")
	var pools []struct {
		Name     string
		Topology string `json:"tpu_topology"`
	}
	if err := json.Unmarshal([]byte(out), &pools); err != nil || len(pools) != 2 || pools[1].Name != "tpu-v5p-16" {
		t.Errorf("pool list --json = %s (%v)", out, err)
	}
	out, _ = must("status", "--no-doctor")
	if !strings.Contains(out, "✓ cluster kinetic-cluster") || !strings.Contains(out, "tpu-v5p-16") {
		t.Errorf("status:\n%s", out)
	}
	_, stderr, err = run("pool", "add", "--accelerator", "gpu-nope", "-y")
	if err == nil || !strings.Contains(stderr, "--accelerator") || strings.Contains(stderr, "rpc error") {
		t.Errorf("bad accelerator: %v\n%s", err, stderr)
	}

	// KINETIC_RESERVATION is --reservation's default, as in the reference.
	runEnv := func(env []string, args ...string) (string, error) {
		cmd := cmdFor(args...)
		cmd.Env = append(cmd.Env, env...)
		var errb bytes.Buffer
		cmd.Stderr = &errb
		err := cmd.Run()
		return errb.String(), err
	}
	stderr, err = runEnv([]string{"KINETIC_RESERVATION=my-res"}, "pool", "add", "--accelerator", "gpu-l4", "--preview")
	if err != nil || !strings.Contains(stderr, "reservation my-res") {
		t.Errorf("pool add with KINETIC_RESERVATION (%v):\n%s", err, stderr)
	}

	// down removes in the reverse of up's order, keeps the bucket by default.
	_, stderr = must("down", "-y")
	if !strings.Contains(stderr, "= keep     store bucket gs://p-kinetic") {
		t.Errorf("down:\n%s", stderr)
	}
	t.Logf("down:\n%s", stderr)
	order := []string{"- delete   cluster kinetic-cluster", "- delete   service account", "= keep     store bucket", "- delete   Artifact Registry repository"}
	last := -1
	for _, w := range order {
		i := strings.Index(stderr, w)
		if i < last {
			t.Errorf("down's plan is not in the reverse of up's order (%q):\n%s", w, stderr)
		}
		last = i
	}
	if c := f.Counts(); c["clusters"]+c["repositories"]+c["service_accounts"] != 0 {
		t.Errorf("after down: %v", c)
	}
	f.Reset()
	_, stderr = must("down", "-y")
	if !strings.Contains(stderr, "no change: nothing to remove (the store bucket is kept") || len(f.Mutations()) != 0 {
		t.Errorf("second down: %d mutations\n%s", len(f.Mutations()), stderr)
	}
	// KINETIC_FORCE_DESTROY=true is --force-destroy.
	stderr, err = runEnv([]string{"KINETIC_FORCE_DESTROY=true"}, "down", "-y")
	if err != nil || !strings.Contains(stderr, "- delete   store bucket gs://p-kinetic") {
		t.Errorf("down with KINETIC_FORCE_DESTROY=true (%v):\n%s", err, stderr)
	}
	stderr, err = runEnv([]string{"KINETIC_FORCE_DESTROY=true"}, "down", "-y")
	if err != nil || !strings.Contains(stderr, "no change: nothing to remove") || strings.Contains(stderr, "kept") {
		t.Errorf("down after everything is gone (%v):\n%s", err, stderr)
	}
}

// TestCLIUpWithoutBackend: `kinetic up` as the seeds write it. With a project
// (KINETIC_PROJECT, --project) and no --backend it plans and makes GKE, with the first
// accelerator pool and the profile named by --profile-name; GOOGLE_CLOUD_PROJECT alone is
// a project too (issue 44, as the reference reads it); with no project at all it refuses,
// naming --project and --backend k8s, and calls nothing.
func TestCLIUpWithoutBackend(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the kinetic binary")
	}
	f := gketest.Start(t, gketest.Options{})
	home, cmdFor := cliEnv(t, f)
	run := func(env []string, args ...string) (string, error) {
		cmd := cmdFor(args...)
		cmd.Env = append(cmd.Env, env...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	out, err := run([]string{"KINETIC_PROJECT=", "GOOGLE_CLOUD_PROJECT="}, "up", "--preview")
	if err == nil || !strings.Contains(out, "pass --project P") || !strings.Contains(out, "--backend k8s") ||
		!strings.Contains(out, "GOOGLE_CLOUD_PROJECT") || len(f.Requests()) != 0 {
		t.Errorf("up with no project: %v, %d requests\n%s", err, len(f.Requests()), out)
	}
	out, err = run([]string{"KINETIC_PROJECT=", "GOOGLE_CLOUD_PROJECT=gp"}, "up", "--preview")
	if err != nil || !strings.Contains(out, "gp") || strings.Contains(out, "pass --project P") {
		t.Errorf("up with GOOGLE_CLOUD_PROJECT only plans GKE in it: %v\n%s", err, out)
	}
	out, err = run(nil, "up", "--backend", "k8s", "--accelerator", "gpu-l4")
	if err == nil || !strings.Contains(out, "--accelerator is for GKE") {
		t.Errorf("up --backend k8s --accelerator: %v\n%s", err, out)
	}
	out, err = run(nil, "up", "--min-nodes", "2", "--preview")
	if err == nil || !strings.Contains(out, "give --accelerator too") {
		t.Errorf("up --min-nodes alone: %v\n%s", err, out)
	}

	// KINETIC_PROJECT alone: GKE's plan.
	out, err = run(nil, "up", "--preview")
	for _, want := range []string{"GKE: project p, zone us-central1-a, cluster kinetic-cluster", "+ create   cluster kinetic-cluster", "+ create   profile kinetic-cluster", "--preview: nothing applied"} {
		if err != nil || !strings.Contains(out, want) {
			t.Errorf("up --preview (KINETIC_PROJECT): %v, does not say %q:\n%s", err, want, out)
		}
	}
	if m := f.Mutations(); len(m) != 0 {
		t.Errorf("--preview changed things: %v", m)
	}

	// As the seeds write it: --project, --cluster, the first pool, the profile's name.
	out, err = run([]string{"KINETIC_PROJECT="}, "up", "--project", "p", "--cluster", "kc", "--accelerator", "gpu-l4", "--min-nodes", "1", "--profile-name", "mine", "-y")
	if err != nil || !strings.Contains(out, "✓ create node pool gpu-l4") || !strings.Contains(out, "ready in") {
		t.Fatalf("up --project p --cluster kc --accelerator gpu-l4: %v\n%s", err, out)
	}
	cl := f.Cluster("projects/p/locations/us-central1-a/clusters/kc")
	if n := len(cl.GetNodePools()); n != 2 || cl.GetNodePools()[1].GetName() != "gpu-l4" || cl.GetNodePools()[1].GetAutoscaling().GetMinNodeCount() != 1 {
		t.Errorf("cluster kc pools: %v", cl.GetNodePools())
	}
	prof, err := config.LoadProfiles(filepath.Join(home, "profiles.json"))
	if err != nil {
		t.Fatal(err)
	}
	if p := prof.Profiles["mine"]; p["backend"] != "gke" || p["project"] != "p" || p["cluster"] != "kc" || prof.Current != "mine" {
		t.Errorf("profile mine = %v (current %q)", p, prof.Current)
	}
	// Again, from the profile alone: nothing to do.
	f.Reset()
	out, err = run([]string{"KINETIC_PROJECT="}, "up", "--accelerator", "gpu-l4", "--min-nodes", "1", "--profile-name", "mine", "-y")
	if err != nil || !strings.Contains(out, "no change") || len(f.Mutations()) != 0 {
		t.Errorf("second up from the profile: %v, %d mutations\n%s", err, len(f.Mutations()), out)
	}
}

// cliEnv links the test binary into a directory with stand-ins for the runner binaries
// and returns a home directory and a maker of commands with every setting in KINETIC_*.
func cliEnv(t *testing.T, f *gketest.Fake) (string, func(args ...string) *exec.Cmd) {
	reg := imagetest.StartRegistry(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "kinetic")
	if err := linkOrCopy(testbin.Path(t), bin); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"amd64", "arm64"} {
		os.WriteFile(filepath.Join(dir, "kinetic-runner-linux-"+p), []byte("runner "+p), 0o755)
	}
	home := t.TempDir()
	env := []string{"HOME=" + home, "KINETIC_HOME=" + filepath.Join(home, "data"), "PATH=" + os.Getenv("PATH"),
		"KINETIC_PROFILES_FILE=" + filepath.Join(home, "profiles.json"),
		"KINETIC_GCP_ENDPOINTS=" + f.Endpoints.String(),
		"KINETIC_PROJECT=p", "KINETIC_ZONE=us-central1-a", "KINETIC_STORE=" + f.StoreURL("p-kinetic"),
		"KINETIC_IMAGE_REGISTRY=" + reg.Host + "/p/kinetic"}
	return home, func(args ...string) *exec.Cmd {
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		return cmd
	}
}

// linkOrCopy hard-links src to dst, or copies it when they are on different file
// systems (the test binary under bin/test, the temporary directory on a tmpfs).
func linkOrCopy(src, dst string) error {
	if os.Link(src, dst) == nil {
		return nil
	}
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o755)
}

// TestCLIInterrupt sends SIGINT (Ctrl-C) to `up -y` while the cluster operation runs:
// it says what is still running and that the next up resumes, and the next plan waits
// for the cluster instead of creating it again.
func TestCLIInterrupt(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the kinetic binary")
	}
	f := gketest.Start(t, gketest.Options{ClusterOpPolls: 1 << 20})
	_, cmdFor := cliEnv(t, f)
	cmd := cmdFor("up", "--backend", "gke", "-y")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for !polled(f, "ClusterManager/GetOperation") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Signal(os.Interrupt)
	err := cmd.Wait()
	stderr := errb.String()
	if err == nil || !strings.Contains(stderr, "interrupted while waiting for cluster kinetic-cluster (operation operation-") ||
		!strings.Contains(stderr, "run the same command again to resume") || strings.Contains(stderr, "context canceled") {
		t.Fatalf("up after Ctrl-C: %v\n%s", err, stderr)
	}
	out, err := cmdFor("up", "--backend", "gke", "--preview").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "~ wait     cluster kinetic-cluster") || strings.Contains(string(out), "+ create   cluster") {
		t.Errorf("the plan after Ctrl-C: %v\n%s", err, out)
	}
}

func polled(f *gketest.Fake, method string) bool {
	for _, r := range f.Requests() {
		if strings.HasSuffix(r.Method, method) {
			return true
		}
	}
	return false
}

// TestCLIAsksOnATerminal runs `up --backend gke` in tmux, as a person would: it prints
// the plan and asks; "y" applies it.
func TestCLIAsksOnATerminal(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the kinetic binary")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("no tmux")
	}
	f := gketest.Start(t, gketest.Options{})
	_, cmdFor := cliEnv(t, f)
	c := cmdFor("up", "--backend", "gke")
	script := filepath.Join(t.TempDir(), "up.sh")
	var b strings.Builder
	b.WriteString("#!/bin/sh\n")
	for _, kv := range c.Env {
		k, v, _ := strings.Cut(kv, "=")
		fmt.Fprintf(&b, "export %s='%s'\n", k, strings.ReplaceAll(v, "'", `'\''`))
	}
	fmt.Fprintf(&b, "'%s' up --backend gke; echo EXIT=$?; sleep 120\n", c.Path)
	os.WriteFile(script, []byte(b.String()), 0o755)
	sock := fmt.Sprintf("kinetic-gke-%d", os.Getpid())
	tmux := func(args ...string) string {
		out, _ := exec.Command("tmux", append([]string{"-L", sock}, args...)...).CombinedOutput()
		return string(out)
	}
	if out, err := exec.Command("tmux", "-L", sock, "new-session", "-d", "-x", "220", "-y", "60", script).CombinedOutput(); err != nil {
		t.Fatalf("tmux: %v %s", err, out)
	}
	t.Cleanup(func() { tmux("kill-server") })
	screen := func(want string) string {
		t.Helper()
		deadline := time.Now().Add(90 * time.Second)
		for {
			s := tmux("capture-pane", "-p", "-J", "-S", "-200")
			if strings.Contains(s, want) {
				return s
			}
			if time.Now().After(deadline) {
				t.Fatalf("the screen never showed %q:\n%s", want, s)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	s := screen("[y/N]")
	if !strings.Contains(s, "+ create   cluster kinetic-cluster") || len(f.Mutations()) != 0 {
		t.Errorf("before the answer:\n%s", s)
	}
	tmux("send-keys", "y", "Enter")
	s = screen("EXIT=")
	t.Log("the screen:\n" + s)
	if !strings.Contains(s, "EXIT=0") || !strings.Contains(s, "ready in") {
		t.Errorf("after y:\n%s", s)
	}
}

// TestCLIBadInput: through the binary, each mistake a user makes first gets one line
// that names the fix, and no Go, gRPC or HTTP text: no credentials at all, a key file
// that is not one, credentials without permission, a cluster that does not exist.
func TestCLIBadInput(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the kinetic binary")
	}
	f := gketest.Start(t, gketest.Options{})
	home, cmdFor := cliEnv(t, f)
	run := func(env []string, args ...string) string {
		t.Helper()
		cmd := cmdFor(args...)
		cmd.Env = append(cmd.Env, env...)
		var errb bytes.Buffer
		cmd.Stderr = &errb
		if err := cmd.Run(); err == nil {
			t.Errorf("kinetic %s succeeded:\n%s", strings.Join(args, " "), errb.String())
		}
		s := errb.String()
		for _, bad := range []string{"rpc error", "desc =", "googleapi:", "x509:", "json:", "could not find default credentials"} {
			if strings.Contains(s, bad) {
				t.Errorf("kinetic %s shows %q:\n%s", strings.Join(args, " "), bad, s)
			}
		}
		return s
	}
	wants := func(name, got string, want ...string) {
		t.Helper()
		for _, w := range want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: does not say %q:\n%s", name, w, got)
			}
		}
	}

	// No credentials: Google's APIs, not the fakes (no KINETIC_GCP_ENDPOINTS).
	noCreds := []string{"KINETIC_GCP_ENDPOINTS=", "GOOGLE_APPLICATION_CREDENTIALS="}
	got := run(noCreds, "up", "--project", "p", "--preview")
	wants("no credentials", got, "no Google credentials", "gcloud auth application-default login", "GOOGLE_APPLICATION_CREDENTIALS")
	key := filepath.Join(home, "key.json")
	os.WriteFile(key, []byte(`{"type": "service_account"}`), 0o600)
	got = run([]string{"KINETIC_GCP_ENDPOINTS=", "GOOGLE_APPLICATION_CREDENTIALS=" + key}, "up", "--project", "p", "--preview")
	wants("a key file that is not one", got, "GOOGLE_APPLICATION_CREDENTIALS="+key+" is a service_account file that Google's library could not use")

	// Credentials without permission: the fakes refuse, as Google does.
	f.FailNext("google.api.serviceusage.v1.ServiceUsage/BatchGetServices", status.Error(codes.PermissionDenied, "Permission denied to get service [container.googleapis.com]"))
	got = run(nil, "up", "--project", "p", "--preview")
	wants("no permission", got, "permission denied", "roles/serviceusage.serviceUsageAdmin", "Permission denied to get service")

	// A cluster that does not exist.
	got = run(nil, "pool", "add", "--accelerator", "gpu-l4", "--cluster", "nope", "-y")
	wants("no cluster", got, "cluster nope does not exist in p/us-central1-a", "kinetic up")
}

// TestCLIUpForceDestroyPersisted: `up --force-destroy` / `--no-force-destroy` is kept in the
// profile up writes (force_destroy), as the reference keeps it in its stack, so a later
// plain `down` follows it; both at once are refused.
func TestCLIUpForceDestroyPersisted(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the kinetic binary")
	}
	f := gketest.Start(t, gketest.Options{})
	home, cmdFor := cliEnv(t, f)
	run := func(args ...string) (string, error) {
		out, err := cmdFor(args...).CombinedOutput()
		return string(out), err
	}
	if out, err := run("up", "--backend", "gke", "--force-destroy", "--no-force-destroy", "--preview"); err == nil || !strings.Contains(out, "give one of them") {
		t.Errorf("both flags: %v\n%s", err, out)
	}
	if out, err := run("up", "--backend", "gke", "-y", "--force-destroy"); err != nil {
		t.Fatalf("up --force-destroy: %v\n%s", err, out)
	}
	prof, err := config.LoadProfiles(filepath.Join(home, "profiles.json"))
	if err != nil || prof.Profiles["kinetic-cluster"]["force_destroy"] != "true" {
		t.Fatalf("profile after up --force-destroy: %v %v", prof, err)
	}
	// A plain down follows the profile: the bucket goes.
	if out, err := run("down", "-y"); err != nil || !strings.Contains(out, "- delete   store bucket") {
		t.Errorf("down after up --force-destroy: %v\n%s", err, out)
	}
	if out, err := run("up", "--backend", "gke", "-y", "--no-force-destroy"); err != nil {
		t.Fatalf("up --no-force-destroy: %v\n%s", err, out)
	}
	if prof, err = config.LoadProfiles(filepath.Join(home, "profiles.json")); err != nil || prof.Profiles["kinetic-cluster"]["force_destroy"] != "false" {
		t.Fatalf("profile after up --no-force-destroy: %v %v", prof, err)
	}
	if out, err := run("down", "-y"); err != nil || !strings.Contains(out, "= keep     store bucket") {
		t.Errorf("down after up --no-force-destroy: %v\n%s", err, out)
	}
}

// TestCLIAcceleratorsLive: on GKE, `accelerators --live` reads the cluster's node pools
// from the GKE API (no kubeconfig), as the reference's does, a pool scaled to zero
// included: a job's pod makes it grow.
func TestCLIAcceleratorsLive(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the kinetic binary")
	}
	f := gketest.Start(t, gketest.Options{})
	_, cmdFor := cliEnv(t, f)
	run := func(args ...string) (string, string, error) {
		cmd := cmdFor(args...)
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		return o.String(), e.String(), err
	}
	if _, e, err := run("up", "-y"); err != nil {
		t.Fatalf("up: %v\n%s", err, e)
	}
	if o, _, err := run("accelerators", "--live"); err != nil || !strings.Contains(o, "no accelerator pools") {
		t.Errorf("--live with the system pool only: %v\n%s", err, o)
	}
	if _, e, err := run("pool", "add", "--accelerator", "gpu-l4", "-y"); err != nil {
		t.Fatalf("pool add: %v\n%s", err, e)
	}
	o, e, err := run("accelerators", "--live", "--json")
	if err != nil {
		t.Fatalf("--live --json: %v\n%s", err, e)
	}
	var rows []struct {
		Name     string `json:"name"`
		MinNodes int    `json:"min_nodes"`
		MaxNodes int    `json:"max_nodes"`
	}
	if err := json.Unmarshal([]byte(o), &rows); err != nil || len(rows) != 1 || rows[0].MinNodes != 0 || rows[0].MaxNodes < 1 || !strings.Contains(rows[0].Name, "l4") {
		t.Errorf("--live --json after pool add (a pool of 0 nodes): %v %+v\n%s", err, rows, o)
	}
}
