package plan

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"

	"github.com/kinetic-run/kinetic/backend/kubernetes"
	_ "github.com/kinetic-run/kinetic/backend/local" // registers "local"
	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/errs"
	"github.com/kinetic-run/kinetic/image"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/testkit/kubeconfigtest"
)

func TestSettings(t *testing.T) {
	req := pickleRequest()
	req.Config = map[config.Key]string{config.OutputDir: "/out"}
	p, err := upTo(t, newEnv(t, nil), req, "settings")
	if err != nil {
		t.Fatal(err)
	}
	if p.Cfg.Get(config.OutputDir) != "/out" || p.Cfg.Get(config.Store) != "mem://" {
		t.Errorf("output_dir %q, store %q: want the call's argument over the engine's", p.Cfg.Get(config.OutputDir), p.Cfg.Get(config.Store))
	}
	if !job.ValidName(p.id) || p.Spec.JobID != p.id || p.Spec.Kind != job.KindPickle {
		t.Errorf("id %q, spec %+v", p.id, p.Spec)
	}
}

// TestUnconfiguredAccelerator: a GPU or TPU job with nothing configured is refused with
// the fixes named (kinetic up, KINETIC_PROJECT, the local backend chosen explicitly),
// never run on the CPU here; CPU jobs and an explicit local backend run (issue 44).
func TestUnconfiguredAccelerator(t *testing.T) {
	for _, c := range []struct {
		name string
		args map[config.Key]string
		acc  string
		err  bool
	}{
		{"gpu, nothing configured", nil, "l4", true},
		{"tpu, nothing configured", nil, "tpu-v5litepod-1", true},
		{"multi-host tpu, nothing configured", nil, "tpu-v6e-16", true},
		{"cpu, nothing configured", nil, "cpu", false},
		{"gpu, local chosen", map[config.Key]string{config.Backend: "local"}, "l4", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			req := pickleRequest()
			req.Accelerator = c.acc
			_, err := upTo(t, newEnv(t, c.args), req, "placement")
			if !c.err {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted: the job would run on this machine's CPU")
			}
			for _, w := range []string{"kinetic up --accelerator", "KINETIC_PROJECT", "--backend local", `backend="local"`} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%v lacks %q", err, w)
				}
			}
			if errs.CodeOf(err) != errs.InvalidArgument {
				t.Errorf("code %v, want InvalidArgument", errs.CodeOf(err))
			}
		})
	}
}

// TestGKEProjectFirst: the gke backend without a project is refused for that, before
// the image step would ask for a registry (issue 46: the fundamental thing first).
func TestGKEProjectFirst(t *testing.T) {
	_, err := Make(context.Background(), newEnv(t, map[config.Key]string{config.Backend: "gke"}), pickleRequest())
	if err == nil || !strings.Contains(err.Error(), "needs a Google Cloud project") || strings.Contains(err.Error(), "registry") {
		t.Fatalf("gke without a project: %v", err)
	}
}

func TestAccelerator(t *testing.T) {
	for _, c := range []struct{ name, want, err string }{
		{"", "cpu", ""},
		{"l4", "gpu-l4", ""},
		{"tpu-v9000", "", "tpu-v9000"},
	} {
		req := pickleRequest()
		req.Accelerator, req.Spot = c.name, c.name == "l4"
		p, err := upTo(t, newEnv(t, nil), req, "accelerator")
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: %v, want an error naming %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil || !strings.HasPrefix(p.Spec.Accelerator, c.want) || p.Spec.Spot != req.Spot {
			t.Errorf("%q: %+v %v, want %s (spot %v)", c.name, p.acc, err, c.want, req.Spot)
		}
	}
}

