package e2e

import (
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/kinetic-run/kinetic/testkit/imagetest"
	"github.com/kinetic-run/kinetic/testkit/tmuxtest"
)

// imageProject is a project whose requirement comes from a local wheel directory.
func imageProject(t *testing.T, e *env, version string) {
	t.Helper()
	wheels := filepath.Join(e.dir, "wheels")
	os.MkdirAll(wheels, 0o755)
	if _, err := imagetest.Wheel(wheels, "kn-demo", version, map[string][]byte{"kn_demo/__init__.py": []byte("VALUE = '" + version + "'\n")}); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(e.dir, "requirements.txt"), []byte("--no-index\n--find-links ./wheels\nkn-demo=="+version+"\n"), 0o644)
	os.WriteFile(filepath.Join(e.dir, "main.py"), []byte(`import os, sys
def main():
    import kn_demo
    print("inside", os.path.exists("/run/.containerenv"), flush=True)
    return {"v": kn_demo.VALUE, "py": "%d.%d" % sys.version_info[:2], "container": os.path.exists("/run/.containerenv")}
`), 0o644)
}

// imageEnv is what the image tests start from: an isolated podman (its configuration in
// this process's environment), Debian's registry holding the Python base, and a project.
func imageEnv(t *testing.T) (*imagetest.Podman, *imagetest.Registry, name.Reference, *env) {
	t.Helper()
	pm := imagetest.NewPodman(t)
	pm.Setenv(t)
	// The test base has cloudpickle, and the wheel directory of these projects holds no
	// jax or keras: these tests are about building and running images, not the runtime
	// layer (e2e/frameworks builds that from real wheels).
	t.Setenv("KINETIC_RUNTIME_LAYER", "none")
	reg := imagetest.StartDockerRegistry(t)
	base := imagetest.PushPythonBase(t, reg.Host)
	return pm, reg, base, newEnv(t)
}

func (e *env) specOf(t *testing.T, stderr string) map[string]any {
	t.Helper()
	ids := e.jobsInStore()
	var spec map[string]any
	for _, id := range ids {
		b, err := os.ReadFile(filepath.Join(e.store, "jobs", id, "spec.json"))
		if err != nil {
			continue
		}
		var s map[string]any
		json.Unmarshal(b, &s)
		if spec == nil || s["job_id"].(string) > spec["job_id"].(string) {
			spec = s
		}
	}
	if spec == nil {
		t.Fatalf("no job in the store; stderr:\n%s", stderr)
	}
	return spec
}

