package plan

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/deps"
	"github.com/kinetic-run/kinetic/errs"
	"github.com/kinetic-run/kinetic/image"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/version"
)

// imageStep validates container_image and, when the job will run in a container (a
// backend that runs containers, or the local backend with container isolation),
// resolves the image: bundled images are looked up and built if missing, and, for a
// backend whose pods start a runner image, get that runner added (AddRunner), as does a
// custom image in the registry of image_registry; the spec records the reference
// (Spec.Image) for the backend.
func imageStep(ctx context.Context, env Env, req *Request, p *Job) error {
	choice, err := image.ParseChoice(req.ContainerImage)
	if err != nil {
		return err
	}
	if inContainer, err := p.inContainer(env, req, choice); err != nil || !inContainer {
		return err
	}
	c := &imagePlan{env: env, req: req, p: p, choice: choice, category: p.acc.Category(), s: ImageSettings(p.Cfg)}
	p.Spec.ImageMode = string(choice.Mode)
	c.py = clientPython(env, req)
	if choice.Mode == image.Custom {
		return c.custom(ctx)
	}
	if err := image.CheckPython(c.py); err != nil {
		return err
	}
	c.s.Python = c.py
	if choice.Mode == image.Prebuilt {
		return c.prebuilt(ctx)
	}
	return c.bundled(ctx)
}

// inContainer says whether the job runs in a container: always on a backend that runs
// containers; on this machine only with a container engine, which it puts in the spec.
func (p *Job) inContainer(env Env, req *Request, choice image.Choice) (bool, error) {
	be := p.Cfg.Get(config.Backend)
	if be == "" {
		be = config.DefaultBackend()
	}
	if !backend.SharesFiles(be) {
		return true, nil
	}
	engine, err := ContainerEngine(p.Cfg.Get(config.Container), p.Cfg.Source(config.Container))
	if err != nil {
		return false, err
	}
	if engine == "" {
		if choice.Mode != image.Bundled {
			env.NoticeOnce(fmt.Sprintf("kinetic: container_image=%q is used by backends that run containers; the %s backend runs this job in a local Python environment (set container=auto to run it with podman or docker)\n", req.ContainerImage, be))
		}
		return false, nil
	}
	p.Spec.Container = engine
	return true, nil
}

// imagePlan is the image of a job that runs in a container, being chosen: one method
// per mode of image.Choice.
type imagePlan struct {
	env      Env
	req      *Request
	p        *Job
	choice   image.Choice
	category string
	s        image.Settings
	py       string // the client's Python minor version
	key      string // a bundled image's environment key (deps.EnvKey)
}

// custom uses the user's image.
func (c *imagePlan) custom(ctx context.Context) error {
	p, ref := c.p, c.choice.Ref
	p.Spec.Image, p.Spec.ContainerImage = ref.Name(), c.req.ContainerImage
	if c.req.Kind == job.KindPickle {
		customPythonWarning(ctx, c.env, ref, c.py)
	}
	if into, ok := c.s.RunnerRepository(ref); ok && !p.filesShared {
		// The user's image in Kinetic's registry: the runner goes into a copy of its
		// manifest in Kinetic's repository (its layers mounted, not copied). An image
		// elsewhere is used as is, and its pods copy the runner in.
		if p.addRunner(ctx, c.env, ref, into) {
			p.ContainerImage = c.req.ContainerImage
		}
	}
	return nil
}

// prebuilt uses the published base of the job's category and Python, which must exist;
// the requirements are installed when the job starts.
func (c *imagePlan) prebuilt(ctx context.Context) error {
	ref, err := c.s.PrebuiltRef(c.category)
	if err != nil {
		return err
	}
	_, ok, err := (&image.Client{}).Lookup(ctx, ref)
	if err != nil {
		return withCode(errs.Unavailable, fmt.Errorf("prebuilt image %s: the registry could not be asked whether it exists: %w", ref, err))
	}
	if !ok {
		return errs.Errorf(errs.FailedPrecondition, "prebuilt image %s does not exist: publish it with `kinetic build-image --repo %s --category %s --python %s` (prebuilt bases are per Python version; this client runs Python %s)", ref, c.s.BaseImageRepo, c.category, c.py, c.py)
	}
	c.p.Spec.Image = ref.Name()
	c.p.Spec.InstallAtStart = len(c.p.Spec.Requirements) > 0
	return nil
}

