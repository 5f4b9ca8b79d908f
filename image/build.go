package image

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// BuildRequest is one image to make: Base plus the requirements plus the runner,
// pushed as Target.
type BuildRequest struct {
	Base   name.Reference
	Target name.Tag
	// Requirements and Constraints are filtered requirement lines (directives included),
	// as deps.Requirements.Lines and ConstraintLines give them.
	Requirements []string
	Constraints  []string
	// Dir is where relative paths in the requirements are resolved (the directory of
	// the requirements file).
	Dir string
	// Labels are added to the image's configuration.
	Labels map[string]string
	// Python, when set, is the Python minor version ("3.12") the base must have: the
	// client's. A base with another one is refused (PythonMismatchError) before anything
	// is built. BaseSetting names the setting the base came from, for that error.
	Python      string
	BaseSetting string
	// Runtime names the projects of the runtime layer's lines (RuntimeProjects): the
	// wheels they need go into a layer of their own under the user's (layersOfWheels), so
	// that images with the same runtime share it. Empty: one layer.
	Runtime []string
	// Platform is the image's platform (default linux/GOARCH).
	Platform *v1.Platform
	// Progress receives progress lines and bars (stderr in the CLI); nil is silent.
	Progress io.Writer
}

func (r *BuildRequest) platform() v1.Platform {
	if r.Platform != nil {
		return *r.Platform
	}
	return v1.Platform{OS: "linux", Architecture: runtime.GOARCH}
}

// Builder makes the image a BuildRequest describes and pushes it to its Target.
// Implementations must not return before the image is pullable by digest, must name the
// input at fault in errors (the base image, a requirement, the registry), and must
// wrap ErrMissingWheel when a requirement has no installable wheel so callers can fall
// back to a builder that compiles inside the image.
type Builder interface {
	Name() string
	Build(ctx context.Context, req *BuildRequest) (name.Digest, error)
}

// Daemonless builds with no container engine: base manifest and config from the
// registry, requirements installed here with pip for the image's platform, runner
// binary, push with go-containerregistry.
type Daemonless struct {
	Client *Client
	// Python runs pip ("" = python3; the engine passes the setting build_python).
	Python string
	// Work is a scratch directory ("" = the system temp dir).
	Work string
	// CacheDir keeps the compressed runner layer between builds ("" = no cache).
	CacheDir string
	// PipInstall installs with pip install --target and layers the result, instead of
	// letting pip only resolve and download and laying the wheels out here (the
	// behaviour the direct layout is checked against).
	PipInstall bool
}

// requirementsLayer installs the requirements for t and returns them as a layer at
// SitePackages, streamed straight from the wheels (nothing extracted to disk): without
// pip when they are a closed set of pinned local wheels (pinnedLocalWheels), else the
// wheels pip download chose for t; pip install --target only when the wheels overlap
// (pip decides what wins) or PipInstall is set.
func (d *Daemonless) requirementsLayer(ctx context.Context, req *BuildRequest, t Target, work string, mt types.MediaType) ([]*fileLayer, error) {
	out := filepath.Join(work, "site.tar.gz")
	if ws, err := pinnedLocalWheels(req.Requirements, req.Constraints, t); err == nil {
		say(req.Progress, "layering %d pinned local wheels for Python %s linux/%s", len(ws), t.Python, t.Arch)
		ls, err := layersOfWheels(ws, req.Runtime, t, work, mt)
		if !errors.Is(err, errNotSimple) {
			return ls, err
		}
	}
	if !d.PipInstall {
		say(req.Progress, "resolving %d requirement lines for Python %s linux/%s with pip", len(req.Requirements), t.Python, t.Arch)
		dir := filepath.Join(work, "wheels")
		if err := pipDownload(ctx, d.python(), t, req.Requirements, req.Constraints, dir, req.Dir, nil); err != nil {
			return nil, err
		}
		ws, err := wheelsIn(dir)
		if err != nil {
			return nil, err
		}
		ls, err := layersOfWheels(ws, req.Runtime, t, work, mt)
		if !errors.Is(err, errNotSimple) {
			return ls, err
		}
	}
	say(req.Progress, "installing %d requirement lines for Python %s linux/%s with pip", len(req.Requirements), t.Python, t.Arch)
	site := filepath.Join(work, "site")
	if err := pipInstall(ctx, d.python(), t, req.Requirements, req.Constraints, site, req.Dir, nil); err != nil {
		return nil, err
	}
	l, err := writeLayer(out, []layerFile{{Target: SitePackages, Source: site}}, mt)
	if err != nil {
		return nil, fmt.Errorf("requirements layer: %w", err)
	}
	return []*fileLayer{l}, nil
}