func TestPlacement(t *testing.T) {
	env := newEnv(t, map[config.Key]string{config.Backend: "local"})
	req := pickleRequest()
	req.Accelerator = "l4"
	p, err := upTo(t, env, req, "placement")
	if err != nil {
		t.Fatal(err)
	}
	if !p.filesShared || p.InContainer || p.where.Backend != "local" {
		t.Errorf("filesShared %v, in a container %v, backend %q: want this machine, no container", p.filesShared, p.InContainer, p.where.Backend)
	}
	if len(env.notices) != 1 || !strings.Contains(env.notices[0], "CPU") {
		t.Errorf("notices %q: want one saying a GPU job runs on the CPU here", env.notices)
	}
	req = pickleRequest()
	req.Python = filepath.Join(t.TempDir(), "no-python")
	if _, err := upTo(t, newEnv(t, nil), req, "placement"); err == nil || !strings.Contains(err.Error(), "is not an executable file") {
		t.Errorf("a missing interpreter: %v", err)
	}
	p, err = upTo(t, newEnv(t, map[config.Key]string{config.Container: "none"}), pickleRequest(), "placement")
	if err != nil || p.Spec.Python != "" {
		t.Errorf("no python asked, none on PATH: %q %v", p.Spec.Python, err)
	}
}

func TestCall(t *testing.T) {
	for name, c := range map[string]struct {
		mod  func(*Request)
		want string
	}{
		"empty payload":      {func(r *Request) { r.Payload = nil }, "empty payload"},
		"no entry":           {func(r *Request) { r.Kind = job.KindEntry }, "FILE.py::FUNC"},
		"no command":         {func(r *Request) { r.Kind = job.KindCommand }, "no command"},
		"not UTF-8":          {func(r *Request) { r.Kind, r.Command = job.KindCommand, []string{"a\xff"} }, "not valid UTF-8"},
		"unknown kind":       {func(r *Request) { r.Kind = "shell" }, "unknown job kind"},
		"negative timeout":   {func(r *Request) { r.Timeout = -time.Second }, "negative"},
		"no such directory":  {func(r *Request) { r.Cwd = "/no/such/dir" }, "cannot be read"},
		"debug of a command": {func(r *Request) { r.Kind, r.Command, r.Debug = job.KindCommand, []string{"true"}, true }, "needs a Python function"},
		"wait, no debug":     {func(r *Request) { r.DebugWait = 5 }, "debug_wait is set but debug is not"},
		"wait too short":     {func(r *Request) { r.Debug, r.DebugWait = true, 0.2 }, "debug_wait 0.2"},
		"wait over a week":   {func(r *Request) { r.Debug, r.DebugWait = true, 8*24*3600 }, "a week"},
	} {
		t.Run(name, func(t *testing.T) {
			r := pickleRequest()
			c.mod(r)
			if _, err := upTo(t, newEnv(t, nil), r, "call"); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("call = %v, want %q", err, c.want)
			}
		})
	}
	r := pickleRequest()
	r.Debug, r.Timeout = true, 1500*time.Millisecond
	p, err := upTo(t, newEnv(t, nil), r, "call")
	if err != nil || p.Spec.Debug == nil || p.Spec.Debug.WaitSeconds != 600 || p.Spec.TimeoutSeconds != 2 {
		t.Fatalf("debug %+v, timeout %d, %v: want the default wait and the time limit rounded up", p.Spec.Debug, p.Spec.TimeoutSeconds, err)
	}
}

