package image

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/sync/singleflight"

	"github.com/kinetic-run/kinetic/errs"
	"github.com/kinetic-run/kinetic/job"
)

// The runner image: only the static kinetic-runner binary at job.RunnerPath, one image
// per platform under one OCI index, tagged by the binaries' content digest (never
// :latest), pushed with go-containerregistry the way ko publishes a Go binary. Job pods
// run it as their init container (`install-runner`), which copies the binary into the
// job's own image.

// RunnerRepoName is the repository under image_registry the runner image goes to.
const RunnerRepoName = "kinetic-runner"

// RunnerPlatforms are the platforms of the runner index (GKE has both).
var RunnerPlatforms = []string{"linux/amd64", "linux/arm64"}

// ErrNoRunnerBinaries is wrapped when neither prebuilt runner binaries nor the module
// source to build them from can be found.
var ErrNoRunnerBinaries = errs.New(errs.FailedPrecondition, "no kinetic-runner binaries for linux/amd64 and linux/arm64")

// PublishRunner makes sure repo holds the runner index of bins (platform "linux/amd64"
// → path of that platform's static kinetic-runner) and returns it by digest. The tag is
// RunnerTag(bins): when the registry already has it, that is one HEAD request and
// nothing is pushed.
func (c *Client) PublishRunner(ctx context.Context, repo name.Repository, bins map[string]string, progress io.Writer) (name.Digest, error) {
	tag, err := RunnerTag(bins)
	if err != nil {
		return name.Digest{}, err
	}
	ref := repo.Tag(tag)
	if h, ok, err := c.Lookup(ctx, ref); err != nil {
		return name.Digest{}, err
	} else if ok {
		return repo.Digest(h.String()), nil
	}
	say(progress, "publishing the runner image %s (%s)", ref, strings.Join(sortedKeys(bins), ", "))
	start := time.Now()
	idx, err := RunnerIndex(bins)
	if err != nil {
		return name.Digest{}, err
	}
	if err := remote.WriteIndex(ref, idx, c.Options(ctx)...); err != nil {
		return name.Digest{}, fmt.Errorf("push the runner image %s: %w (check image_registry and that you may push to it)", ref, err)
	}
	h, err := idx.Digest()
	if err != nil {
		return name.Digest{}, err
	}
	say(progress, "published %s in %.1fs", repo.Digest(h.String()), time.Since(start).Seconds())
	return repo.Digest(h.String()), nil
}

// RunnerTag is the tag of the runner index of bins: "sha256-" and the SHA-256 over each
// platform and its binary's SHA-256, so a different binary is a different tag.
func RunnerTag(bins map[string]string) (string, error) {
	if len(bins) == 0 {
		return "", fmt.Errorf("%w: no binaries given", ErrNoRunnerBinaries)
	}
	h := sha256.New()
	for _, p := range sortedKeys(bins) {
		d, err := fileDigest(bins[p])
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %s\n", p, d)
	}
	return "sha256-" + hex.EncodeToString(h.Sum(nil)), nil
}

// digests caches binary digests by path, size and modification time: the warm check
// hashes nothing twice in one process.
var digests sync.Map

func fileDigest(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("runner binary: %w", err)
	}
	key := fmt.Sprintf("%s|%d|%d", path, fi.Size(), fi.ModTime().UnixNano())
	if d, ok := digests.Load(key); ok {
		return d.(string), nil
	}
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("runner binary: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("runner binary %s: %w", path, err)
	}
	d := hex.EncodeToString(h.Sum(nil))
	digests.Store(key, d)
	return d, nil
}

// RunnerIndex is the OCI index of one image per platform, each holding only its binary
// at job.RunnerPath (mode 0755, zero times: the same binaries give the same digests).
func RunnerIndex(bins map[string]string) (v1.ImageIndex, error) {
	var adds []mutate.IndexAddendum
	for _, p := range sortedKeys(bins) {
		plat, err := v1.ParsePlatform(p)
		if err != nil {
			return nil, fmt.Errorf("runner platform %q: %w", p, err)
		}
		img, err := runnerImage(bins[p], *plat)
		if err != nil {
			return nil, err
		}
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: plat}})
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	return mutate.AppendManifests(idx, adds...), nil
}

