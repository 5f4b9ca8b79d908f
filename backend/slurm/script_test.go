package slurm

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kinetic-run/kinetic/accel"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
)

func newTestBackend(t *testing.T, o Options) *Backend {
	t.Helper()
	st, err := store.Open(context.Background(), "file://"+t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if o.OutputDir == "" {
		o.OutputDir = "/shared/out"
	}
	if o.Kinetic == "" {
		o.Kinetic = "/shared/bin/kinetic"
	}
	b, err := New(st, o)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSbatchArgs: the accelerator becomes Slurm's resources (GPUs as --gres in the GPU
// partition, CPUs per task), the settings their flags, a timeout a time limit a minute
// past the runner's.
func TestSbatchArgs(t *testing.T) {
	b := newTestBackend(t, Options{Partition: "cpu", GPUPartition: "gpu", Account: "ml", SbatchArgs: []string{"--qos=high"}})
	for _, c := range []struct {
		acc, timeout string
		want         []string
	}{
		{"cpu", "", []string{"--partition=cpu"}},
		{"cpu:4", "", []string{"--cpus-per-task=4", "--partition=cpu"}},
		{"gpu-l4", "", []string{"--gres=gpu:1", "--partition=gpu"}},
		{"gpu-a100x8", "90", []string{"--gres=gpu:8", "--partition=gpu"}},
	} {
		h := &job.Handle{JobID: "job-x", Accelerator: c.acc, TimeoutSeconds: c.timeout}
		got, err := b.sbatchArgs(h, "job-x", "", "/shared/out/job-x.out")
		if err != nil {
			t.Fatal(err)
		}
		want := append([]string{"--parsable", "--job-name=job-x", "--output=/shared/out/job-x.out", "--chdir=/shared/out"}, c.want...)
		want = append(want, "--account=ml")
		if c.timeout != "" {
			want = append(want, "--time=3")
		}
		want = append(want, "--qos=high")
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("%s (-want +got):\n%s", c.acc, d)
		}
	}
}

// TestRefused: a TPU or a slice over several hosts is refused, saying what runs here.
func TestRefused(t *testing.T) {
	for _, name := range []string{"tpu-v6e-8", "tpu-v5p-16"} {
		acc, err := accel.Parse(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := (factory{}).Plan(&job.Handle{}, acc, nil); err == nil || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "--backend gke") {
			t.Errorf("Plan(%s) = %v; want a refusal naming it and where it runs", name, err)
		}
	}
}

// TestPlanWithoutSlurm: planning a job for the Slurm backend on a machine without Slurm's
// commands fails at once, saying what to install or choose.
func TestPlanWithoutSlurm(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	acc, _ := accel.Parse("cpu")
	err := (factory{}).Plan(&job.Handle{}, acc, nil)
	if err == nil || !strings.Contains(err.Error(), "slurm-client") || !strings.Contains(err.Error(), "SLURM_CONF") || strings.Contains(err.Error(), "$PATH") {
		t.Fatalf("Plan without scontrol: %v; want an error naming slurm-client and SLURM_CONF", err)
	}
}

// TestScript: the batch script runs the runner with its arguments quoted, outlasts a
// SIGTERM to wait for it, removes the workspace, and exits with its status.
func TestScript(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "it's kinetic")
	// A runner that records its arguments, then exits 3 unless it gets a SIGTERM, which
	// it takes a moment to act on.
	if err := os.WriteFile(fake, []byte("#!/bin/sh\nprintf '%s\\n' \"$@\" > \"$ARGS\"\nmkdir -p \"$7\"\ntrap 'sleep 0.2; echo termed > \"$ARGS.term\"; exit 143' TERM\nsleep 0.3 & wait\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	b := newTestBackend(t, Options{Kinetic: fake})
	h := &job.Handle{JobID: "job-x", Store: "file:///a b"}
	script := mustScript(t, b, h, nil, "--job", h.JobID)
	args := filepath.Join(dir, "args")
	cmd := exec.Command("sh", "-c", script)
	cmd.Env = append(os.Environ(), "ARGS="+args, "TMPDIR="+dir, "SLURM_JOB_ID=77")
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 {
		t.Fatalf("the script ended with %v; want the runner's exit code 3", err)
	}
	raw, _ := os.ReadFile(args)
	want := "runner\n--store\nfile:///a b\n--job\njob-x\n--debug-port\n0\n--workspace\n" + dir + "/kinetic-slurm-77\n"
	if string(raw) != want {
		t.Fatalf("the runner's arguments:\n%s\nwant\n%s", raw, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "kinetic-slurm-77")); !os.IsNotExist(err) {
		t.Fatalf("the workspace is left: %v", err)
	}
	// With an environment directory, the runner builds a job's requirements there.
	b.o.EnvDir = "/shared/envs"
	if s := mustScript(t, b, h, nil, "--job", h.JobID); !strings.Contains(s, "'--env-dir' '/shared/envs' --workspace") {
		t.Errorf("the script with EnvDir:\n%s\nwant the runner given --env-dir /shared/envs", s)
	}
	b.o.EnvDir = ""
	// The job's hardware is JAX's platform, as in a pod.
	for acc, want := range map[string]string{"cpu": "cpu", "gpu-l4": "cuda"} {
		s := mustScript(t, b, &job.Handle{JobID: "job-x", Store: "file:///s", Accelerator: acc}, nil, "--job", "job-x")
		if !strings.Contains(s, "\nexport JAX_PLATFORMS='"+want+"'\n") {
			t.Errorf("the script of a %s job:\n%s\nwant JAX_PLATFORMS=%s", acc, s, want)
		}
	}
	// A SIGTERM to the script alone (Slurm signals the runner itself) does not end it
	// before the runner: it waits, removes the workspace and exits with the runner's
	// status.
	cmd = exec.Command("sh", "-c", script)
	cmd.Env = append(os.Environ(), "ARGS="+args, "TMPDIR="+dir, "SLURM_JOB_ID=78")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGTERM)
	err = cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 {
		t.Fatalf("the script ended with %v after a SIGTERM; want it to wait for the runner's exit code 3", err)
	}
	if _, err := os.Stat(args + ".term"); !os.IsNotExist(err) {
		t.Fatalf("the script passed the SIGTERM on to the runner (%v): the runner gets Slurm's own", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "kinetic-slurm-78")); !os.IsNotExist(err) {
		t.Fatalf("the workspace is left: %v", err)
	}
}

func mustScript(t *testing.T, b *Backend, h *job.Handle, spec *job.Spec, runnerArgs ...string) string {
	t.Helper()
	s, err := b.script(h, spec, runnerArgs...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestContainerScript: a job whose spec names a container engine and an image runs the
// runner in that image (this kinetic mounted as its entrypoint, the file:// store and an
// output directory outside it mounted at their paths, the host's network, Slurm's
// variables passed in, a loopback registry without TLS), and the container is removed
// after it; a job without one runs the runner on the node.
func TestContainerScript(t *testing.T) {
	b := newTestBackend(t, Options{EnvDir: "/shared/envs"})
	h := &job.Handle{JobID: "job-c", Store: "file:///shared/store", Accelerator: "cpu"}
	spec := &job.Spec{Container: "podman", Image: "127.0.0.1:5000/kn/kinetic-env@sha256:ab", OutputDir: "/shared/out/job-c"}
	s := mustScript(t, b, h, spec, "--job", "job-c")
	for _, want := range []string{
		`podman run --rm --quiet --name "kinetic-slurm-${SLURM_JOB_ID}" --network=host --pull=missing -v '/shared/bin/kinetic:/kinetic/bin/kinetic:ro' -e KINETIC_HOST_INDEX=0 -e JAX_PLATFORMS -e 'SLURM_*' --tls-verify=false -v '/shared/store:/shared/store' -v '/shared/out/job-c:/shared/out/job-c' --entrypoint /kinetic/bin/kinetic '127.0.0.1:5000/kn/kinetic-env@sha256:ab' runner --store 'file:///shared/store' '--job' 'job-c' --workspace "/tmp/kinetic/${SLURM_JOB_ID}" &`,
		"\npodman rm -f \"kinetic-slurm-${SLURM_JOB_ID}\" >/dev/null 2>&1\n",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("the script:\n%s\nlacks\n%s", s, want)
		}
	}
	if strings.Contains(s, "--env-dir") {
		t.Errorf("the script of a job in an image builds an environment on the node:\n%s", s)
	}
	// An output directory inside the store is mounted with it; docker gets no podman flags.
	spec = &job.Spec{Container: "docker", Image: "registry.example/x:1", OutputDir: "/shared/store/outputs/job-c"}
	s = mustScript(t, b, h, spec, "--job", "job-c")
	if strings.Count(s, " -v ") != 2 || strings.Contains(s, "SLURM_*") || strings.Contains(s, "tls-verify") || !strings.Contains(s, "docker run --rm --quiet") {
		t.Errorf("the docker script:\n%s", s)
	}
	if _, err := b.script(&job.Handle{JobID: "job-c", Store: "file:///a:b"}, spec, "--job", "job-c"); err == nil || !strings.Contains(err.Error(), "':'") {
		t.Errorf("a store path with ':' (podman -v cannot take it): %v", err)
	}
	if s := mustScript(t, b, h, &job.Spec{}, "--job", "job-c"); strings.Contains(s, "podman") || !strings.Contains(s, "'--env-dir' '/shared/envs'") {
		t.Errorf("a job with no container:\n%s", s)
	}
}
