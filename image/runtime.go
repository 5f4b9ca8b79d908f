package image

import (
	"fmt"
	"strings"

	"github.com/kinetic-run/kinetic/errs"
)

// The runtime layer: what every bundled and prebuilt image gets on top of its base, per
// accelerator category (seed 000: "Kinetic's bundled and prebuilt images already have
// jax, jaxlib, and the right accelerator backend installed and pinned"). The versions
// are written here and nowhere else (docs/images.md has the table); they are part of
// the environment key through the requirement lines, so changing one changes every
// bundled tag.
//
// They were chosen so that every line resolves from PyPI alone, with manylinux wheels
// for x86_64 and aarch64 and CPython 3.10, 3.11, 3.12 and 3.13 (checked with pip's
// resolver against PyPI for every Python, platform and category, 2026-11-29): jax and
// jaxlib 0.6.2 are the last release with CPython 3.10 wheels (0.7 needs 3.11);
// jax[tpu]==0.6.2 brings libtpu 0.0.17.x, which is on PyPI (x86_64 only: TPU hosts are
// x86_64), so no find-links page is needed; jax[cuda12]==0.6.2 brings jax-cuda12-plugin
// and the nvidia-* CUDA 12 wheels; keras 3.10.0 and cloudpickle 3.1.1 are pure-Python
// wheels. Their own dependencies (numpy, scipy, ml_dtypes, ...) are left to the
// resolver, together with the user's requirements.
const (
	// JaxVersion is jax's and jaxlib's version on every category.
	JaxVersion = "0.6.2"
	// KerasVersion is keras's.
	KerasVersion = "3.10.0"
	// CloudpickleVersion is cloudpickle's: the runner unpickles every call with it.
	CloudpickleVersion = "3.1.1"
)

// RuntimeRequirements returns the requirement lines of the runtime layer for category
// (cpu, gpu or tpu), in the order they are added after the user's: the jax lines for the
// category's hardware, then keras, then cloudpickle.
//
//	cpu: jax==V, jaxlib==V
//	gpu: jax[cuda12]==V (jaxlib, jax-cuda12-plugin and the CUDA 12 libraries follow)
//	tpu: jax[tpu]==V (jaxlib and libtpu follow)
func RuntimeRequirements(category string) ([]string, error) {
	var jax []string
	switch category {
	case "cpu":
		jax = []string{"jax==" + JaxVersion, "jaxlib==" + JaxVersion}
	case "gpu":
		jax = []string{"jax[cuda12]==" + JaxVersion}
	case "tpu":
		jax = []string{"jax[tpu]==" + JaxVersion}
	default:
		return nil, checkCategory(category)
	}
	return append(jax, "keras=="+KerasVersion, "cloudpickle=="+CloudpickleVersion), nil
}

// MustRuntimeRequirements is RuntimeRequirements for a category known to be valid; it
// panics on any other.
func MustRuntimeRequirements(category string) []string {
	r, err := RuntimeRequirements(category)
	if err != nil {
		panic(err)
	}
	return r
}

// JAXPlatforms is the JAX_PLATFORMS value a pod of category gets: "cpu" for CPU jobs, so
// that jax does not probe for a TPU or GPU it will not find (the probe of the TPU
// metadata server alone takes seconds on a machine without one); "tpu" and "cuda" on
// accelerators, so that a TPU or GPU jax cannot initialise is an error at the first jax
// call, naming the platform, rather than a job that silently trains on the host's CPU
// (JAX falls back to CPU with a warning when JAX_PLATFORMS is unset). A captured
// JAX_PLATFORMS wins.
func JAXPlatforms(category string) string {
	switch category {
	case "gpu":
		return "cuda"
	case "tpu":
		return "tpu"
	}
	return "cpu"
}

// Supported client Python minor versions: the images' Python is the client's, and the
// runtime layer has wheels for these.
const (
	MinPythonMinor = 10
	MaxPythonMinor = 13
)

// DefaultPython is the Python of the default bases when the client did not say which it
// is (a client older than the python_version parameter): what they were before.
const DefaultPython = "3.11"

// CheckPython checks that v ("3.12") is a Python minor version the images support.
func CheckPython(v string) error {
	var major, minor int
	if n, err := fmt.Sscanf(v, "%d.%d", &major, &minor); err != nil || n != 2 || fmt.Sprintf("%d.%d", major, minor) != v {
		return errs.Errorf(errs.InvalidArgument, "python version %q: expected MAJOR.MINOR, such as 3.12", v)
	}
	if major != 3 || minor < MinPythonMinor || minor > MaxPythonMinor {
		return errs.Errorf(errs.InvalidArgument, "the client runs Python %s, but Kinetic's images support Python 3.%d to 3.%d: run the client on one of those (or give a custom image with container_image=IMAGE whose Python is %s)", v, MinPythonMinor, MaxPythonMinor, v)
	}
	return nil
}

// DefaultBase is the base of bundled builds and prebuilt bases for a client on Python
// python ("3.12") when base_image_CATEGORY is not set: the official slim image of that
// Python (Debian; glibc 2.36), the same for every category: CUDA and libtpu come with
// the runtime layer's wheels.
func DefaultBase(python string) string {
	if python == "" {
		python = DefaultPython
	}
	return "docker.io/library/python:" + python + "-slim"
}

// PythonMismatchError is a base image whose Python is not the client's.
type PythonMismatchError struct {
	Base     string // the image
	Setting  string // the setting that named it ("base_image_cpu"), "" for none
	Image    string // its Python minor version
	Client   string // the client's
	Category string
}

func (e *PythonMismatchError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "base image %s has Python %s, but the client runs Python %s: a function pickled by Python %s must be loaded by the same minor version", e.Base, e.Image, e.Client, e.Client)
	if e.Setting != "" {
		fmt.Fprintf(&b, "; set %s to a Python %s image (e.g. %s), or run the client on Python %s", e.Setting, e.Client, DefaultBase(e.Client), e.Image)
	} else {
		fmt.Fprintf(&b, "; use a Python %s base, or run the client on Python %s", e.Client, e.Image)
	}
	return b.String()
}

// KeyBase is the base image as the environment key hashes it: its reference and the
// client's Python, so that a configured base (whose name does not say its Python) still
// gets a tag per client Python, and a client on another Python than the base's is told
// so (PythonMismatchError) instead of finding an image built for another.
func KeyBase(base, python string) string {
	return base + " python=" + python
}
