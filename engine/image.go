package engine

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/deps"
	"github.com/kinetic-run/kinetic/image"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/version"
)

// imageSettings are the image settings of a resolved configuration.
func imageSettings(cfg *config.Resolved) image.Settings {
	return image.Settings{
		Registry:      cfg.Get(config.ImageRegistry),
		BaseImageRepo: cfg.Get(config.BaseImageRepo),
		Bases:         map[string]string{"cpu": cfg.Get(config.BaseImageCPU), "gpu": cfg.Get(config.BaseImageGPU), "tpu": cfg.Get(config.BaseImageTPU)},
		Version:       version.Version,
	}
}

// planImage validates container_image and, when the job will run in a container (a
// backend that runs containers, or the local backend with container isolation), resolves
// the image: bundled images are looked up and built if missing; the spec records the
// reference (Spec.Image) for the backend.
func (e *Engine) planImage(ctx context.Context, p *plan, req *SubmitRequest, reqs *deps.Requirements, category string) error {
	choice, err := image.ParseChoice(req.ContainerImage)
	if err != nil {
		return err
	}
	be := p.cfg.Get(config.Backend)
	if be == "" {
		be = config.DefaultBackend
	}
	if backend.RunsOnThisMachine(be) {
		engine, err := containerEngine(p.cfg.Get(config.Container), p.cfg.Source(config.Container))
		if err != nil {
			return err
		}
		if engine == "" {
			if choice.Mode != image.Bundled {
				e.noticeOnce(fmt.Sprintf("kinetic: container_image=%q is used by backends that run containers; the local backend runs this job in a local Python environment (set container=auto to run it with podman or docker)\n", req.ContainerImage))
			}
			return nil
		}
		p.spec.Container = engine
	}
	s := imageSettings(p.cfg)
	p.spec.ImageMode = string(choice.Mode)
	switch choice.Mode {
	case image.Custom:
		p.spec.Image = choice.Ref.Name()
		return nil
	case image.Prebuilt:
		ref, err := s.PrebuiltRef(category)
		if err != nil {
			return err
		}
		_, ok, err := e.imageClient().Lookup(ctx, ref)
		if err != nil {
			return fmt.Errorf("prebuilt image: %w", err)
		}
		if !ok {
			return fmt.Errorf("prebuilt image %s does not exist: publish it with `kinetic build-image --repo %s --category %s`", ref, s.BaseImageRepo, category)
		}
		p.spec.Image = ref.Name()
		p.spec.InstallAtStart = len(p.spec.Requirements) > 0
		return nil
	}
	base, err := s.Base(category)
	if err != nil {
		return err
	}
	key := deps.EnvKey(reqs, base.Name(), category, version.Version)
	target, err := s.BundledRef(key)
	if err != nil {
		return err
	}
	dir := ""
	if p.spec.RequirementsSource != "" {
		dir = filepath.Dir(p.spec.RequirementsSource)
	}
	res, err := e.ensurer(p.cfg).Ensure(ctx, &image.BuildRequest{
		Base: base, Target: target, Requirements: p.spec.Requirements, Constraints: p.spec.Constraints,
		Dir: dir, Progress: e.Notice,
		Labels: map[string]string{image.LabelEnvKey: key, image.LabelVersion: version.Version, image.LabelCategory: category},
	})
	if err != nil {
		return err
	}
	p.spec.Image = res.Ref.Name()
	p.spec.EnvKey = key
	return nil
}

// containerEngine resolves the container setting to an engine command ("" = none).
func containerEngine(setting, source string) (string, error) {
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
			return "", fmt.Errorf("container=%s (from %s) but %s is not installed: install it, or set container=auto or none", setting, source, setting)
		}
		return setting, nil
	}
}

func (e *Engine) imageClient() *image.Client { return &image.Client{} }

// ensurer returns the engine's Ensurer for the configured builder: one per builder, so
// concurrent submissions in this process share one singleflight group.
func (e *Engine) ensurer(cfg *config.Resolved) *image.Ensurer {
	kind := cfg.Get(config.ImageBuilder)
	e.mu.Lock()
	defer e.mu.Unlock()
	if en, ok := e.ensurers[kind]; ok {
		return en
	}
	c := e.imageClient()
	layers := filepath.Join(config.DataDir(), "cache", "image", "layers")
	py := cfg.Get(config.BuildPython)
	en := &image.Ensurer{Client: c, LockDir: filepath.Join(config.DataDir(), "cache", "image", "locks")}
	switch kind {
	case "", "auto":
		en.Builder = &image.Daemonless{Client: c, CacheDir: layers, Python: py}
		if eng := image.DetectEngine(); eng != "" {
			en.Fallback = &image.EngineBuilder{Command: eng}
		}
	case "daemonless":
		en.Builder = &image.Daemonless{Client: c, CacheDir: layers, Python: py}
	case "podman", "docker":
		en.Builder = &image.EngineBuilder{Command: kind}
	case "cloudbuild":
		en.Builder = &image.CloudBuild{Project: cfg.Get(config.Project)}
	}
	if e.ensurers == nil {
		e.ensurers = map[string]*image.Ensurer{}
	}
	e.ensurers[kind] = en
	return en
}