// TestBundledImageRunsUnderPodman is the whole bundled path on real parts: the Python
// base in Debian's docker-registry, a daemonless build with a local wheel, the push,
// then the local backend's container isolation pulls the image with podman (runc,
// cgroupfs) and runs the runner in it; the value comes back through the store. A second
// run is a cache hit; a changed requirement makes a new tag.
func TestBundledImageRunsUnderPodman(t *testing.T) {
	if testing.Short() {
		t.Skip("builds images and runs podman")
	}
	_, reg, base, e := imageEnv(t)
	imageProject(t, e, "1.0")
	t.Setenv("KINETIC_CONTAINER", "podman")
	t.Setenv("KINETIC_IMAGE_REGISTRY", reg.Host+"/kn")
	t.Setenv("KINETIC_BASE_IMAGE_CPU", base.String())

	r := e.run("run", "main.py::main")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "{'v': '1.0', 'py': '3.11', 'container': True}" {
		t.Fatalf("run: code %d\nstdout %q\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "building "+reg.Host+"/kn/kinetic-env:") {
		t.Errorf("first run did not say it builds:\n%s", r.stderr)
	}
	spec := e.specOf(t, r.stderr)
	img, _ := spec["image"].(string)
	if !strings.HasPrefix(img, reg.Host+"/kn/kinetic-env@sha256:") || spec["container"] != "podman" || spec["image_mode"] != "bundled" {
		t.Fatalf("spec image %q container %v mode %v", img, spec["container"], spec["image_mode"])
	}

	r = e.run("run", "main.py::main")
	if r.code != 0 || !strings.Contains(r.stderr, "(cached, nothing to build)") || strings.Contains(r.stderr, "building") {
		t.Fatalf("second run: code %d, want a cache hit\nstderr:\n%s", r.code, r.stderr)
	}
	if got := e.specOf(t, r.stderr)["image"]; got != img {
		t.Fatalf("second run image %v, want %s", got, img)
	}

	imageProject(t, e, "2.0")
	r = e.run("run", "main.py::main")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "{'v': '2.0', 'py': '3.11', 'container': True}" {
		t.Fatalf("changed requirement: code %d\nstdout %q\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	spec2 := e.specOf(t, r.stderr)
	if spec2["image"] == img || spec2["env_key"] == spec["env_key"] {
		t.Fatalf("a changed requirement kept image %v / key %v", spec2["image"], spec2["env_key"])
	}
}

// TestPrebuiltAndCustomImages publishes a prebuilt base with `kinetic build-image
// --json`, runs a job in it (requirements installed by the runner at start, with the
// image's pip), then runs a job in a custom image that holds nothing of Kinetic's.
func TestPrebuiltAndCustomImages(t *testing.T) {
	if testing.Short() {
		t.Skip("builds images and runs podman")
	}
	_, reg, base, e := imageEnv(t)
	imageProject(t, e, "1.5")
	t.Setenv("KINETIC_CONTAINER", "podman")

	r := e.run("build-image", "--repo", reg.Host+"/bases", "--category", "cpu", "--base", base.String(), "--json")
	var list []struct{ Image, Tag, Category string }
	if err := json.Unmarshal([]byte(r.stdout), &list); r.code != 0 || err != nil || len(list) != 1 || !strings.HasPrefix(list[0].Image, reg.Host+"/bases/base-cpu@sha256:") || list[0].Category != "cpu" {
		t.Fatalf("build-image: code %d, %v, stdout %q\nstderr:\n%s", r.code, err, r.stdout, r.stderr)
	}
	res := list[0]

	// Prebuilt without a repository: a clear error.
	r = e.run("run", "--container-image", "prebuilt", "main.py::main")
	if r.code == 0 || !strings.Contains(r.stderr, "kinetic build-image --repo") {
		t.Fatalf("prebuilt without base_image_repo: code %d\nstderr:\n%s", r.code, r.stderr)
	}
	t.Setenv("KINETIC_BASE_IMAGE_REPO", reg.Host+"/bases")
	r = e.run("run", "--container-image", "prebuilt", "main.py::main")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "{'v': '1.5', 'py': '3.11', 'container': True}" {
		t.Fatalf("prebuilt run: code %d\nstdout %q\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "installing 3 requirement lines with pip (prebuilt image)") {
		t.Errorf("prebuilt run did not install at start:\n%s", r.stderr)
	}
	if s := e.specOf(t, r.stderr); s["image"] != res.Tag || s["install_at_start"] != true {
		t.Errorf("prebuilt spec image %v install %v, want %s", s["image"], s["install_at_start"], res.Tag)
	}

	// Custom: the bare Python base, used as is; the runner is mounted in.
	os.WriteFile(filepath.Join(e.dir, "requirements.txt"), nil, 0o644)
	os.WriteFile(filepath.Join(e.dir, "plain.py"), []byte("import os\ndef main():\n    return os.path.exists('/run/.containerenv') and os.path.exists('/kinetic/bin/kinetic')\n"), 0o644)
	r = e.run("run", "--container-image", base.String(), "plain.py::main")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "True" {
		t.Fatalf("custom run: code %d\nstdout %q\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if s := e.specOf(t, r.stderr); s["image"] != base.String() || s["image_mode"] != "custom" {
		t.Errorf("custom spec image %v mode %v", s["image"], s["image_mode"])
	}

	// A bad reference is refused before anything is written.
	before := len(e.jobsInStore())
	r = e.run("run", "--container-image", "https://example.invalid/x", "plain.py::main")
	if r.code == 0 || !strings.Contains(r.stderr, "leave out the scheme") || len(e.jobsInStore()) != before {
		t.Fatalf("bad container_image: code %d\nstderr:\n%s", r.code, r.stderr)
	}
}

// TestPythonSDKInContainer runs pickled functions from the Python SDK inside the bundled
// image (cloudpickle in the base): one call and a small batch, whose children are started
// one by one in containers rather than by the in-process workers.
func TestPythonSDKInContainer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds images and runs podman")
	}
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		t.Skip("needs Debian's python3 with cloudpickle (the SDK's tests use it)")
	}
	_, reg, base, e := imageEnv(t)
	script := filepath.Join(e.dir, "sdk.py")
	os.WriteFile(script, []byte(`import os, kinetic
@kinetic.run(accelerator="cpu")
def f(x):
    return (x * 2, os.path.exists("/run/.containerenv"))
print(f(21))
print(sorted(f.run_async_map([1, 2, 3]).results()))
`), 0o644)
	cmd := exec.Command(py, script)
	cmd.Dir = e.dir
	cmd.Env = append(os.Environ(), "KINETIC_BIN="+e.bin, "KINETIC_HOME="+filepath.Join(e.home, "data"),
		"KINETIC_PROFILES_FILE="+filepath.Join(e.home, "profiles.json"), "PYTHONPATH="+filepath.Join(repoRoot(), "python"),
		"KINETIC_CONTAINER=podman", "KINETIC_IMAGE_REGISTRY="+reg.Host+"/kn", "KINETIC_BASE_IMAGE_CPU="+base.String())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, out, stderr.String())
	}
	if got := strings.TrimSpace(string(out)); got != "(42, True)\n[(2, True), (4, True), (6, True)]" {
		t.Fatalf("stdout %q\nstderr:\n%s", got, stderr.String())
	}
	if !strings.Contains(stderr.String(), "(cached, nothing to build)") {
		t.Errorf("the batch did not reuse the image:\n%s", stderr.String())
	}
}