// Name implements Builder.
func (d *Daemonless) Name() string { return "daemonless" }

// Build implements Builder.
func (d *Daemonless) Build(ctx context.Context, req *BuildRequest) (name.Digest, error) {
	start := time.Now()
	base, err := d.base(ctx, req)
	if err != nil {
		return name.Digest{}, err
	}
	cf, err := base.ConfigFile()
	if err != nil {
		return name.Digest{}, fmt.Errorf("base image %s: read its configuration: %w", req.Base, err)
	}
	mt := types.DockerLayer
	if m, err := base.MediaType(); err == nil && m == types.OCIManifestSchema1 {
		mt = types.OCILayer
	}
	work, err := os.MkdirTemp(d.Work, "kinetic-build-")
	if err != nil {
		return name.Digest{}, err
	}
	defer os.RemoveAll(work)
	t, err := buildTarget(req, base, cf)
	if err != nil {
		return name.Digest{}, err
	}
	adds, env := []mutate.Addendum(nil), cf.Config.Env
	if len(req.Requirements) > 0 {
		ls, err := d.requirementsLayer(ctx, req, t, work, mt)
		if err != nil {
			return name.Digest{}, err
		}
		adds = requirementsAddenda(req, ls)
		env = setPathEnv(env, "PYTHONPATH", SitePackages)
	}
	img, err := finishImage(base, adds, env, req.Labels)
	if err != nil {
		return name.Digest{}, err
	}
	dg, err := push(ctx, d.Client, req.Target, img, req.Progress)
	if err != nil {
		return name.Digest{}, err
	}
	say(req.Progress, "built %s in %s", dg, time.Since(start).Round(10*time.Millisecond))
	return dg, nil
}

// buildTarget is the base's Python and platform, when the build needs them (it installs
// requirements, or req asks for a Python).
func buildTarget(req *BuildRequest, base v1.Image, cf *v1.ConfigFile) (Target, error) {
	var t Target
	if len(req.Requirements) == 0 && req.Python == "" {
		return t, nil
	}
	t, ok := targetFromConfig(cf)
	if !ok {
		var err error
		say(req.Progress, "reading the layers of %s to find its Python (set the label %s to skip this)", req.Base, LabelPython)
		if t, err = targetFromLayers(base, t); err != nil {
			return t, fmt.Errorf("base image %s: %w: bundled images need a base with python3 on PATH (use a python image, or set its PYTHON_VERSION env or %s label)", req.Base, err, LabelPython)
		}
	}
	return t, req.checkPython(t.Python)
}

// requirementsAddenda are the requirements layers with their history.
func requirementsAddenda(req *BuildRequest, ls []*fileLayer) []mutate.Addendum {
	var adds []mutate.Addendum
	for i, l := range ls {
		by := "kinetic: pip install --target " + SitePackages
		if len(ls) > 1 && i == 0 {
			by = "kinetic: the runtime layer (" + strings.Join(req.Runtime, ", ") + ") at " + SitePackages
		}
		adds = append(adds, mutate.Addendum{Layer: l, History: v1.History{CreatedBy: by, Created: v1.Time{Time: time.Unix(0, 0)}}})
	}
	return adds
}

// finishImage is base with adds, its environment env and labels added.
func finishImage(base v1.Image, adds []mutate.Addendum, env []string, labels map[string]string) (v1.Image, error) {
	img, err := mutate.Append(base, adds...)
	if err != nil {
		return nil, err
	}
	cf2, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf2 = cf2.DeepCopy()
	cf2.Config.Env = env
	if cf2.Config.Labels == nil {
		cf2.Config.Labels = map[string]string{}
	}
	for k, v := range labels {
		cf2.Config.Labels[k] = v
	}
	return mutate.ConfigFile(img, cf2)
}

func (d *Daemonless) python() string {
	if d.Python != "" {
		return d.Python
	}
	return "python3"
}

// base fetches the base image's manifest (one of its platform for an index).
func (d *Daemonless) base(ctx context.Context, req *BuildRequest) (v1.Image, error) {
	img, err := remote.Image(req.Base, d.Client.Options(ctx, remote.WithPlatform(req.platform()))...)
	if err != nil {
		return nil, baseError(req.Base, err)
	}
	// Fetch the manifest now, so a bad base fails here and not in the middle of a push.
	if _, err := img.Manifest(); err != nil {
		return nil, baseError(req.Base, err)
	}
	return img, nil
}