func TestEnvironmentCapture(t *testing.T) {
	env := newEnv(t, nil)
	r := pickleRequest()
	r.CaptureEnv = []string{"APP_*", "HF_TOKEN"}
	r.Environ = map[string]string{"APP_B": "2", "APP_A": "1", "HF_TOKEN": "s", "OTHER": "x"}
	p, err := upTo(t, env, r, "environment capture")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(p.Spec.EnvNames, ",") != "APP_A,APP_B,HF_TOKEN" || p.Env["HF_TOKEN"] != "s" || len(p.Env) != 3 {
		t.Errorf("names %v, values %v", p.Spec.EnvNames, p.Env)
	}
	if len(env.warnings) != 1 || !strings.Contains(env.warnings[0], "HF_TOKEN") {
		t.Errorf("warnings %q: want one naming the secret", env.warnings)
	}
	// The reference's blocklist: a wildcard never takes TEMP, TMP or KERAS_BACKEND, says
	// which it skipped, and an exact name still takes one.
	env = newEnv(t, nil)
	r.CaptureEnv = []string{"*", "TMP"}
	r.Environ = map[string]string{"TEMP": "/t", "TMP": "/t", "KERAS_BACKEND": "torch", "LD_PRELOAD": "x.so", "APP": "1"}
	if p, err = upTo(t, env, r, "environment capture"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"APP": "1", "TMP": "/t"}, p.Env); diff != "" {
		t.Errorf("captured (-want +got):\n%s", diff)
	}
	if len(env.warnings) != 1 || !strings.Contains(env.warnings[0], "KERAS_BACKEND, LD_PRELOAD, TEMP") || strings.Contains(env.warnings[0], "TMP,") {
		t.Errorf("warnings %q: want one naming the skipped KERAS_BACKEND, LD_PRELOAD, TEMP", env.warnings)
	}
	r.CaptureEnv = []string{"BAD-NAME"}
	if _, err := upTo(t, newEnv(t, nil), r, "environment capture"); err == nil || !strings.Contains(err.Error(), "BAD-NAME") {
		t.Errorf("a bad pattern: %v", err)
	}
}

func TestData(t *testing.T) {
	r := pickleRequest()
	r.Data = []DataArg{{Path: "gs://bucket/x"}, {Path: "gs://bucket/y", Mount: "relative"}}
	if _, err := upTo(t, newEnv(t, nil), r, "data"); err == nil || !strings.Contains(err.Error(), "must be an absolute path") {
		t.Errorf("a relative mount: %v", err)
	}
	r.Data = r.Data[:1]
	p, err := upTo(t, newEnv(t, nil), r, "data")
	if err != nil || len(p.Spec.Data) != 1 {
		t.Errorf("data %+v, %v", p.Spec.Data, err)
	}
}

func TestTree(t *testing.T) {
	r := pickleRequest()
	r.Kind, r.Entry = job.KindEntry, &job.Entry{File: "main.py", Func: "f"}
	if _, err := upTo(t, newEnv(t, nil), r, "tree"); err == nil || !strings.Contains(err.Error(), "needs its working directory") {
		t.Errorf("an entry without its tree: %v", err)
	}
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "pyproject.toml"), []byte("[project]\nname='x'\n"), 0o644)
	os.WriteFile(filepath.Join(root, "main.py"), []byte("def f(): pass\n"), 0o644)
	r = pickleRequest()
	r.Kind, r.Entry, r.NoWorkdir, r.Cwd = job.KindEntry, &job.Entry{File: "main.py", Func: "f"}, false, root
	p, err := upTo(t, newEnv(t, map[config.Key]string{config.PackageRoot: root}), r, "tree")
	if err != nil {
		t.Fatal(err)
	}
	if p.Root != root || p.Manifest == nil || p.Spec.Entry == nil || p.Spec.Entry.File != "main.py" || p.Spec.Cwd != "." {
		t.Errorf("root %q, manifest %v, entry %+v, cwd %q", p.Root, p.Manifest != nil, p.Spec.Entry, p.Spec.Cwd)
	}
}

