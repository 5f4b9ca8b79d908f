// Package images is this machine's image builders as the configuration names them
// (image_builder: daemonless, podman or docker, Cloud Build): one image.Ensurer per
// builder, shared by every job planned in the process (its singleflight), the kinetic
// binary that goes into bundled images, and `kinetic build-image`'s bases.
package images

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/engine/plan"
	"github.com/kinetic-run/kinetic/image"
	"github.com/kinetic-run/kinetic/version"
)

// Builders makes and keeps the image builders of one engine.
type Builders struct {
	mu       sync.Mutex
	ensurers map[string]*image.Ensurer // per image builder
}

// Ensurer returns the Ensurer for the configured builder: one per builder, so
// concurrent submissions in this process share one singleflight group.
func (b *Builders) Ensurer(cfg *config.Resolved) *image.Ensurer {
	kind := cfg.Get(config.ImageBuilder)
	b.mu.Lock()
	defer b.mu.Unlock()
	if en, ok := b.ensurers[kind]; ok {
		return en
	}
	c := &image.Client{}
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
	if b.ensurers == nil {
		b.ensurers = map[string]*image.Ensurer{}
	}
	b.ensurers[kind] = en
	return en
}

// BaseRequest publishes a prebuilt base (`kinetic build-image`).
type BaseRequest struct {
	Repo     string // repository the base goes to (REPO/base-CATEGORY:TAG)
	Category string // cpu, gpu or tpu
	Tag      string // default: this version
	Base     string // the image it starts from (default: the category's bundled base)
	// Python is the Python minor version ("3.12") the base holds and its tag names
	// (REPO/base-CATEGORY:TAG-pyPYTHON): jobs from a client on that Python use it.
	Python string
}

// BaseResult is what was published.
type BaseResult struct {
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
func BaseFromDockerfile(ctx context.Context, cfg *config.Resolved, notice io.Writer, repoName, tag, dockerfile string) (string, error) {
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
	eng := cfg.Get(config.ImageBuilder)
	if eng != "podman" && eng != "docker" {
		eng = image.DetectEngine()
	}
	if eng == "" {
		return "", fmt.Errorf("--dockerfile %s: building a Dockerfile needs podman or docker on this machine (the daemonless builder does not run Dockerfiles); install one, or build and push the image yourself and pass it as --base", dockerfile)
	}
	if tag == "" {
		tag = version.Version
	}
	target, err := image.BaseTag(repo, "dockerfile", tag, "")
	if err != nil {
		return "", err
	}
	eb := &image.EngineBuilder{Command: eng, Client: &image.Client{}}
	dg, err := eb.BuildFile(ctx, abs, target, notice)
	if err != nil {
		return "", err
	}
	return dg.Name(), nil
}

// BuildBase builds and pushes the prebuilt base for a category, daemonless (or with
// the configured image_builder) with progress on notice (exe is kept for callers; the
// image no longer carries the CLI: pods run the runner image's binary).
func (b *Builders) BuildBase(ctx context.Context, cfg *config.Resolved, exe string, notice io.Writer, r BaseRequest) (*BaseResult, error) {
	start := time.Now()
	repo, err := image.ParseRepository(r.Repo)
	if err != nil {
		return nil, fmt.Errorf("--repo: %w", err)
	}
	if r.Python == "" {
		r.Python = image.DefaultPython
	}
	s := plan.ImageSettings(cfg)
	s.Python = r.Python
	var base name.Reference
	setting := s.BaseSetting(r.Category)
	if r.Base != "" {
		if base, err = image.ParseReference(r.Base); err != nil {
			return nil, fmt.Errorf("--base: %w", err)
		}
		setting = "--base"
	} else if base, err = s.Base(r.Category); err != nil {
		return nil, err
	}
	req, err := image.BaseRequest(repo, r.Category, version.Version, r.Tag, r.Python, base)
	if err != nil {
		return nil, err
	}
	req.Progress, req.BaseSetting = notice, setting
	if cfg.Get(config.RuntimeLayer) == "none" {
		req.Requirements = nil // the base as it is (runtime_layer=none)
	}
	en := b.Ensurer(cfg)
	if err := image.PrecheckPython(ctx, en.Client, en.Builder, req); err != nil {
		return nil, fmt.Errorf("build-image %s: %w", req.Target, err)
	}
	dg, err := en.Builder.Build(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("build-image %s: %w", req.Target, err)
	}
	return &BaseResult{Image: dg.Name(), Tag: req.Target.Name(), Category: r.Category, Base: base.Name(), Builder: en.Builder.Name(), Seconds: time.Since(start).Seconds()}, nil
}