// copyImage gives a batch child the image planned for the batch.
func copyImage(dst, src *job.Spec) {
	dst.Image, dst.ImageMode, dst.InstallAtStart, dst.Container = src.Image, src.ImageMode, src.InstallAtStart, src.Container
}

// BuildImageRequest publishes a prebuilt base (`kinetic build-image`).
type BuildImageRequest struct {
	Repo     string // repository the base goes to (REPO/base-CATEGORY:TAG)
	Category string // cpu, gpu or tpu
	Tag      string // default: this version
	Base     string // the image it starts from (default: the category's bundled base)
}

// BuildImageResult is what was published.
type BuildImageResult struct {
	Image    string  `json:"image"` // by digest
	Tag      string  `json:"tag"`
	Category string  `json:"category"`
	Base     string  `json:"base"`
	Builder  string  `json:"builder"`
	Seconds  float64 `json:"seconds"`
}

// BaseFromDockerfile builds the user's Dockerfile with podman or docker (the daemonless
// builder runs no Dockerfile) and pushes it as REPO/base-dockerfile:TAG, by digest: the
// image `kinetic build-image --dockerfile` then builds each category's base from.
func (e *Engine) BaseFromDockerfile(ctx context.Context, repoName, tag, dockerfile string) (string, error) {
	abs, err := filepath.Abs(dockerfile)
	if err != nil {
		return "", err
	}
	if fi, err := os.Stat(abs); err != nil || !fi.Mode().IsRegular() {
		return "", fmt.Errorf("--dockerfile %s: no such file; give the path of a Dockerfile (its directory is the build context)", dockerfile)
	}
	repo, err := image.ParseRepository(repoName)
	if err != nil {
		return "", fmt.Errorf("--repo: %w", err)
	}
	eng := e.cfg.Get(config.ImageBuilder)
	if eng != "podman" && eng != "docker" {
		eng = image.DetectEngine()
	}
	if eng == "" {
		return "", fmt.Errorf("--dockerfile %s: building a Dockerfile needs podman or docker on this machine (the daemonless builder does not run Dockerfiles); install one, or build and push the image yourself and pass it as --base", dockerfile)
	}
	if tag == "" {
		tag = version.Version
	}
	target, err := image.BaseTag(repo, "dockerfile", tag)
	if err != nil {
		return "", err
	}
	b := &image.EngineBuilder{Command: eng, Client: e.imageClient()}
	dg, err := b.BuildFile(ctx, abs, target, e.Notice)
	if err != nil {
		return "", err
	}
	return dg.Name(), nil
}

// BuildImage builds and pushes the prebuilt base for a category, daemonless (or with
// the configured image_builder), with progress on e.Notice.
func (e *Engine) BuildImage(ctx context.Context, r BuildImageRequest) (*BuildImageResult, error) {
	start := time.Now()
	repo, err := image.ParseRepository(r.Repo)
	if err != nil {
		return nil, fmt.Errorf("--repo: %w", err)
	}
	s := imageSettings(e.cfg)
	var base name.Reference
	if r.Base != "" {
		if base, err = image.ParseReference(r.Base); err != nil {
			return nil, fmt.Errorf("--base: %w", err)
		}
	} else if base, err = s.Base(r.Category); err != nil {
		return nil, err
	}
	req, err := image.BaseRequest(repo, r.Category, version.Version, r.Tag, base)
	if err != nil {
		return nil, err
	}
	req.Progress = e.Notice
	en := e.ensurer(e.cfg)
	dg, err := en.Builder.Build(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("build-image %s: %w", req.Target, err)
	}
	return &BuildImageResult{Image: dg.Name(), Tag: req.Target.Name(), Category: r.Category, Base: base.Name(), Builder: en.Builder.Name(), Seconds: time.Since(start).Seconds()}, nil
}