func TestDependencies(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "requirements.txt"), []byte("numpy\njax\n"), 0o644)
	env := newEnv(t, map[config.Key]string{config.PackageRoot: root})
	r := pickleRequest()
	r.NoWorkdir, r.Cwd = false, root
	p, err := upTo(t, env, r, "dependencies")
	if err != nil {
		t.Fatal(err)
	}
	// The local virtualenv gets the CPU runtime layer after the user's lines.
	want := append([]string{"numpy"}, image.MustRuntimeRequirements("cpu")...)
	if d := cmp.Diff(want, p.Spec.Requirements); d != "" || p.Spec.EnvKey == "" {
		t.Errorf("requirements (-want +got):\n%s\nenv key %q: want jax dropped, the runtime added and a key", d, p.Spec.EnvKey)
	}
	none, err := upTo(t, newEnv(t, map[config.Key]string{config.PackageRoot: root, config.RuntimeLayer: "none"}), r, "dependencies")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(none.Spec.Requirements, ",") != "numpy" || none.Spec.EnvKey == p.Spec.EnvKey {
		t.Errorf("runtime_layer=none: requirements %v, key %s (with the runtime: %s)", none.Spec.Requirements, none.Spec.EnvKey, p.Spec.EnvKey)
	}
	if n := strings.Join(env.notices, ""); !strings.Contains(n, "requirements.txt:2: jax") || !strings.Contains(n, "the job's environment gets Kinetic's pinned jax") {
		t.Errorf("notices %q: want one naming the dropped jax and what replaces it", env.notices)
	}
	r = pickleRequest() // no tree: nothing to discover
	if p, err := upTo(t, newEnv(t, nil), r, "dependencies"); err != nil || p.Spec.EnvKey != "" {
		t.Errorf("without a tree: key %q, %v", p.Spec.EnvKey, err)
	}
}

