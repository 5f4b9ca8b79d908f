package image

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/testkit/srcroot"
)

// countingRegistry is an in-process registry that counts requests by method.
func countingRegistry(t *testing.T) (host string, reqs func() map[string]int) {
	t.Helper()
	var n syncCounts
	h := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.add(r.Method)
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://"), n.snapshot
}

type syncCounts struct {
	get, head, put, post, patch atomic.Int64
}

func (c *syncCounts) add(m string) {
	switch m {
	case http.MethodGet:
		c.get.Add(1)
	case http.MethodHead:
		c.head.Add(1)
	case http.MethodPut:
		c.put.Add(1)
	case http.MethodPost:
		c.post.Add(1)
	case http.MethodPatch:
		c.patch.Add(1)
	}
}

func (c *syncCounts) snapshot() map[string]int {
	return map[string]int{"GET": int(c.get.Load()), "HEAD": int(c.head.Load()), "PUT": int(c.put.Load()), "POST": int(c.post.Load()), "PATCH": int(c.patch.Load())}
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// TestPublishRunnerCrossCompiled builds the runner index from source for both
// platforms (one of them is never this machine's), pushes it, checks every image holds
// only the binary for its own architecture, then checks the warm path is one HEAD.
func TestPublishRunnerCrossCompiled(t *testing.T) {
	if testing.Short() {
		t.Skip("cross-compiles kinetic-runner twice")
	}
	ctx := context.Background()
	src := srcroot.MustDir()
	exe := filepath.Join(t.TempDir(), "kinetic") // a CLI with no prebuilt runners beside it
	os.WriteFile(exe, []byte("not a binary"), 0o755)
	cache := t.TempDir()
	s := RunnerSource{Exe: exe, SourceDir: src, CacheDir: cache}
	start := time.Now()
	bins, err := s.Binaries(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cross-compiled %v in %.1fs", bins, time.Since(start).Seconds())
	machines := map[string]elf.Machine{"linux/amd64": elf.EM_X86_64, "linux/arm64": elf.EM_AARCH64}
	for p, b := range bins {
		f, err := elf.Open(b)
		if err != nil {
			t.Fatal(err)
		}
		if f.Machine != machines[p] {
			t.Errorf("%s: %s is %v", p, b, f.Machine)
		}
		f.Close()
		fi, _ := os.Stat(b)
		t.Logf("%s: %d bytes", p, fi.Size())
	}
	// The cache gives the same binaries without building.
	again, err := s.Binaries(ctx)
	if err != nil || again["linux/arm64"] != bins["linux/arm64"] {
		t.Fatalf("cached binaries: %v %v", again, err)
	}

	host, reqs := countingRegistry(t)
	repo, err := ParseRepository(host + "/kinetic/kinetic-runner")
	if err != nil {
		t.Fatal(err)
	}
	c := &Client{}
	start = time.Now()
	d, err := c.PublishRunner(ctx, repo, bins, nil)
	if err != nil {
		t.Fatal(err)
	}
	cold := reqs()
	t.Logf("cold publish %s: %.2fs, requests %v", d, time.Since(start).Seconds(), cold)

	idx, err := remote.Index(d)
	if err != nil {
		t.Fatal(err)
	}
	if mt, _ := idx.MediaType(); mt != types.OCIImageIndex {
		t.Errorf("index media type %s", mt)
	}
	im, _ := idx.IndexManifest()
	if len(im.Manifests) != 2 {
		t.Fatalf("index has %d manifests", len(im.Manifests))
	}
	var compressed int64
	for _, m := range im.Manifests {
		p := m.Platform.OS + "/" + m.Platform.Architecture
		img, err := idx.Image(m.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, _ := img.ConfigFile()
		if cf.Architecture != m.Platform.Architecture || cf.OS != "linux" {
			t.Errorf("%s: config says %s/%s", p, cf.OS, cf.Architecture)
		}
		layers, _ := img.Layers()
		if len(layers) != 1 {
			t.Fatalf("%s: %d layers, want only the binary", p, len(layers))
		}
		sz, _ := layers[0].Size()
		compressed += sz
		rc, _ := layers[0].Uncompressed()
		tr := tar.NewReader(rc)
		var files []string
		for {
			h, err := tr.Next()
			if err != nil {
				break
			}
			if h.Typeflag == tar.TypeReg {
				files = append(files, h.Name)
				b, _ := io.ReadAll(tr)
				f, err := elf.NewFile(bytes.NewReader(b))
				if err != nil || f.Machine != machines[p] || h.Mode&0o111 == 0 {
					t.Errorf("%s: %s is not an executable for %s (%v)", p, h.Name, p, err)
				}
			}
		}
		rc.Close()
		if len(files) != 1 || "/"+files[0] != job.RunnerPath {
			t.Errorf("%s: files %v, want only %s", p, files, job.RunnerPath)
		}
	}
	t.Logf("compressed layers: %d bytes for both platforms", compressed)

	// Warm: the tag is there; one HEAD, nothing pushed.
	before := reqs()
	start = time.Now()
	d2, err := c.PublishRunner(ctx, repo, bins, nil)
	warm := time.Since(start)
	if err != nil || d2 != d {
		t.Fatalf("warm publish %v %v, want %v", d2, err, d)
	}
	after := reqs()
	if total(after)-total(before) != 1 || after["HEAD"]-before["HEAD"] != 1 {
		t.Errorf("warm publish made requests %v → %v, want one HEAD", before, after)
	}
	t.Logf("warm check: %.3fs", warm.Seconds())
	if warm > 300*time.Millisecond {
		t.Errorf("warm check took %s, want ≤0.3 s", warm)
	}
}

// TestPublishRunnerPrebuilt: binaries next to the CLI are used as they are, tags follow
// the content, and the resolver needs a registry.
func TestPublishRunnerPrebuilt(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	exe := filepath.Join(dir, "kinetic")
	os.WriteFile(exe, []byte("cli"), 0o755)
	for _, a := range []string{"amd64", "arm64"} {
		os.WriteFile(filepath.Join(dir, "kinetic-runner-linux-"+a), []byte("runner for "+a), 0o755)
	}
	bins, err := RunnerSource{Exe: exe}.Binaries(ctx)
	if err != nil || len(bins) != 2 || bins["linux/arm64"] != filepath.Join(dir, "kinetic-runner-linux-arm64") {
		t.Fatalf("prebuilt: %v %v", bins, err)
	}
	tag1, _ := RunnerTag(bins)
	os.WriteFile(filepath.Join(dir, "kinetic-runner-linux-arm64"), []byte("another runner for arm64"), 0o755)
	os.Chtimes(filepath.Join(dir, "kinetic-runner-linux-arm64"), time.Now(), time.Now().Add(time.Second))
	tag2, _ := RunnerTag(bins)
	if tag1 == tag2 || !strings.HasPrefix(tag1, "sha256-") || len(tag1) != 71 {
		t.Errorf("tags %s %s", tag1, tag2)
	}

	host, reqs := countingRegistry(t)
	c := &Client{}
	got, err := c.ResolveRunnerImage(ctx, RunnerImageRequest{Registry: host + "/team", Source: RunnerSource{Exe: exe}})
	if err != nil || !strings.HasPrefix(got, host+"/team/kinetic-runner@sha256:") {
		t.Fatalf("resolve: %q %v", got, err)
	}
	n := total(reqs())
	if again, _ := c.ResolveRunnerImage(ctx, RunnerImageRequest{Registry: host + "/team", Source: RunnerSource{Exe: exe}}); again != got || total(reqs()) != n {
		t.Errorf("a second resolution in one process: %s, %d more requests", again, total(reqs())-n)
	}
	if got, _ := c.ResolveRunnerImage(ctx, RunnerImageRequest{Override: "example.com/r@sha256:abc"}); got != "example.com/r@sha256:abc" {
		t.Errorf("override: %s", got)
	}
	if _, err := c.ResolveRunnerImage(ctx, RunnerImageRequest{}); err == nil || !strings.Contains(err.Error(), "image_registry") {
		t.Errorf("no registry: %v", err)
	}
	// The platform of each manifest.
	d, _ := ParseReference(got)
	idx, err := remote.Index(d)
	if err != nil {
		t.Fatal(err)
	}
	im, _ := idx.IndexManifest()
	var plats []string
	for _, m := range im.Manifests {
		plats = append(plats, (&v1.Platform{OS: m.Platform.OS, Architecture: m.Platform.Architecture}).String())
	}
	if strings.Join(plats, ",") != "linux/amd64,linux/arm64" {
		t.Errorf("platforms %v", plats)
	}
}

func TestRunnerSourceMissing(t *testing.T) {
	exe := filepath.Join(t.TempDir(), "kinetic")
	os.WriteFile(exe, []byte("cli"), 0o755)
	t.Setenv("KINETIC_SOURCE_DIR", "")
	t.Chdir(t.TempDir())
	_, err := RunnerSource{Exe: exe}.Binaries(context.Background())
	if !errors.Is(err, ErrNoRunnerBinaries) || !strings.Contains(err.Error(), "kinetic-runner-linux-arm64") || !strings.Contains(err.Error(), "KINETIC_SOURCE_DIR") {
		t.Errorf("err = %v", err)
	}
}

// The Makefile's runner targets build with the same flags as BuildRunners, so a
// release's binaries and ones built from source are the same size and contents.
func TestMakefileRunnerFlags(t *testing.T) {
	b, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	var line string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "RUNNER_FLAGS :=") {
			line = strings.TrimSpace(strings.TrimPrefix(l, "RUNNER_FLAGS :="))
		}
	}
	want := strings.Join(RunnerBuildFlags, " ")
	want = strings.Replace(want, "-ldflags=-s -w", "-ldflags='-s -w'", 1)
	if line != want {
		t.Fatalf("Makefile RUNNER_FLAGS = %q, image.RunnerBuildFlags = %q", line, want)
	}
}
