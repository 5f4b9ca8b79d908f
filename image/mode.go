package image

import (
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/kinetic-run/kinetic/errs"
)

// Mode is how a job's image is produced.
type Mode string

// The modes of container_image.
const (
	Bundled  Mode = "bundled"  // built from the environment key, cached in the registry
	Prebuilt Mode = "prebuilt" // a published base; requirements installed at start
	Custom   Mode = "custom"   // an image given by the user, used as is
)

// Choice is a parsed container_image.
type Choice struct {
	Mode Mode
	// Ref is the custom image (Custom only).
	Ref name.Reference
}

// ParseChoice parses container_image: "" or "bundled", "prebuilt", or an image
// reference.
func ParseChoice(s string) (Choice, error) {
	switch t := strings.TrimSpace(s); t {
	case "", string(Bundled):
		return Choice{Mode: Bundled}, nil
	case string(Prebuilt):
		return Choice{Mode: Prebuilt}, nil
	default:
		if strings.EqualFold(t, "bundled") || strings.EqualFold(t, "prebuilt") {
			return Choice{}, errs.Errorf(errs.InvalidArgument, "container_image %q: write %q in lower case", s, strings.ToLower(t))
		}
		r, err := ParseReference(t)
		if err != nil {
			return Choice{}, fmt.Errorf("container_image: %w; or use \"bundled\" (the default) or \"prebuilt\"", err)
		}
		return Choice{Mode: Custom, Ref: r}, nil
	}
}

// Categories are the accelerator categories with a base image each.
var Categories = []string{"cpu", "gpu", "tpu"}

func checkCategory(c string) error {
	for _, k := range Categories {
		if c == k {
			return nil
		}
	}
	return errs.Errorf(errs.InvalidArgument, "accelerator category %q: use one of cpu, gpu, tpu", c)
}

// Settings are the configuration image resolution needs.
type Settings struct {
	// Registry is where bundled images are pushed ("HOST/PATH"); image_registry.
	Registry string
	// BaseImageRepo is where prebuilt bases live; base_image_repo /
	// KINETIC_BASE_IMAGE_REPO.
	BaseImageRepo string
	// Bases maps a category to the base image of bundled builds; missing ones fall back
	// to DefaultBase(Python).
	Bases map[string]string
	// Version is the runner version: the tag of prebuilt bases.
	Version string
	// Python is the client's Python minor version ("3.12"): the default bases are that
	// Python's official image and prebuilt tags name it; "" means DefaultPython.
	Python string
}

// python is s.Python or DefaultPython.
func (s Settings) python() string {
	if s.Python == "" {
		return DefaultPython
	}
	return s.Python
}

// BaseSetting names the setting that configured category's base ("base_image_cpu"), or
// "" when the category uses DefaultBase.
func (s Settings) BaseSetting(category string) string {
	if s.Bases[category] == "" {
		return ""
	}
	return "base_image_" + category
}

// BundledRepository is the repository name bundled images get under Registry.
const BundledRepository = "kinetic-env"

// Base returns the base image for category.
func (s Settings) Base(category string) (name.Reference, error) {
	if err := checkCategory(category); err != nil {
		return nil, err
	}
	b := s.Bases[category]
	if b == "" {
		b = DefaultBase(s.python())
	}
	r, err := ParseReference(b)
	if err != nil {
		return nil, fmt.Errorf("base image for %s (base_image_%s): %w", category, category, err)
	}
	return r, nil
}

// BundledRef is the tag of the bundled image for envKey: REGISTRY/kinetic-env:KEY.
func (s Settings) BundledRef(envKey string) (name.Tag, error) {
	if s.Registry == "" {
		return name.Tag{}, fmt.Errorf("bundled images need a registry to push to: set image_registry (`kinetic up --backend k8s --registry HOST/PATH` writes it into the profile, as does `kinetic profile set image_registry=HOST/PATH`; or KINETIC_IMAGE_REGISTRY), or pass container_image=IMAGE")
	}
	repo, err := s.bundledRepository()
	if err != nil {
		return name.Tag{}, err
	}
	if len(envKey) < 12 {
		return name.Tag{}, fmt.Errorf("environment key %q is too short for an image tag", envKey)
	}
	return repo.Tag(envKey), nil
}