// TestImageRunnerInImage: a bundled image of a job on a cluster backend gets the runner
// its pods start added (AddRunner), and the spec and the handle record the image with
// it and the runner (runner_in_image); when it cannot be added, or for an image Kinetic
// did not build, the image is the one planned and the handle records no runner.
func TestImageRunnerInImage(t *testing.T) {
	const built = "registry.example/team/kinetic-env@sha256:1111111111111111111111111111111111111111111111111111111111111111"
	const withIt = "registry.example/team/kinetic-env@sha256:2222222222222222222222222222222222222222222222222222222222222222"
	const runner = "registry.example/team/kinetic-runner@sha256:3333333333333333333333333333333333333333333333333333333333333333"
	digest := func(s string) name.Digest {
		d, err := name.NewDigest(s)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	newClusterEnv := func(add bool) *testEnv {
		env := newEnv(t, map[config.Key]string{config.Backend: kubernetes.K8sName, config.ImageRegistry: "registry.example/team", kubernetes.KeyKubeconfig: kubeconfigtest.Write(t)})
		env.ensure = func(req *image.BuildRequest) (image.Result, error) {
			return image.Result{Ref: digest(built), Cached: true}, nil
		}
		if add {
			env.addRunner = func(where *job.Handle, img name.Reference, into name.Repository) (image.WithRunner, bool) {
				if where.Backend != kubernetes.K8sName || img.String() != built || into != digest(built).Context() {
					t.Errorf("AddRunner(%s, %s, %s): want the k8s backend and the built image, into its repository", where.Backend, img, into)
				}
				return image.WithRunner{Image: digest(withIt), Runner: digest(runner)}, true
			}
		}
		return env
	}
	env := newClusterEnv(true)
	p, err := upTo(t, env, pickleRequest(), "handle")
	if err != nil {
		t.Fatal(err)
	}
	if p.Spec.Image != withIt || p.Handle.ImageURI != withIt || p.Handle.RunnerInImage != runner || p.Spec.EnvKey == "" || len(env.added) != 1 {
		t.Errorf("runner added: spec image %s, handle image %s, runner_in_image %q, env key %q, asked %v", p.Spec.Image, p.Handle.ImageURI, p.Handle.RunnerInImage, p.Spec.EnvKey, env.added)
	}
	env = newClusterEnv(false)
	if p, err = upTo(t, env, pickleRequest(), "handle"); err != nil {
		t.Fatal(err)
	}
	if p.Spec.Image != built || p.Handle.ImageURI != built || p.Handle.RunnerInImage != "" || len(env.added) != 1 {
		t.Errorf("runner not added: spec image %s, handle image %s, runner_in_image %q, asked %v", p.Spec.Image, p.Handle.ImageURI, p.Handle.RunnerInImage, env.added)
	}
}

// TestImageRunnerInCustomImage: a custom image in the registry of image_registry, of a
// job on a cluster backend, gets the runner added into Kinetic's repository there
// (AddRunner), and the spec and the handle record the image with it and the runner;
// when it cannot be added the user's image is run as given; an image in another
// registry is not asked for (its pods copy the runner in), nor is one on the local
// backend.
func TestImageRunnerInCustomImage(t *testing.T) {
	const withIt = "registry.example/team/kinetic-env@sha256:2222222222222222222222222222222222222222222222222222222222222222"
	const runner = "registry.example/team/kinetic-runner@sha256:3333333333333333333333333333333333333333333333333333333333333333"
	const mine = "registry.example/alice/model:1"
	clusterEnv := func(add bool) *testEnv {
		env := newEnv(t, map[config.Key]string{config.Backend: kubernetes.K8sName, config.ImageRegistry: "registry.example/team", kubernetes.KeyKubeconfig: kubeconfigtest.Write(t)})
		if add {
			env.addRunner = func(*job.Handle, name.Reference, name.Repository) (image.WithRunner, bool) {
				return image.WithRunner{Image: name.MustParseReference(withIt).(name.Digest), Runner: name.MustParseReference(runner).(name.Digest)}, true
			}
		}
		return env
	}
	for _, tc := range []struct {
		name, image string
		env         *testEnv
		want        string // the image the job runs in
		runner      string // runner_in_image
		asked       string // what AddRunner was asked, "" for nothing
	}{
		{"in image_registry's registry", mine, clusterEnv(true), withIt, runner, mine + " into registry.example/team/kinetic-env"},
		{"by digest", "registry.example/alice/model@sha256:" + strings.Repeat("4", 64), clusterEnv(true), withIt, runner,
			"registry.example/alice/model@sha256:" + strings.Repeat("4", 64) + " into registry.example/team/kinetic-env"},
		{"cannot be added", mine, clusterEnv(false), mine, "", mine + " into registry.example/team/kinetic-env"},
		{"another registry", "docker.io/library/python:3.11", clusterEnv(true), "index.docker.io/library/python:3.11", "", ""},
		{"Docker Hub by short name", "python:3.11", clusterEnv(true), "index.docker.io/library/python:3.11", "", ""},
		{"no image_registry", mine, func() *testEnv {
			e := clusterEnv(true)
			delete(e.args, config.ImageRegistry)
			return e
		}(), mine, "", ""},
		{"the local backend", mine, func() *testEnv {
			e := clusterEnv(true)
			e.args[config.Backend], e.args[config.Container] = "local", "podman"
			return e
		}(), mine, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env.args[config.Container] == "podman" {
				if _, err := exec.LookPath("podman"); err != nil {
					t.Skip("no podman")
				}
			}
			r := pickleRequest()
			r.ContainerImage = tc.image
			p, err := upTo(t, tc.env, r, "handle")
			if err != nil {
				t.Fatal(err)
			}
			if p.Spec.Image != tc.want || p.Handle.ImageURI != tc.want || p.Handle.RunnerInImage != tc.runner || p.Spec.ImageMode != "custom" {
				t.Errorf("spec image %s (%s), handle image %s, runner_in_image %q: want %s, %q", p.Spec.Image, p.Spec.ImageMode, p.Handle.ImageURI, p.Handle.RunnerInImage, tc.want, tc.runner)
			}
			if got := strings.Join(tc.env.added, "; "); got != tc.asked {
				t.Errorf("AddRunner asked %q, want %q", got, tc.asked)
			}
			// The user's name for the image stays on the handle when it runs in a copy.
			if want := map[bool]string{true: tc.image}[tc.runner != ""]; p.Handle.ContainerImage != want {
				t.Errorf("handle container_image %q, want %q", p.Handle.ContainerImage, want)
			}
		})
	}
}

