package slurm_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kinetic-run/kinetic/backend/slurm/slurmtest"
	"github.com/kinetic-run/kinetic/image"
	"github.com/kinetic-run/kinetic/testkit/imagetest"
	"github.com/kinetic-run/kinetic/testkit/pywheels"
	"github.com/kinetic-run/kinetic/testkit/srcroot"
	"github.com/kinetic-run/kinetic/testkit/testbin"
	"github.com/kinetic-run/kinetic/testkit/testproc"
)

// slurmHome is a Kinetic home whose active profile, made with `kinetic profile create
// hpc --backend slurm`, sends jobs to c; it returns the environment the SDK runs with.
func slurmHome(t *testing.T, c *slurmtest.Cluster, more ...string) (home string, env []string) {
	t.Helper()
	home = t.TempDir()
	// The local backend's supervisors (a comparison's) idle a minute after their job.
	testproc.StopUnderAtCleanup(t, home)
	env = []string{"KINETIC_HOME=" + home, "KINETIC_PROFILES_FILE=" + filepath.Join(home, "profiles.json"), "SLURM_CONF=" + c.Conf}
	for _, k := range []string{"KINETIC_STORE", "KINETIC_BACKEND", "KINETIC_PROFILE", "KINETIC_PROJECT", "KINETIC_CONTAINER"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	args := append([]string{"profile", "create", "hpc", "--backend", "slurm", "--slurm-partition", c.Partition, "--slurm-kinetic", testbin.Path(t), "--use"}, more...)
	create := exec.Command(testbin.Path(t), args...)
	create.Env = append(os.Environ(), env...)
	if out, err := create.CombinedOutput(); err != nil {
		t.Fatalf("kinetic profile create: %v\n%s", err, out)
	}
	return home, env
}

// runScript runs a Python script (main.py in dir) with the SDK of this repository
// against the kinetic binary, with env added, and decodes the JSON it prints last into v.
func runScript(t *testing.T, dir, script string, v any, env ...string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "main.py"), []byte(script), 0o644); err != nil {
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
	// The last line: a sync call streams its job's output (and the SDK its notes) before.
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), v); err != nil {
		t.Fatalf("the SDK script printed %q: %v\nstderr:\n%s", out, err, stderr.String())
	}
	t.Logf("the SDK script's stderr:\n%s", stderr.String())
}

// reqScript imports, on the node, a package only the job's requirements.txt names, and
// jax (the runtime layer's, pinned as on the local backend), from two array tasks at
// once and then a call of its own.
const reqScript = `
import json, os, sys
import kinetic

@kinetic.run(accelerator="cpu")
def probe(x):
    import os, sys, jax, kslurmpkg
    return {"x": x, "pkg": kslurmpkg.VERSION, "jax": jax.__version__, "python": sys.executable, "job": os.environ.get("SLURM_JOB_ID")}

res = probe.run_async_map([1, 2], max_concurrent=2).results(timeout=900)
one = probe(3)
print(json.dumps({"map": res, "one": one}))
`

type probed struct {
	X      int    `json:"x"`
	Pkg    string `json:"pkg"`
	Jax    string `json:"jax"`
	Python string `json:"python"`
	Job    string `json:"job"`
}

// TestRequirements: a job with a requirements.txt gets, on the node, a virtualenv keyed
// by its environment key in the shared slurm_env_dir (default: slurm/envs under
// Kinetic's home), with the user's package and the runtime layer's pins (jax ==
// image.JaxVersion) as a local job's environment has; two array tasks that start
// together build it once (the other waits on its lock), and a later job reuses it. The
// packages come from local wheel directories (--no-index): nothing is downloaded.
func TestRequirements(t *testing.T) {
	c := needSlurm(t)
	needPythonSDK(t)
	wheels, err := pywheels.Ready()
	if err != nil {
		t.Skip(err)
	}
	mine := t.TempDir()
	if _, err := imagetest.Wheel(mine, "kslurmpkg", "1.0", map[string][]byte{"kslurmpkg/__init__.py": []byte("VERSION = '1.0'\n")}); err != nil {
		t.Fatal(err)
	}
	proj := t.TempDir()
	reqs := strings.Join(append(pywheels.IndexLines(wheels), "--find-links "+mine, "kslurmpkg==1.0"), "\n") + "\n"
	if err := os.WriteFile(filepath.Join(proj, "requirements.txt"), []byte(reqs), 0o644); err != nil {
		t.Fatal(err)
	}
	home, env := slurmHome(t, c)
	start := time.Now()
	var got struct {
		Map []probed
		One probed
	}
	runScript(t, proj, reqScript, &got, env...)
	t.Logf("two array tasks and a job with requirements: %s", time.Since(start).Round(time.Millisecond))

	envs := filepath.Join(home, "slurm", "envs")
	all := append(got.Map, got.One)
	if len(got.Map) != 2 {
		t.Fatalf("map results %+v", got.Map)
	}
	for i, r := range all {
		if r.X != i+1 || r.Pkg != "1.0" || r.Jax != image.JaxVersion || r.Job == "" {
			t.Errorf("call %d: %+v; want kslurmpkg 1.0 and jax %s imported in a Slurm job", i, r, image.JaxVersion)
		}
		if !strings.HasPrefix(r.Python, envs+"/") || r.Python != all[0].Python {
			t.Errorf("call %d ran %s; want one environment under %s for all", i, r.Python, envs)
		}
	}
	markers, _ := filepath.Glob(filepath.Join(envs, "*", "kinetic-env.json"))
	if len(markers) != 1 {
		t.Errorf("environments built in %s: %v; want one", envs, markers)
	}
	var builds int
	outs, _ := filepath.Glob(filepath.Join(home, "slurm", "*.out"))
	for _, o := range outs {
		b, _ := os.ReadFile(o)
		builds += strings.Count(string(b), "kinetic: building Python environment")
	}
	if builds != 1 {
		t.Errorf("%d builds of the environment in the jobs' output (%d files); want 1", builds, len(outs))
	}
}