// bundledRepository is REGISTRY/kinetic-env, the repository of bundled images.
func (s Settings) bundledRepository() (name.Repository, error) {
	if _, err := ParseRepository(s.Registry); err != nil {
		return name.Repository{}, fmt.Errorf("image_registry: %w", err)
	}
	repo, err := ParseRepository(strings.TrimSuffix(strings.TrimSpace(s.Registry), "/") + "/" + BundledRepository)
	if err != nil {
		return name.Repository{}, fmt.Errorf("image_registry: %w", err)
	}
	return repo, nil
}

// RunnerRepository is where the runner is added to img, an image the user gave
// (Client.AddRunner): the repository of bundled images (REGISTRY/kinetic-env), when img
// is in the same registry, so that its layers are mounted there and never copied. ok is
// false for an image in another registry, or when no image_registry is set.
func (s Settings) RunnerRepository(img name.Reference) (repo name.Repository, ok bool) {
	if s.Registry == "" {
		return name.Repository{}, false
	}
	repo, err := s.bundledRepository()
	if err != nil || repo.RegistryStr() != img.Context().RegistryStr() {
		return name.Repository{}, false
	}
	return repo, true
}

// PrebuiltRef is the published base for category and the client's Python:
// BASE_IMAGE_REPO/base-CATEGORY:VERSION-pyPYTHON.
func (s Settings) PrebuiltRef(category string) (name.Tag, error) {
	if err := checkCategory(category); err != nil {
		return name.Tag{}, err
	}
	if s.BaseImageRepo == "" {
		return name.Tag{}, fmt.Errorf("prebuilt mode needs base_image_repo: publish bases with `kinetic build-image --repo R --category %s --python %s`, then set KINETIC_BASE_IMAGE_REPO=R (or base_image_repo in the profile)", category, s.python())
	}
	repo, err := ParseRepository(s.BaseImageRepo)
	if err != nil {
		return name.Tag{}, fmt.Errorf("base_image_repo: %w", err)
	}
	return BaseTag(repo, category, s.Version, s.python())
}

// BaseTag is REPO/base-CATEGORY:VERSION-pyPYTHON, e.g. base-cpu:0.3.0-py3.12: a
// prebuilt base holds one Python, and a job must run on its client's (a version that is
// not a valid tag, such as "dev+abc", has its invalid characters replaced by '-').
// python "" leaves the suffix out (the Dockerfile base of build-image, which holds no
// runtime layer).
func BaseTag(repo name.Repository, category, version, python string) (name.Tag, error) {
	if version == "" {
		version = "latest"
	}
	if python != "" {
		version += "-py" + python
	}
	t := []byte(version)
	for i, c := range t {
		if !tagByte(c) {
			t[i] = '-'
		}
	}
	return name.NewTag(repo.String()+"/base-"+category+":"+string(t), nameOpts(repo.Registry)...)
}

// tagByte says c may be in an image tag.
func tagByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-'
}

func nameOpts(r name.Registry) []name.Option {
	if r.Scheme() == "http" {
		return []name.Option{name.Insecure}
	}
	return nil
}

// Resolve returns the image a job runs in, without touching a registry: a custom image
// as given, the published base for prebuilt, and for bundled the environment-key tag
// (Ensurer.Ensure makes it exist and gives its digest).
func Resolve(c Choice, envKey, category string, s Settings) (name.Reference, error) {
	switch c.Mode {
	case Custom:
		return c.Ref, nil
	case Prebuilt:
		return s.PrebuiltRef(category)
	case Bundled:
		if err := checkCategory(category); err != nil {
			return nil, err
		}
		return s.BundledRef(envKey)
	}
	return nil, errs.Errorf(errs.InvalidArgument, "unknown image mode %q", c.Mode)
}