func TestImage(t *testing.T) {
	env := newEnv(t, map[config.Key]string{config.Container: "none"})
	r := pickleRequest()
	r.ContainerImage = "registry.example/team/python:3.11"
	p, err := upTo(t, env, r, "image")
	if err != nil || p.Spec.Image != "" || p.Spec.Container != "" {
		t.Fatalf("image %q, container %q, %v: want none on this machine", p.Spec.Image, p.Spec.Container, err)
	}
	if len(env.notices) != 1 || !strings.Contains(env.notices[0], "container_image") {
		t.Errorf("notices %q: want one saying the image is not used here", env.notices)
	}
	// A bad container_image is refused before the store is opened (placement checks it),
	// so a failed `run --container-image 'BAD IMAGE!'` creates no store.
	r.ContainerImage = "::not an image::"
	bad := newEnv(t, nil)
	if _, err := Make(context.Background(), bad, r); err == nil || !strings.Contains(err.Error(), "::not an image::") || errs.CodeOf(err) != errs.InvalidArgument {
		t.Errorf("a bad container_image: %v (code %v), want an InvalidArgument naming it", err, errs.CodeOf(err))
	}
	if bad.st != nil {
		t.Error("the store was opened before the bad container_image was refused")
	}
}

// TestCallRefusesBadValues: values no job can use are the caller's InvalidArgument,
// found before anything is uploaded (issue 45: output_dir='ftp://...' and a volume at
// /data/../../etc were accepted, a bad capture_env_vars or debug_wait was Internal).
func TestCallRefusesBadValues(t *testing.T) {
	for _, c := range []struct {
		name, step, says string
		change           func(r *Request)
	}{
		{"output_dir ftp", "call", "file://, gs://, s3://", func(r *Request) { r.OutputDir = "ftp://host/out" }},
		{"debug_wait without debug", "call", "debug_wait", func(r *Request) { r.DebugWait = 30 }},
		{"debug_wait too short", "call", "debug_wait", func(r *Request) { r.Debug, r.DebugWait = true, 0.5 }},
		{"negative timeout", "call", "negative", func(r *Request) { r.Timeout = -time.Second }},
		{"capture name", "environment capture", "capture_env_vars", func(r *Request) { r.CaptureEnv = []string{"BAD NAME!"} }},
		{"volume with ..", "data", "'..'", func(r *Request) {
			r.Data = []DataArg{{Path: t.TempDir(), Mount: "/data/../../etc"}}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := pickleRequest()
			c.change(r)
			_, err := upTo(t, newEnv(t, nil), r, c.step)
			if errs.CodeOf(err) != errs.InvalidArgument || !strings.Contains(errs.Message(err), c.says) {
				t.Errorf("%v (code %v), want an InvalidArgument saying %q", err, errs.CodeOf(err), c.says)
			}
		})
	}
	for _, ok := range []string{"", "/tmp/out", "gs://b/out", "s3://b/out", "file:///tmp/out"} {
		r := pickleRequest()
		r.OutputDir = ok
		if _, err := upTo(t, newEnv(t, nil), r, "call"); err != nil {
			t.Errorf("output_dir %q: %v", ok, err)
		}
	}
}

func TestHandle(t *testing.T) {
	r := pickleRequest()
	r.Kind, r.Command, r.Payload, r.FuncName = job.KindCommand, []string{"/usr/bin/env", "true"}, nil, ""
	r.Timeout = time.Minute
	p, err := upTo(t, newEnv(t, nil), r, "handle")
	if err != nil {
		t.Fatal(err)
	}
	h := p.Handle
	if h.FuncName != "env" || h.DisplayName != "env" || h.TimeoutSeconds != "60" || h.JobID != p.Spec.JobID || h.K8sName != h.JobID {
		t.Errorf("handle %+v", h)
	}
	if h.OutputDir != DefaultOutputDir(p.Store, h.JobID) || p.Spec.OutputDir != h.OutputDir {
		t.Errorf("output dir %q (spec %q), want the default", h.OutputDir, p.Spec.OutputDir)
	}
}

