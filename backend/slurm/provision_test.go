package slurm_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kinetic-run/kinetic/backend/provision"
	"github.com/kinetic-run/kinetic/backend/provision/provisiontest"
	"github.com/kinetic-run/kinetic/backend/slurm"
	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/testkit/testbin"
)

// setupHome points the configuration at a fresh profiles file, data directory and
// file:// store, and returns the store's URL.
func setupHome(t *testing.T) string {
	home := t.TempDir()
	st := "file://" + filepath.Join(home, "store")
	t.Setenv("KINETIC_HOME", filepath.Join(home, "data"))
	t.Setenv("KINETIC_PROFILES_FILE", filepath.Join(home, "profiles.json"))
	t.Setenv("KINETIC_STORE", st)
	for _, v := range []string{"KINETIC_PROJECT", "GOOGLE_CLOUD_PROJECT", "KINETIC_BACKEND", "KINETIC_PROFILE"} {
		t.Setenv(v, "")
	}
	return st
}

// TestProvisioner: the Slurm backend's provisioner passes the conformance suite against
// the real Slurm slurmtest starts: init writes a profile with backend slurm, doctor and
// status ask the cluster, up says that Kinetic makes no Slurm cluster.
func TestProvisioner(t *testing.T) {
	c := needSlurm(t)
	provisiontest.Run(t, provisiontest.Harness{
		Name:      slurm.Name,
		Setup:     func(t *testing.T) { setupHome(t) },
		InitFlags: map[string]string{"partition": c.Partition},
	})
}

// kinetic runs the kinetic binary with env on top of this process's environment.
func kinetic(t *testing.T, env []string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(testbin.Path(t), args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestProvisionerCommands: through the binary, `kinetic init -y --backend slurm` writes
// the profile, `kinetic doctor` passes against the real Slurm, `kinetic status` lists
// its partition and a Kinetic job in its queue (and no other job), and up, down and
// pool say that Kinetic makes no Slurm cluster.
func TestProvisionerCommands(t *testing.T) {
	c := needSlurm(t)
	st := setupHome(t)
	env := []string{"SLURM_CONF=" + c.Conf}
	if out, err := kinetic(t, env, "init", "-y", "--backend", "slurm", "--store", st, "--partition", c.Partition); err != nil {
		t.Fatalf("kinetic init: %v\n%s", err, out)
	}
	f, err := config.LoadProfiles(config.ProfilesPath(nil))
	if err != nil {
		t.Fatal(err)
	}
	if p := f.Profiles[f.Current]; p["backend"] != slurm.Name || p["store"] != st || p[string(slurm.KeyPartition)] != c.Partition {
		t.Fatalf("profile %s: %v; want backend slurm, store %s, slurm_partition %s", f.Current, p, st, c.Partition)
	}
	t.Setenv("KINETIC_STORE", "")
	out, err := kinetic(t, env, "doctor")
	if err != nil || !strings.Contains(out, "✓ Slurm controller: cluster "+c.Name) || !strings.Contains(out, "✓ munge") || !strings.Contains(out, "ready: jobs can run") {
		t.Fatalf("kinetic doctor: %v\n%s", err, out)
	}
	checkStatus(t, c.Partition, env)
	for _, args := range [][]string{{"up"}, {"down"}, {"pool", "list"}} {
		if out, err := kinetic(t, env, args...); err == nil || !strings.Contains(out, "Slurm") {
			t.Errorf("kinetic %s: %v, want an error saying Kinetic makes no Slurm cluster\n%s", args[0], err, out)
		}
	}
}

// checkStatus submits a job named as Kinetic names them and one named otherwise, and
// checks that status lists the partition and the first only.
func checkStatus(t *testing.T, partition string, env []string) {
	t.Helper()
	id := job.NewID()
	for _, name := range []string{id, "not-kinetic"} {
		sub := exec.Command("sbatch", "--parsable", "--job-name="+name, "--partition="+partition, "--output=/dev/null", "--wrap", "sleep 60")
		sub.Env = append(os.Environ(), env...)
		if out, err := sub.CombinedOutput(); err != nil {
			t.Fatalf("sbatch: %v\n%s", err, out)
		}
		t.Cleanup(func() { exec.Command("scancel", "--name="+name).Run() })
	}
	out, err := kinetic(t, env, "status")
	if err != nil || !strings.Contains(out, partition) || !strings.Contains(out, id) || strings.Contains(out, "not-kinetic") {
		t.Fatalf("kinetic status: %v; want partition %s and job %s only\n%s", err, partition, id, out)
	}
	out, err = kinetic(t, env, "status", "--json")
	var v struct {
		OK   bool
		Jobs []struct{ Name string }
	}
	if err != nil || json.Unmarshal([]byte(out), &v) != nil || !v.OK || len(v.Jobs) != 1 || v.Jobs[0].Name != id {
		t.Fatalf("kinetic status --json: %v; %+v\n%s", err, v, out)
	}
}

// TestDoctorWithoutSlurm: on a machine without Slurm's commands, doctor fails and says
// which are missing and what to do; status is not ready, in a person's words.
func TestDoctorWithoutSlurm(t *testing.T) {
	setupHome(t)
	bin := testbin.Path(t)
	env := []string{"PATH=" + t.TempDir(), "KINETIC_BACKEND=slurm"}
	out, err := kinetic(t, env, "doctor")
	if err == nil || !strings.Contains(out, "✗ Slurm commands: sbatch, squeue, sacct, scancel") || !strings.Contains(out, "fix: ") || !strings.Contains(out, "not ready") {
		t.Fatalf("%s doctor without Slurm: %v\n%s", bin, err, out)
	}
	out, err = kinetic(t, env, "status")
	if err == nil || !strings.Contains(out, "not installed") {
		t.Fatalf("status without Slurm: %v\n%s", err, out)
	}
}

// TestInitAsks: init on a terminal asks for the store and the partition, refuses a store
// the nodes cannot reach (naming --store), and writes what was answered.
func TestInitAsks(t *testing.T) {
	setupHome(t)
	p, _ := provision.Lookup(slurm.Name)
	c, _, errb := provisiontest.NewCall(t, slurm.Name, provision.CmdInit, map[string]string{"profile-name": "hpc"})
	c.Prompter = provision.NewPrompter(strings.NewReader("mem://\n\n"), errb)
	if err := p.Init(context.Background(), c); err == nil || !strings.Contains(err.Error(), "--store") {
		t.Fatalf("init with store mem://: %v, want an error naming --store", err)
	}
	c, _, errb = provisiontest.NewCall(t, slurm.Name, provision.CmdInit, map[string]string{"profile-name": "hpc"})
	c.Prompter = provision.NewPrompter(strings.NewReader("file:///shared/kn\ngpu\ny\n"), errb)
	if err := p.Init(context.Background(), c); err != nil {
		t.Fatalf("init: %v\n%s", err, errb)
	}
	f, err := config.LoadProfiles(config.ProfilesPath(nil))
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Profiles["hpc"]; f.Current != "hpc" || got["backend"] != slurm.Name || got["store"] != "file:///shared/kn" || got[string(slurm.KeyPartition)] != "gpu" {
		t.Errorf("profile hpc (current %s): %v\n%s", f.Current, got, errb)
	}
	for _, q := range []string{"Store the nodes reach too", "Slurm partition", "write it?"} {
		if !strings.Contains(errb.String(), q) {
			t.Errorf("init did not ask %q:\n%s", q, errb)
		}
	}
}