// TestContainerCancel: cancelling a job that runs in a local container stops the
// container and reports FAILED "cancelled", as on the virtualenv path.
func TestContainerCancel(t *testing.T) {
	if testing.Short() {
		t.Skip("builds images and runs podman")
	}
	pm, reg, base, e := imageEnv(t)
	t.Setenv("KINETIC_CONTAINER", "podman")
	t.Setenv("KINETIC_IMAGE_REGISTRY", reg.Host+"/kn")
	t.Setenv("KINETIC_BASE_IMAGE_CPU", base.String())
	r := e.run("run", "--async", "--json", "--", "sh", "-c", "echo begin; sleep 300")
	var h map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &h); r.code != 0 || err != nil {
		t.Fatalf("submit: %d %v %s", r.code, err, r.stderr)
	}
	id := h["job_id"].(string)
	deadline := time.Now().Add(90 * time.Second)
	for !strings.Contains(e.run("jobs", "logs", id).stdout, "begin") {
		if time.Now().After(deadline) {
			t.Fatalf("the job never started: %q", e.run("jobs", "status", "--json", id).stdout)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if out := pm.Run(t, "ps", "--format", "{{.Names}}"); !strings.Contains(out, "kinetic-"+id) {
		t.Fatalf("no container kinetic-%s in %q", id, out)
	}
	start := time.Now()
	if r = e.run("jobs", "cancel", id); r.code != 0 {
		t.Fatalf("cancel: %d %s", r.code, r.stderr)
	}
	r = e.run("jobs", "status", "--json", id)
	var st map[string]any
	json.Unmarshal([]byte(r.stdout), &st)
	if st["status"] != "FAILED" || st["reason"] != "cancelled" {
		t.Fatalf("status after cancel: %q", r.stdout)
	}
	if out := pm.Run(t, "ps", "-a", "--format", "{{.Names}}"); strings.Contains(out, "kinetic-"+id) {
		t.Fatalf("container still there after cancel: %q", out)
	}
	t.Logf("cancel took %s", time.Since(start))
}

// TestImageErrors: what can go wrong with a bundled image is said before anything is
// written, naming the input and the fix.
func TestImageErrors(t *testing.T) {
	if _, err := exec.LookPath("podman"); err != nil {
		t.Skip("container=podman needs podman (apt-get install podman); CI installs it")
	}
	reg := imagetest.StartRegistry(t)
	base := imagetest.Push(t, imagetest.TinyBase(t), reg.Host+"/tiny:1")
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := l.Addr().String()
	l.Close()
	e := newEnv(t)
	imageProject(t, e, "1.0")
	t.Setenv("KINETIC_CONTAINER", "podman")
	t.Setenv("KINETIC_RUNTIME_LAYER", "none") // as in imageEnv
	for _, tc := range []struct {
		name     string
		registry string
		base     string
		reqs     string
		want     []string
	}{
		{"no registry", "", base.String(), "", []string{"set image_registry"}},
		{"unreachable registry", closed + "/kn", base.String(), "", []string{"registry unreachable", closed, "image_registry"}},
		{"bad base image", reg.Host + "/kn", reg.Host + "/nope:1", "", []string{"base image " + reg.Host + "/nope:1 was not found", "base_image_"}},
		{"missing wheel", reg.Host + "/kn", base.String(), "--no-index\n--find-links ./wheels\nkn-absent==2.0\n", []string{"kn-absent==2.0 has no wheel for Python 3.11", "--find-links"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("KINETIC_IMAGE_REGISTRY", tc.registry)
			t.Setenv("KINETIC_BASE_IMAGE_CPU", tc.base)
			if tc.reqs != "" {
				os.WriteFile(filepath.Join(e.dir, "requirements.txt"), []byte(tc.reqs), 0o644)
			}
			before := len(e.jobsInStore())
			r := e.run("run", "main.py::main")
			if r.code == 0 {
				t.Fatalf("succeeded:\n%s", r.stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
				}
			}
			if len(e.jobsInStore()) != before {
				t.Errorf("a failed image plan wrote a job")
			}
		})
	}
}

// TestBuildImageFlags: `kinetic build-image` as documented: every category by default,
// --category repeatable or comma-separated, a bad one refused, --dockerfile built with
// podman as the base, --update-credentials refused for a registry gcloud has no
// credentials for, and on a terminal --repo asked for and the plan confirmed (n: nothing
// pushed; y: pushed).
func TestBuildImageFlags(t *testing.T) {
	if testing.Short() {
		t.Skip("builds images and runs podman")
	}
	pm, reg, base, e := imageEnv(t)
	cats := func(r result) []string {
		t.Helper()
		var list []struct{ Image, Category string }
		if err := json.Unmarshal([]byte(r.stdout), &list); r.code != 0 || err != nil {
			t.Fatalf("build-image: code %d, %v\nstdout %q\nstderr:\n%s", r.code, err, r.stdout, r.stderr)
		}
		var out []string
		for _, x := range list {
			if !strings.HasPrefix(x.Image, reg.Host+"/all/base-"+x.Category+"@sha256:") && !strings.Contains(x.Image, "/base-"+x.Category+"@sha256:") {
				t.Errorf("image %s of %s", x.Image, x.Category)
			}
			out = append(out, x.Category)
		}
		return out
	}
	if got := cats(e.run("build-image", "--repo", reg.Host+"/all", "--base", base.String(), "--json")); strings.Join(got, ",") != "cpu,gpu,tpu" {
		t.Errorf("no --category built %v, want all three", got)
	}
	if got := cats(e.run("build-image", "--repo", reg.Host+"/two", "--category", "tpu,cpu", "--base", base.String(), "--json")); strings.Join(got, ",") != "cpu,tpu" {
		t.Errorf("--category tpu,cpu built %v", got)
	}
	if got := cats(e.run("build-image", "--repo", reg.Host+"/rep", "--category", "gpu", "--category", "cpu", "--base", base.String(), "--json")); strings.Join(got, ",") != "cpu,gpu" {
		t.Errorf("--category gpu --category cpu built %v", got)
	}
	if r := e.run("build-image", "--repo", reg.Host+"/bad", "--category", "fpga"); r.code == 0 || !strings.Contains(r.stderr, `--category "fpga"`) {
		t.Errorf("a bad category: code %d\n%s", r.code, r.stderr)
	}
	if r := e.run("build-image", "--repo", reg.Host+"/creds", "--category", "cpu", "--base", base.String(), "--configure-docker"); r.code == 0 || !strings.Contains(r.stderr, "not Artifact Registry") {
		t.Errorf("--configure-docker for a local registry: code %d\n%s", r.code, r.stderr)
	}
	// --update-credentials has the reference's meaning: enter the credentials again (a
	// docker/podman login on a terminal); without one it says what to run, builds nothing.
	if r := e.run("build-image", "--repo", reg.Host+"/creds", "--category", "cpu", "--base", base.String(), "--update-credentials", "-y"); r.code == 0 || !strings.Contains(r.stderr, "docker login "+reg.Host) || strings.Contains(r.stdout, "base-cpu") {
		t.Errorf("--update-credentials without a terminal: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := e.run("build-image", "--repo", reg.Host+"/df", "--category", "cpu", "--dockerfile", filepath.Join(e.dir, "no-such-Dockerfile")); r.code == 0 || !strings.Contains(r.stderr, "no such file") {
		t.Errorf("a missing Dockerfile: code %d\n%s", r.code, r.stderr)
	}

	// --dockerfile: the user's image (built by podman) is what the base starts from.
	df := filepath.Join(t.TempDir(), "Dockerfile")
	os.WriteFile(df, []byte("FROM "+base.String()+"\nRUN echo from-the-dockerfile > /kinetic-dockerfile-marker\n"), 0o644)
	r := e.run("build-image", "--repo", reg.Host+"/df", "--category", "cpu", "--dockerfile", df, "--json")
	var built []struct{ Image, Base string }
	if err := json.Unmarshal([]byte(r.stdout), &built); r.code != 0 || err != nil || len(built) != 1 || !strings.Contains(built[0].Base, reg.Host+"/df/base-dockerfile@sha256:") {
		t.Fatalf("--dockerfile: code %d, %v\nstdout %q\nstderr:\n%s", r.code, err, r.stdout, r.stderr)
	}
	if !imagetest.HasFile(t, built[0].Image, "kinetic-dockerfile-marker") {
		t.Errorf("%s does not hold the Dockerfile's file", built[0].Image)
	}

	// On a terminal: --repo asked for, the plan confirmed.
	envs := append(append([]string{}, pm.Env...), "KINETIC_HOME="+filepath.Join(e.home, "data"), "KINETIC_PROFILES_FILE="+filepath.Join(e.home, "profiles.json"), "HOME="+e.home, "PATH="+os.Getenv("PATH"))
	for _, answer := range []string{"n", "y"} {
		tm := tmuxtest.Start(t, e.dir, envs, e.bin, "build-image", "--category", "tpu", "--base", base.String())
		tm.WaitFor("repository to publish to", 30*time.Second)
		tm.Type(reg.Host + "/asked")
		s := tm.WaitFor("build and push? [y/N]", 30*time.Second)
		if !strings.Contains(s, reg.Host+"/asked/base-tpu:") {
			t.Errorf("the plan does not name the image:\n%s", s)
		}
		tm.Type(answer)
		code := tm.Exit(3 * time.Minute)
		pushed := imagetest.HasTag(t, reg.Host+"/asked/base-tpu")
		if answer == "n" && (code == 0 || pushed || !strings.Contains(tm.Screen(), "nothing built")) {
			t.Errorf("answered n: exit %d, pushed %v\n%s", code, pushed, tm.Screen())
		}
		if answer == "y" && (code != 0 || !pushed) {
			t.Errorf("answered y: exit %d, pushed %v\n%s", code, pushed, tm.Screen())
		}
	}
}