// TestImageRuntimeLayer: a bundled image is built from the user's filtered requirements
// plus the runtime layer (the user's keras wins, the filtered jax is replaced by ours),
// over the official image of the client's Python, with that Python in the key; a client
// Python outside the supported range is refused; a custom image whose configuration
// names another Python gets one warning.
func TestImageRuntimeLayer(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "requirements.txt"), []byte("keras==3.5.0\njax==0.4.25\nnumpy\n"), 0o644)
	const built = "registry.example/team/kinetic-env@sha256:1111111111111111111111111111111111111111111111111111111111111111"
	plan := func(t *testing.T, python, accelerator string, args map[config.Key]string, last ...string) (*Job, *image.BuildRequest, error) {
		t.Helper()
		a := map[config.Key]string{config.Backend: kubernetes.K8sName, config.ImageRegistry: "registry.example/team", kubernetes.KeyKubeconfig: kubeconfigtest.Write(t), config.PackageRoot: root}
		for k, v := range args {
			a[k] = v
		}
		env := newEnv(t, a)
		var got *image.BuildRequest
		env.ensure = func(req *image.BuildRequest) (image.Result, error) {
			got = req
			return image.Result{Ref: name.MustParseReference(built), Cached: true}, nil
		}
		r := pickleRequest()
		r.NoWorkdir, r.Cwd, r.PythonVersion, r.Accelerator = false, root, python, accelerator
		p, err := upTo(t, env, r, append(last, "handle")[0])
		return p, got, err
	}
	p, req, err := plan(t, "3.12", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"keras==3.5.0", "numpy", "jax==" + image.JaxVersion, "jaxlib==" + image.JaxVersion, "cloudpickle==" + image.CloudpickleVersion}
	if d := cmp.Diff(want, req.Requirements); d != "" {
		t.Errorf("build requirements (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"keras==3.5.0", "numpy"}, p.Spec.Requirements); d != "" {
		t.Errorf("the spec's requirements (installed at start in prebuilt mode) are the user's alone (-want +got):\n%s", d)
	}
	if req.Base.String() != "docker.io/library/python:3.12-slim" || req.Python != "3.12" || req.BaseSetting != "" || req.Labels[image.LabelPython] != "3.12" {
		t.Errorf("base %s, python %q, setting %q, labels %v", req.Base, req.Python, req.BaseSetting, req.Labels)
	}
	if !strings.HasSuffix(req.Target.String(), ":"+p.Spec.EnvKey) {
		t.Errorf("target %s is not tagged with the key %s", req.Target, p.Spec.EnvKey)
	}
	_, tpu, err := plan(t, "3.12", "tpu-v5litepod-4", nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"keras==3.5.0", "numpy", "jax[tpu]==" + image.JaxVersion, "cloudpickle==" + image.CloudpickleVersion}, tpu.Requirements); d != "" {
		t.Errorf("tpu build requirements (-want +got):\n%s", d)
	}
	// runtime_layer=none: the user's lines alone.
	_, none, err := plan(t, "3.12", "", map[config.Key]string{config.RuntimeLayer: "none"})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"keras==3.5.0", "numpy"}, none.Requirements); d != "" || none.Target == req.Target {
		t.Errorf("runtime_layer=none (-want +got):\n%s\ntarget %s", d, none.Target)
	}
	// A configured base: named in the request (for the mismatch error), and the client's
	// Python is in the key all the same.
	cfgd := map[config.Key]string{config.BaseImageCPU: "registry.example/team/py:custom"}
	_, a, err := plan(t, "3.12", "", cfgd)
	if err != nil {
		t.Fatal(err)
	}
	_, b, err := plan(t, "3.13", "", cfgd)
	if err != nil {
		t.Fatal(err)
	}
	if a.BaseSetting != "base_image_cpu" || a.Base.String() != "registry.example/team/py:custom" || a.Target == b.Target {
		t.Errorf("configured base: setting %q, base %s, targets %s and %s (want them to differ by Python)", a.BaseSetting, a.Base, a.Target, b.Target)
	}
	if _, _, err := plan(t, "3.9", "", nil, "image"); err == nil || !strings.Contains(err.Error(), "Python 3.9") || !strings.Contains(err.Error(), "3.10 to 3.13") {
		t.Errorf("Python 3.9: %v", err)
	}

	// A custom image with another Python: one warning naming both.
	env := newEnv(t, map[config.Key]string{config.Backend: kubernetes.K8sName, kubernetes.KeyKubeconfig: kubeconfigtest.Write(t)})
	env.imagePython = "3.11"
	r := pickleRequest()
	r.ContainerImage, r.PythonVersion = "registry.example/alice/model:1", "3.12"
	if _, err := upTo(t, env, r, "handle"); err != nil {
		t.Fatal(err)
	}
	if n := strings.Join(env.notices, ""); !strings.Contains(n, "has Python 3.11, but this client runs Python 3.12") {
		t.Errorf("notices %q: want the Python mismatch named", env.notices)
	}
	env.notices, env.imagePython = nil, "3.12"
	if _, err := upTo(t, env, r, "handle"); err != nil || strings.Contains(strings.Join(env.notices, ""), "Python") {
		t.Errorf("same Python: notices %q, %v", env.notices, err)
	}
}

