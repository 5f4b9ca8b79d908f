package image

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Labels the images Kinetic makes carry; the Python labels also tell the daemonless
// builder what a base holds without reading its layers.
const (
	LabelEnvKey        = "run.kinetic.env-key"
	LabelVersion       = "run.kinetic.version"
	LabelPython        = "run.kinetic.python-version" // "3.11"
	LabelGlibc         = "run.kinetic.glibc"          // "2.36"
	LabelCategory      = "run.kinetic.category"
	SitePackages       = "/kinetic/site-packages" // where bundled requirements go (on PYTHONPATH)
	defaultGlibc       = "2.31"
	minManylinuxMinor  = 17
	pythonVersionLabel = LabelPython
)

// Target is what pip must install for: the image's interpreter and platform.
type Target struct {
	Python string // "3.11"
	Arch   string // GOARCH form: amd64, arm64
	Glibc  string // the newest glibc the image has, "2.36"
}

// PipArgs are the options that make pip pick wheels for t on another machine.
func (t Target) PipArgs() []string {
	args := []string{"--only-binary=:all:", "--implementation", "cp", "--python-version", t.Python}
	nodot := strings.ReplaceAll(t.Python, ".", "")
	args = append(args, "--abi", "cp"+nodot, "--abi", "abi3", "--abi", "none")
	for _, p := range t.Platforms() {
		args = append(args, "--platform", p)
	}
	return args
}

// Platforms are the wheel platform tags the image can load, newest first.
func (t Target) Platforms() []string {
	arch := map[string]string{"amd64": "x86_64", "arm64": "aarch64", "ppc64le": "ppc64le", "s390x": "s390x", "386": "i686"}[t.Arch]
	if arch == "" {
		arch = t.Arch
	}
	maxMinor := 31
	if _, m, ok := strings.Cut(t.Glibc, "."); ok {
		if n, err := strconv.Atoi(m); err == nil && n >= minManylinuxMinor {
			maxMinor = n
		}
	}
	var out []string
	for m := maxMinor; m >= minManylinuxMinor; m-- {
		out = append(out, fmt.Sprintf("manylinux_2_%d_%s", m, arch))
	}
	out = append(out, "manylinux2014_"+arch)
	if arch == "x86_64" || arch == "i686" {
		out = append(out, "manylinux2010_"+arch, "manylinux1_"+arch)
	}
	return out
}

var pyVersionRE = regexp.MustCompile(`^(3)\.(\d{1,2})`)

// targetFromConfig reads the Python version and glibc from the image's labels, then
// from PYTHON_VERSION in its environment (the official python images set it); ok is
// false when neither says.
func targetFromConfig(cf *v1.ConfigFile) (Target, bool) {
	t := Target{Arch: cf.Architecture, Glibc: defaultGlibc}
	if t.Arch == "" {
		t.Arch = "amd64"
	}
	if g := cf.Config.Labels[LabelGlibc]; g != "" {
		t.Glibc = g
	}
	if v := cf.Config.Labels[pythonVersionLabel]; v != "" {
		if m := pyVersionRE.FindStringSubmatch(v); m != nil {
			t.Python = m[1] + "." + m[2]
			return t, true
		}
	}
	for _, kv := range cf.Config.Env {
		if v, ok := strings.CutPrefix(kv, "PYTHON_VERSION="); ok {
			if m := pyVersionRE.FindStringSubmatch(v); m != nil {
				t.Python = m[1] + "." + m[2]
				return t, true
			}
		}
	}
	return t, false
}

var pythonBinRE = regexp.MustCompile(`^(?:\./)?(?:usr/local/bin|usr/bin|bin|opt/[^/]+/bin)/python(3\.\d{1,2})$`)
var glibcRE = regexp.MustCompile(`^(?:\./)?(?:usr/)?lib(?:64)?/(?:[^/]+-linux-gnu/)?libc\.so\.6$|libc-(2\.\d+)\.so$`)

// errNoPython means the image holds no python3.X interpreter.
var errNoPython = errors.New("no python3 interpreter found")

// targetFromLayers scans the image's layers, newest first, for a python3.X binary (this
// downloads them: used only when the configuration does not say).
func targetFromLayers(img v1.Image, t Target) (Target, error) {
	layers, err := img.Layers()
	if err != nil {
		return t, err
	}
	for i := len(layers) - 1; i >= 0; i-- {
		rc, err := layers[i].Uncompressed()
		if err != nil {
			return t, err
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				rc.Close()
				return t, err
			}
			if m := pythonBinRE.FindStringSubmatch(h.Name); m != nil {
				t.Python = m[1]
			}
			if m := glibcRE.FindStringSubmatch(h.Name); m != nil && m[1] != "" {
				t.Glibc = m[1]
			}
		}
		rc.Close()
		if t.Python != "" {
			return t, nil
		}
	}
	return t, errNoPython
}