func baseError(ref name.Reference, err error) error {
	var te *transport.Error
	if errors.As(err, &te) {
		switch te.StatusCode {
		case http.StatusNotFound:
			return fmt.Errorf("base image %s was not found in %s: check base_image_<category> in the profile (or the image's name and tag): %w", ref, ref.Context().RegistryStr(), err)
		case http.StatusUnauthorized, http.StatusForbidden:
			return fmt.Errorf("base image %s: access denied by %s: log in to that registry (docker/podman login, or gcloud auth configure-docker): %w", ref, ref.Context().RegistryStr(), err)
		}
	}
	if isNetError(err) {
		return fmt.Errorf("base image %s: %w", ref, unreachable(ref.Context().Registry, err))
	}
	return fmt.Errorf("base image %s: %w", ref, err)
}

// isNetError reports whether err is a failure to reach a host (dial, DNS, timeout)
// rather than an answer from it.
func isNetError(err error) bool {
	var op *net.OpError
	var dns *net.DNSError
	var ne net.Error
	return errors.As(err, &op) || errors.As(err, &dns) || (errors.As(err, &ne) && ne.Timeout())
}

// push writes img to ref, drawing progress on w, and returns its digest reference.
func push(ctx context.Context, c *Client, ref name.Tag, img v1.Image, w io.Writer) (name.Digest, error) {
	ch, wait := trackPush(w, "kinetic: push "+ref.Context().RepositoryStr())
	err := remote.Write(ref, img, c.Options(ctx, remote.WithProgress(ch))...)
	wait()
	if err != nil {
		if isNetError(err) {
			return name.Digest{}, fmt.Errorf("push %s: %w", ref, unreachable(ref.Context().Registry, err))
		}
		return name.Digest{}, fmt.Errorf("push %s: %w", ref, err)
	}
	h, err := img.Digest()
	if err != nil {
		return name.Digest{}, err
	}
	return ref.Context().Digest(h.String()), nil
}

// setPathEnv puts dir first in the list variable key of env ("KEY=a:b").
func setPathEnv(env []string, key, dir string) []string {
	out := append([]string(nil), env...)
	for i, kv := range out {
		if v, ok := strings.CutPrefix(kv, key+"="); ok {
			if v == "" {
				out[i] = key + "=" + dir
			} else {
				out[i] = key + "=" + dir + ":" + v
			}
			return out
		}
	}
	return append(out, key+"="+dir)
}

// checkPython refuses a base whose Python (image, "3.11") is not req.Python.
func (req *BuildRequest) checkPython(image string) error {
	if req.Python == "" || image == req.Python {
		return nil
	}
	return &PythonMismatchError{Base: req.Base.Name(), Setting: req.BaseSetting, Image: image, Client: req.Python}
}

// BaseRequest returns the request that publishes the prebuilt base for category and
// Python python ("3.12"): the base plus the runtime layer (RuntimeRequirements),
// labelled, tagged REPO/base-CATEGORY:TAG-pyPYTHON (TAG defaults to version). The base
// must have that Python, and pip or uv: the runner installs the job's own requirements
// with them when it starts.
func BaseRequest(repo name.Repository, category, version, tag, python string, base name.Reference) (*BuildRequest, error) {
	rt, err := RuntimeRequirements(category)
	if err != nil {
		return nil, err
	}
	if err := CheckPython(python); err != nil {
		return nil, fmt.Errorf("--python: %w", err)
	}
	if tag == "" {
		tag = version
	}
	target, err := BaseTag(repo, category, tag, python)
	if err != nil {
		return nil, fmt.Errorf("tag %q: %w", tag, err)
	}
	return &BuildRequest{
		Base: base, Target: target, Requirements: rt, Python: python,
		Labels: map[string]string{LabelCategory: category, LabelVersion: version, LabelPython: python},
	}, nil
}

// wheelsIn lists the wheels pip download put in dir.
func wheelsIn(dir string) ([]wheelFile, error) {
	ents, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	var out []wheelFile
	for _, e := range ents {
		m := wheelNameRE.FindStringSubmatch(e.Name())
		if m == nil {
			return nil, fmt.Errorf("pip download left %s, which is not a wheel", e.Name())
		}
		out = append(out, wheelFile{path: filepath.Join(dir, e.Name()), project: normalize(m[1]), version: m[2]})
	}
	return out, nil
}

// layerOfWheels lays the wheels out into the requirements layer at out, as pip install
// --target would; errNotSimple means a wheel needs pip itself.
func layerOfWheels(ws []wheelFile, t Target, out string, mt types.MediaType) (*fileLayer, error) {
	entries, closeAll, err := wheelEntries(ws, SitePackages, t.Python)
	if err != nil {
		return nil, err
	}
	defer closeAll()
	l, err := writeWheelLayer(out, entries, mt)
	if err != nil {
		return nil, fmt.Errorf("requirements layer: %w", err)
	}
	return l, nil
}