// TestCaptureLeavesTheRuntimeDefaults: a wildcard does not sweep this machine's
// KERAS_BACKEND or JAX_PLATFORMS over the pod's; an exact name sends it.
func TestCaptureLeavesTheRuntimeDefaults(t *testing.T) {
	environ := map[string]string{"KERAS_BACKEND": "torch", "JAX_PLATFORMS": "cpu", "MY_FLAG": "1"}
	got, err := captureEnv([]string{"*"}, environ, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(map[string]string{"MY_FLAG": "1"}, got); d != "" {
		t.Errorf("wildcard (-want +got):\n%s", d)
	}
	got, err = captureEnv([]string{"KERAS_BACKEND", "JAX_PLATFORMS"}, environ, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(map[string]string{"KERAS_BACKEND": "torch", "JAX_PLATFORMS": "cpu"}, got); d != "" {
		t.Errorf("exact names (-want +got):\n%s", d)
	}
}

// TestDefaultAccelerator: the default accelerator (the SDK's and kinetic run's, a call
// that names none) is the CPU here with nothing configured, said once; with a backend
// chosen it is DefaultAccelerator; the same TPU named on purpose is refused (issue 46).
func TestDefaultAccelerator(t *testing.T) {
	for _, c := range []struct {
		name    string
		args    map[config.Key]string
		named   bool
		want    string
		refused bool
	}{
		{"default, nothing configured", nil, false, "cpu", false},
		{"default, local chosen", map[config.Key]string{config.Backend: "local"}, false, "tpu-v5litepod-1", false},
		{"named, nothing configured", nil, true, "", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			req := pickleRequest()
			req.Accelerator, req.AcceleratorDefault = DefaultAccelerator, !c.named
			env := newEnv(t, c.args)
			p, err := upTo(t, env, req, "placement")
			if c.refused {
				if err == nil || !strings.Contains(err.Error(), "kinetic up --accelerator") {
					t.Fatalf("a TPU named with nothing configured: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.acc.Name != c.want {
				t.Errorf("accelerator %s, want %s", p.acc.Name, c.want)
			}
			said := strings.Join(env.notices, "")
			if cpu := strings.Contains(said, "the job runs on this machine's CPU; the default accelerator, tpu-v5e-1"); cpu != (c.want == "cpu") {
				t.Errorf("notices %q", said)
			}
		})
	}
}
