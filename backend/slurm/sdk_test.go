package slurm_test

import (
	"encoding/json"
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

// sdkScript calls a function on Slurm from the Python SDK: once synchronously, then as a
// batch of a few inputs (one job array), and prints what came back as JSON, with how
// long the calls took.
const sdkScript = `
import json, os, sys, time
import kinetic

@kinetic.run(accelerator="cpu")
def where(x):
    import os
    return {"square": x * x, "slurm_job": os.environ.get("SLURM_JOB_ID"), "task": os.environ.get("SLURM_ARRAY_TASK_ID")}

t0 = time.time()
first = where(7)
t1 = time.time()
again = where(8)
t2 = time.time()
b = where.run_async_map([1, 2, 3, 4], max_concurrent=2)
results = b.results(timeout=120)
t3 = time.time()
print(json.dumps({"first": first, "again": again, "map": results, "sync_s": [t1 - t0, t2 - t1], "map_s": t3 - t2}))
`

type sdkOut struct {
	First, Again struct {
		Square   int     `json:"square"`
		SlurmJob *string `json:"slurm_job"`
		Task     *string `json:"task"`
	}
	Map []struct {
		Square   int     `json:"square"`
		SlurmJob *string `json:"slurm_job"`
		Task     *string `json:"task"`
	}
	SyncS []float64 `json:"sync_s"`
	MapS  float64   `json:"map_s"`
}

// runSDK runs sdkScript with the SDK of this repository against the kinetic binary, with
// env added, and returns what it printed.
func runSDK(t *testing.T, env ...string) sdkOut {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.py"), []byte(sdkScript), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("python3", "main.py")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PYTHONPATH="+filepath.Join(srcroot.MustDir(), "python"), "KINETIC_BIN="+testbin.Path(t))
	cmd.Env = append(cmd.Env, env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the SDK script failed: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr.String())
	}
	var got sdkOut
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("the SDK script printed %q: %v\nstderr:\n%s", out, err, stderr.String())
	}
	return got
}

func needPythonSDK(t *testing.T) {
	t.Helper()
	if err := exec.Command("python3", "-c", "import cloudpickle").Run(); err != nil {
		t.Skip("the SDK's end-to-end test needs python3 with cloudpickle (Debian: python3-cloudpickle)")
	}
}

// TestSDK: the Python SDK with backend=slurm, chosen by a profile made with `kinetic
// profile create --backend slurm`: a synchronous call returns its value from a Slurm
// job, and a map of four inputs runs as one job array and returns every value, in order.
// The same script on the local backend gives the latencies compared in docs/slurm.md.
func TestSDK(t *testing.T) {
	c := needSlurm(t)
	needPythonSDK(t)
	home := t.TempDir()
	// The local backend's supervisors (the comparison's) idle a minute after their job.
	testproc.StopUnderAtCleanup(t, home)
	base := []string{"KINETIC_HOME=" + home, "KINETIC_PROFILES_FILE=" + filepath.Join(home, "profiles.json"), "SLURM_CONF=" + c.Conf}
	for _, k := range []string{"KINETIC_STORE", "KINETIC_BACKEND", "KINETIC_PROFILE", "KINETIC_PROJECT"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	create := exec.Command(testbin.Path(t), "profile", "create", "hpc", "--backend", "slurm", "--slurm-partition", c.Partition, "--slurm-kinetic", testbin.Path(t), "--use")
	create.Env = append(os.Environ(), base...)
	if out, err := create.CombinedOutput(); err != nil {
		t.Fatalf("kinetic profile create: %v\n%s", err, out)
	}
	start := time.Now()
	got := runSDK(t, base...)
	t.Logf("on Slurm: sync calls %.3fs, %.3fs; a map of 4 (max_concurrent=2) %.3fs; in all %s", got.SyncS[0], got.SyncS[1], got.MapS, time.Since(start).Round(time.Millisecond))
	if got.First.Square != 49 || got.Again.Square != 64 || got.First.SlurmJob == nil || got.Again.SlurmJob == nil || *got.First.SlurmJob == *got.Again.SlurmJob {
		t.Fatalf("sync calls: %+v, %+v; want 49 and 64, each from a Slurm job of its own", got.First, got.Again)
	}
	if len(got.Map) != 4 {
		t.Fatalf("map results: %+v", got.Map)
	}
	for i, r := range got.Map {
		if r.Square != (i+1)*(i+1) || r.Task == nil || *r.Task != string(rune('0'+i)) {
			t.Errorf("map result %d: %+v; want %d from array task %d", i, r, (i+1)*(i+1), i)
		}
	}
	// The same calls on the local backend, for comparison (docs/slurm.md).
	local := runSDK(t, append(base, "KINETIC_BACKEND=local")...)
	t.Logf("on the local backend: sync calls %.3fs, %.3fs; a map of 4 %.3fs", local.SyncS[0], local.SyncS[1], local.MapS)
}