func runnerImage(bin string, plat v1.Platform) (v1.Image, error) {
	data, err := os.ReadFile(bin)
	if err != nil {
		return nil, fmt.Errorf("runner binary for %s: %w", plat.String(), err)
	}
	var tb bytes.Buffer
	tw := tar.NewWriter(&tb)
	for _, d := range []string{"kinetic/", "kinetic/bin/"} {
		tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: 0o755, Format: tar.FormatPAX})
	}
	tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(job.RunnerPath, "/"), Mode: 0o755, Size: int64(len(data)), Format: tar.FormatPAX})
	tw.Write(data)
	if err := tw.Close(); err != nil {
		return nil, err
	}
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestSpeed)
	zw.Write(tb.Bytes())
	if err := zw.Close(); err != nil {
		return nil, err
	}
	compressed := gz.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(compressed)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.AppendLayers(img, layer)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = plat.OS, plat.Architecture, plat.Variant
	cf.Config.Entrypoint = []string{job.RunnerPath}
	cf.Config.Labels = map[string]string{"org.opencontainers.image.title": "kinetic-runner"}
	return mutate.ConfigFile(img, cf)
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// RunnerSource finds the runner binaries for RunnerPlatforms.
type RunnerSource struct {
	// Exe is the running CLI (default os.Executable()): prebuilt binaries named
	// kinetic-runner-linux-amd64 and kinetic-runner-linux-arm64 next to it (a
	// distribution's archive) are used as they are.
	Exe string
	// SourceDir is the kinetic module's source ("" = $KINETIC_SOURCE_DIR, else the
	// directory above Exe or the working directory that holds its go.mod): the binaries
	// are cross-compiled from it with the Go toolchain.
	SourceDir string
	// CacheDir keeps cross-compiled binaries, keyed by the CLI binary's path, size and
	// modification time, so a warm check builds nothing ("" = a fresh temporary
	// directory each time).
	CacheDir string
	// Progress receives a line per build; nil is silent.
	Progress io.Writer
}

// ModulePath is the module whose cmd/kinetic-runner is cross-compiled.
const ModulePath = "github.com/kinetic-run/kinetic"

// Binaries returns platform → binary for every RunnerPlatforms entry.
func (s RunnerSource) Binaries(ctx context.Context) (map[string]string, error) {
	exe := s.exe()
	if exe != "" {
		if bins, ok := prebuilt(filepath.Dir(exe)); ok {
			return bins, nil
		}
	}
	src := s.sourceDir(exe)
	if src == "" || moduleRoot(src) != filepath.Clean(src) {
		return nil, fmt.Errorf("%w: put kinetic-runner-linux-amd64 and kinetic-runner-linux-arm64 (from a kinetic release, or `make runner-cross`) next to %s, or point KINETIC_SOURCE_DIR at a checkout of %s with Go installed to build them, or set runner_image to a published runner image", ErrNoRunnerBinaries, orDash(exe), ModulePath)
	}
	if _, err := exec.LookPath("go"); err != nil {
		return nil, fmt.Errorf("%w: building them from %s needs the Go toolchain on PATH (or set runner_image)", ErrNoRunnerBinaries, src)
	}
	dir, bins, err := s.buildDir(src, exe)
	if err != nil || bins != nil {
		return bins, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return BuildRunners(ctx, src, dir, RunnerPlatforms, s.Progress)
}

// exe is s.Exe, else this executable (its links resolved).
func (s RunnerSource) exe() string {
	if s.Exe != "" {
		return s.Exe
	}
	exe := ""
	if p, err := os.Executable(); err == nil {
		exe, _ = filepath.EvalSymlinks(p)
	}
	return exe
}

// sourceDir is the module to build the runners from: s.SourceDir, $KINETIC_SOURCE_DIR,
// or the module that holds exe or the working directory.
func (s RunnerSource) sourceDir(exe string) string {
	if s.SourceDir != "" {
		return s.SourceDir
	}
	if src := os.Getenv("KINETIC_SOURCE_DIR"); src != "" {
		return src
	}
	wd, _ := os.Getwd()
	for _, start := range []string{filepath.Dir(exe), wd} {
		if d := moduleRoot(start); d != "" {
			return d
		}
	}
	return ""
}

// buildDir is where the runners are built: in the cache, by source and executable
// (bins when they were built there before), else a new temporary directory.
func (s RunnerSource) buildDir(src, exe string) (dir string, bins map[string]string, err error) {
	if s.CacheDir == "" || exe == "" {
		d, err := os.MkdirTemp("", "kinetic-runner-")
		return d, nil, err
	}
	dir = s.CacheDir
	if fi, err := os.Stat(exe); err == nil {
		h := sha256.Sum256([]byte(fmt.Sprintf("%s|%s|%d|%d", src, exe, fi.Size(), fi.ModTime().UnixNano())))
		dir = filepath.Join(dir, hex.EncodeToString(h[:8]))
		if bins, ok := prebuilt(dir); ok {
			return dir, bins, nil
		}
	}
	return dir, nil, nil
}

// RunnerBuildFlags are the go build flags of every runner binary (the Makefile's
// runner targets use the same; a test holds them equal): no paths, no symbols, and
// without cloud.google.com/go/storage's gRPC direct-path modules (xds, rls), which the
// runner never uses: it reads and writes gs:// over HTTP (44 MB → 31 MB stripped).
var RunnerBuildFlags = []string{"-trimpath", "-tags=disable_grpc_modules", "-ldflags=-s -w"}

// BuildRunners cross-compiles cmd/kinetic-runner of the module at src for each platform
// into dir/kinetic-runner-OS-ARCH (static, stripped).
func BuildRunners(ctx context.Context, src, dir string, platforms []string, progress io.Writer) (map[string]string, error) {
	bins := map[string]string{}
	for _, p := range platforms {
		goos, goarch, ok := strings.Cut(p, "/")
		if !ok {
			return nil, fmt.Errorf("runner platform %q: want OS/ARCH", p)
		}
		out := filepath.Join(dir, "kinetic-runner-"+goos+"-"+goarch)
		say(progress, "building kinetic-runner for %s from %s", p, src)
		tmp := out + ".tmp"
		args := append(append([]string{"build"}, RunnerBuildFlags...), "-o", tmp, "./cmd/kinetic-runner")
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir = src
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch)
		if b, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("build kinetic-runner for %s: %v\n%s", p, err, b)
		}
		if err := os.Rename(tmp, out); err != nil {
			return nil, err
		}
		bins[p] = out
	}
	return bins, nil
}

