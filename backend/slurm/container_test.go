package slurm_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kinetic-run/kinetic/engine"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
	"github.com/kinetic-run/kinetic/testkit/imagetest"
)

// containerScript runs a function in the job's image on the Slurm node: once in the
// bundled image (built from the Python base with the project's requirement), as a map
// (one job array, each task in a container), and once in a custom image (the bare
// Python base, container_image=).
const containerScript = `
import json, os
import kinetic

def where(x):
    import os
    try:
        import kn_slurm
        v = kn_slurm.VALUE
    except ImportError:
        v = None
    return {"x": x, "container": os.path.exists("/run/.containerenv"), "job": os.environ.get("SLURM_JOB_ID"),
            "task": os.environ.get("SLURM_ARRAY_TASK_ID"), "pkg": v}

bundled = kinetic.run(accelerator="cpu")(where)
custom = kinetic.run(accelerator="cpu", container_image=os.environ["BASE"])(where)
one = bundled(1)
m = bundled.run_async_map([2, 3], max_concurrent=2).results(timeout=300)
c = custom(4)
print(json.dumps({"one": one, "map": m, "custom": c}))
`

type inside struct {
	X         int     `json:"x"`
	Container bool    `json:"container"`
	Job       *string `json:"job"`
	Task      *string `json:"task"`
	Pkg       *string `json:"pkg"`
}

// TestContainerImage: with the setting container=podman, a Slurm job runs in its image
// on the node (podman run in the batch script, the runner mounted as its entrypoint),
// through the same image choice as the local backend: the bundled image built from the
// project's requirements (a wheel of a local directory) and pushed to the test registry,
// a map's array tasks each in a container, and a custom image used as is. Slurm's
// variables reach the function.
func TestContainerImage(t *testing.T) {
	c := needSlurm(t)
	needPythonSDK(t)
	pm := imagetest.NewPodman(t)
	pm.Setenv(t)
	reg := imagetest.StartDockerRegistry(t)
	base := imagetest.PushPythonBase(t, reg.Host)
	proj := t.TempDir()
	wheels := filepath.Join(proj, "wheels")
	os.MkdirAll(wheels, 0o755)
	if _, err := imagetest.Wheel(wheels, "kn-slurm", "1.0", map[string][]byte{"kn_slurm/__init__.py": []byte("VALUE = '1.0'\n")}); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(proj, "requirements.txt"), []byte("--no-index\n--find-links ./wheels\nkn-slurm==1.0\n"), 0o644)
	home, env := slurmHome(t, c)
	// The base has cloudpickle and the wheel directory no jax: this test is about
	// running images on Slurm, not the runtime layer.
	env = append(env, "KINETIC_CONTAINER=podman", "KINETIC_RUNTIME_LAYER=none", "KINETIC_IMAGE_REGISTRY="+reg.Host+"/kn",
		"KINETIC_BASE_IMAGE_CPU="+base.String(), "BASE="+base.String())
	start := time.Now()
	var got struct {
		One    inside
		Map    []inside
		Custom inside
	}
	runScript(t, proj, containerScript, &got, env...)
	t.Logf("a call, a map of 2 and a call in a custom image, in containers on Slurm: %s", time.Since(start).Round(time.Millisecond))
	if len(got.Map) != 2 {
		t.Fatalf("map results %+v", got.Map)
	}
	for i, r := range append([]inside{got.One}, got.Map...) {
		if r.X != i+1 || !r.Container || r.Job == nil || r.Pkg == nil || *r.Pkg != "1.0" {
			t.Errorf("call %d: %+v; want it in the bundled image (kn_slurm 1.0), in a container of a Slurm job", i, r)
		}
	}
	for i, r := range got.Map {
		if r.Task == nil || *r.Task != string(rune('0'+i)) {
			t.Errorf("map input %d ran in task %v; want array task %d", i, r.Task, i)
		}
	}
	if r := got.Custom; r.X != 4 || !r.Container || r.Job == nil || r.Pkg != nil {
		t.Errorf("the custom image's call: %+v; want it in the bare base (no kn_slurm), in a Slurm job", r)
	}
	if n, _ := filepath.Glob(filepath.Join(home, "slurm", "envs", "*")); len(n) != 0 {
		t.Errorf("environments built on the nodes for jobs in images: %v", n)
	}
	// The last job's container is removed (podman run --rm) as its Slurm job ends, a
	// moment after its runner wrote the result.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		out := pm.Run(t, "ps", "-a", "--format", "{{.Names}}")
		if !strings.Contains(out, "kinetic-slurm-") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("containers left 30 s after the jobs: %q", out)
		}
	}
}

// TestContainerPullFails: a job whose image cannot be pulled on the node ends FAILED,
// not PENDING or RUNNING, with podman's own words for it in the reason (the tail of the
// Slurm output file).
func TestContainerPullFails(t *testing.T) {
	needSlurm(t)
	pm := imagetest.NewPodman(t)
	pm.Setenv(t) // sbatch exports it to the job's podman
	b, st := newBackend(t, nil)
	ctx := context.Background()
	id := job.NewID()
	// Nothing listens on port 1: the pull is refused at once.
	spec := &job.Spec{Version: job.SpecVersion, JobID: id, Kind: job.KindCommand, Command: []string{"true"}, Container: "podman", Image: "127.0.0.1:1/kn/missing:1"}
	h := &job.Handle{JobID: id, Backend: b.Name(), K8sName: id, Accelerator: "cpu", FuncName: "true", Store: st.URL(), CreatedAt: time.Now().UTC().Format(time.RFC3339)}
	if err := st.Put(ctx, store.SpecKey(id), spec.Encode()); err != nil {
		t.Fatal(err)
	}
	if err := st.Put(ctx, store.HandleKey(id), h.Encode()); err != nil {
		t.Fatal(err)
	}
	if err := b.Submit(ctx, h); err != nil {
		t.Fatal(err)
	}
	state, reason := wait(t, &engine.Job{Handle: h, Store: st, Backend: b})
	if state != job.Failed || !strings.Contains(reason, "127.0.0.1:1/kn/missing:1") {
		t.Fatalf("%s %q; want FAILED naming the image podman could not pull", state, reason)
	}
	t.Logf("reason: %s", reason)
}