// bundled looks up, or builds, the image of the job's requirements and runtime, keyed by
// both, and has the runner added to it.
func (c *imagePlan) bundled(ctx context.Context) error {
	p := c.p
	req, err := c.buildRequest()
	if err != nil {
		return err
	}
	res, err := c.env.EnsureImage(ctx, p.Cfg, req)
	if err != nil {
		return err
	}
	p.Spec.Image = res.Ref.Name()
	p.Spec.EnvKey = c.key
	if d, ok := res.Ref.(name.Digest); ok && !p.filesShared {
		// An image Kinetic built: the runner goes into it (a manifest over the same
		// layers), so the backend's pods start it without copying it in.
		p.addRunner(ctx, c.env, d, d.Context())
	}
	return nil
}

// buildRequest describes the bundled image. The runtime layer (jax for the hardware,
// keras, cloudpickle) joins the user's filtered requirements: one resolution, and part
// of the key.
func (c *imagePlan) buildRequest() (*image.BuildRequest, error) {
	p, py, category := c.p, c.py, c.category
	base, err := c.s.Base(category)
	if err != nil {
		return nil, err
	}
	reqs, err := withRuntime(p, p.Reqs, category)
	if err != nil {
		return nil, err
	}
	key := deps.EnvKey(reqs, image.KeyBase(base.Name(), py), category, version.Version)
	c.key = key
	target, err := c.s.BundledRef(key)
	if err != nil {
		return nil, err
	}
	dir := ""
	if p.Spec.RequirementsSource != "" {
		dir = filepath.Dir(p.Spec.RequirementsSource)
	}
	return &image.BuildRequest{
		Base: base, Target: target, Requirements: reqs.Lines(), Constraints: reqs.ConstraintLines(), Dir: dir,
		Python: py, BaseSetting: c.s.BaseSetting(category), Runtime: runtimeProjects(p, category),
		Labels: map[string]string{image.LabelEnvKey: key, image.LabelVersion: version.Version, image.LabelCategory: category, image.LabelPython: py},
	}, nil
}

// clientPython is the Python minor version of the client that made the call: the one it
// sent, else that of its interpreter or of the python3 on PATH (an older client, or
// `kinetic run` without the SDK), else image.DefaultPython.
func clientPython(env Env, req *Request) string {
	if req.PythonVersion != "" {
		return req.PythonVersion
	}
	if v := env.PythonVersion(req.Python); v != "" {
		return v
	}
	return image.DefaultPython
}

// customPythonWarning warns, once per image and session, when a custom image's
// configuration names another Python than the client's (a pickled function may not load
// there). Nothing is said when the configuration does not say: its layers are not read.
func customPythonWarning(ctx context.Context, env Env, ref name.Reference, client string) {
	got := env.ImagePython(ctx, ref)
	if got == "" || got == client {
		return
	}
	env.NoticeOnce(fmt.Sprintf("kinetic: warning: container_image %s has Python %s, but this client runs Python %s: a function pickled here may fail to load there; use an image with Python %s (or run the client on Python %s)\n", ref, got, client, client, got))
}

// addRunner has the runner the backend's pods start put into img, pushed into into
// (Env.AddRunner), and the job run in the result; when it cannot, the job runs in
// Spec.Image as planned and its pods copy the runner in.
func (p *Job) addRunner(ctx context.Context, env Env, img name.Reference, into name.Repository) bool {
	w, ok := env.AddRunner(ctx, p.where, p.Store, img, into)
	if ok {
		p.Spec.Image, p.RunnerInImage = w.Image.Name(), w.Runner.Name()
	}
	return ok
}

// ImageSettings are the image settings of a resolved configuration.
func ImageSettings(cfg *config.Resolved) image.Settings {
	return image.Settings{
		Registry:      cfg.Get(config.ImageRegistry),
		BaseImageRepo: cfg.Get(config.BaseImageRepo),
		Bases:         map[string]string{"cpu": cfg.Get(config.BaseImageCPU), "gpu": cfg.Get(config.BaseImageGPU), "tpu": cfg.Get(config.BaseImageTPU)},
		Version:       version.Version,
	}
}

// ContainerEngine resolves the container setting to an engine command ("" = none).
func ContainerEngine(setting, source string) (string, error) {
	switch setting {
	case "", "none":
		return "", nil
	case "auto":
		for _, c := range []string{"podman", "docker"} {
			if _, err := exec.LookPath(c); err == nil {
				return c, nil
			}
		}
		return "", nil // no engine: the virtualenv path stays the default
	default:
		if _, err := exec.LookPath(setting); err != nil {
			return "", errs.Errorf(errs.FailedPrecondition, "container=%s (from %s) but %s is not installed: install it, or set container=auto or none", setting, source, setting)
		}
		return setting, nil
	}
}