// prebuilt finds kinetic-runner-linux-ARCH for every platform in dir.
func prebuilt(dir string) (map[string]string, bool) {
	bins := map[string]string{}
	for _, p := range RunnerPlatforms {
		f := filepath.Join(dir, "kinetic-runner-"+strings.ReplaceAll(p, "/", "-"))
		if fi, err := os.Stat(f); err != nil || !fi.Mode().IsRegular() {
			return nil, false
		}
		bins[p] = f
	}
	return bins, true
}

// moduleRoot is the directory at or above dir whose go.mod declares ModulePath.
func moduleRoot(dir string) string {
	if dir == "" || dir == "." {
		return ""
	}
	d, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	for {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil {
			if first, _, _ := strings.Cut(string(b), "\n"); strings.TrimSpace(first) == "module "+ModulePath {
				return d
			}
			return ""
		}
		parent := filepath.Dir(d)
		if parent == d {
			return ""
		}
		d = parent
	}
}

func orDash(s string) string {
	if s == "" {
		return "the kinetic binary"
	}
	return s
}

// RunnerImageRequest resolves the runner image of a Kubernetes submission.
type RunnerImageRequest struct {
	// Override is runner_image: used as is when set.
	Override string
	// Registry is image_registry: the runner goes to REGISTRY/kinetic-runner.
	Registry string
	// Source finds the binaries.
	Source RunnerSource
	// Progress receives publishing lines; nil is silent.
	Progress io.Writer
}

var (
	runnerGroup singleflight.Group
	runnerDone  sync.Map // registry → image by digest, once published or found
)

// ResolveRunnerImage is the runner image a job pod's init container should run:
// runner_image when set, else the runner index published to image_registry by this CLI
// (PublishRunner: one HEAD request when it is there, once per process and registry).
func (c *Client) ResolveRunnerImage(ctx context.Context, r RunnerImageRequest) (string, error) {
	if r.Override != "" {
		return r.Override, nil
	}
	if strings.TrimSpace(r.Registry) == "" {
		return "", fmt.Errorf("the runner image needs a registry job pods can pull from: set image_registry (kinetic up --backend k8s --registry HOST/PATH, or KINETIC_IMAGE_REGISTRY), or runner_image to a published runner image")
	}
	repo, err := ParseRepository(strings.TrimSuffix(strings.TrimSpace(r.Registry), "/") + "/" + RunnerRepoName)
	if err != nil {
		return "", fmt.Errorf("image_registry: %w", err)
	}
	key := repo.String()
	if v, ok := runnerDone.Load(key); ok {
		return v.(string), nil
	}
	v, err, _ := runnerGroup.Do(key, func() (any, error) {
		bins, err := r.Source.Binaries(ctx)
		if err != nil {
			return nil, err
		}
		d, err := c.PublishRunner(ctx, repo, bins, r.Progress)
		if err != nil {
			return nil, err
		}
		runnerDone.Store(key, d.Name())
		return d.Name(), nil
	})
	if err != nil {
		return "", err
	}
	return v.(string), nil
}

// RunnerImageFunc is the Kubernetes backends' Options.ResolveRunnerImage for one
// configuration: the single integration point between the image and the backends
// (engine.kubeOptions passes it).
func RunnerImageFunc(c *Client, r RunnerImageRequest) func(context.Context) (string, error) {
	return func(ctx context.Context) (string, error) { return c.ResolveRunnerImage(ctx, r) }
}
