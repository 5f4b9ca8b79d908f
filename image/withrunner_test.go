package image

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/testkit/imagetest"
)

// recordingProxy is a reverse proxy in front of a registry that records each request
// ("METHOD PATH?QUERY STATUS"), so a test sees what a push did against the real
// registry (docker-registry, which mounts blobs across repositories).
type recordingProxy struct {
	Host string
	mu   sync.Mutex
	reqs []string
}

func newRecordingProxy(t *testing.T, registryHost string) *recordingProxy {
	t.Helper()
	p := &recordingProxy{}
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: registryHost})
	rp.ModifyResponse = func(r *http.Response) error {
		p.mu.Lock()
		q, _ := url.QueryUnescape(r.Request.URL.RawQuery)
		p.reqs = append(p.reqs, fmt.Sprintf("%s %s?%s %d", r.Request.Method, r.Request.URL.Path, q, r.StatusCode))
		p.mu.Unlock()
		return nil
	}
	srv := httptest.NewServer(rp)
	t.Cleanup(srv.Close)
	p.Host = srv.Listener.Addr().String()
	return p
}

// take returns the requests recorded since the last take.
func (p *recordingProxy) take() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.reqs
	p.reqs = nil
	return out
}

// count is how many of reqs are method requests whose line holds every one of parts.
func count(reqs []string, method string, parts ...string) int {
	n := 0
	for _, r := range reqs {
		ok := strings.HasPrefix(r, method+" ")
		for _, p := range parts {
			ok = ok && strings.Contains(r, p)
		}
		if ok {
			n++
		}
	}
	return n
}

// pushEnv pushes a small environment image for linux/arch to host/team/kinetic-env (a
// Docker manifest, or OCI) and returns it by digest.
func pushEnv(t *testing.T, host, arch string, oci bool) (name.Digest, v1.Image) {
	t.Helper()
	img := imagetest.TinyBase(t)
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", arch
	cf.Config.Labels = map[string]string{LabelEnvKey: "env-" + arch}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatal(err)
	}
	kind := "docker"
	if oci {
		img = mutate.ConfigMediaType(mutate.MediaType(img, types.OCIManifestSchema1), types.OCIConfigJSON)
		kind = "oci"
	}
	ref := imagetest.Push(t, img, host+"/team/kinetic-env:"+arch+"-"+kind)
	h, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	d, err := ParseReference(ref.Context().Digest(h.String()).String())
	if err != nil {
		t.Fatal(err)
	}
	return d.(name.Digest), img
}

// publishRunner publishes a runner index of fake binaries ("runner for ARCH" + extra)
// for platforms to host/team/kinetic-runner, as PublishRunner does for real ones.
func publishRunner(t *testing.T, host, extra string, platforms ...string) (name.Digest, map[string]string) {
	t.Helper()
	dir := t.TempDir()
	bins := map[string]string{}
	for _, p := range platforms {
		f := filepath.Join(dir, strings.ReplaceAll(p, "/", "-"))
		if err := os.WriteFile(f, []byte("runner for "+p+extra), 0o755); err != nil {
			t.Fatal(err)
		}
		bins[p] = f
	}
	repo, err := ParseRepository(host + "/team/kinetic-runner")
	if err != nil {
		t.Fatal(err)
	}
	d, err := (&Client{}).PublishRunner(context.Background(), repo, bins, nil)
	if err != nil {
		t.Fatal(err)
	}
	return d, bins
}

// runnerLayer is the one layer of runner's image for linux/arch.
func runnerLayer(t *testing.T, runner name.Digest, arch string) v1.Layer {
	t.Helper()
	img, err := remote.Image(runner, remote.WithPlatform(v1.Platform{OS: "linux", Architecture: arch}))
	if err != nil {
		t.Fatal(err)
	}
	ls, err := img.Layers()
	if err != nil || len(ls) != 1 {
		t.Fatalf("runner image for %s: %d layers, %v", arch, len(ls), err)
	}
	return ls[0]
}

// filesOf reads the flattened file system of img: path → (mode, content).
func filesOf(t *testing.T, img v1.Image) map[string]string {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	out := map[string]string{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		out[strings.TrimPrefix(h.Name, "/")] = fmt.Sprintf("%o %s", h.Mode&0o777, b)
	}
}

// TestAddRunner checks the image with the runner in it against the real registry, for
// both platforms of the runner index and both manifest schemas: the environment's
// layers unchanged and then the runner image's own layer of that platform (the same
// digest: mounted from the runner's repository, not uploaded), the environment's
// configuration with the runner's label, the binary at job.RunnerPath; then that a
// second process finds it with one request, that this process asks nothing again, and
// that a new runner costs a manifest and a config.
func TestAddRunner(t *testing.T) {
	ctx := context.Background()
	reg := newRecordingProxy(t, imagetest.StartDockerRegistry(t).Host)
	runner, bins := publishRunner(t, reg.Host, "", "linux/amd64", "linux/arm64")
	c := &Client{}
	for _, arch := range []string{"amd64", "arm64"} {
		for _, oci := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s-oci-%v", arch, oci), func(t *testing.T) {
				env, envImg := pushEnv(t, reg.Host, arch, oci)
				reg.take()
				w, err := c.AddRunner(ctx, env, runner.String(), nil)
				if err != nil {
					t.Fatal(err)
				}
				push := reg.take()
				if w.Runner != runner || w.Image.Context() != env.Context() {
					t.Errorf("AddRunner = %+v: want the runner %s, the image in %s", w, runner, env.Context())
				}
				rl := runnerLayer(t, runner, arch)
				rd, _ := rl.Digest()
				// The first time in this repository (the Docker manifest runs first):
				// the runner layer mounted from the runner's repository, not uploaded,
				// and the only blob uploaded (PATCH) the new configuration. The second
				// (OCI, the same blobs): nothing but the manifest.
				if !oci && (count(push, "POST", "mount="+rd.String(), "from=team/kinetic-runner", " 201") != 1 || count(push, "PATCH") != 1) {
					t.Errorf("the push:\n%s\nwant the runner layer %s mounted and only the configuration uploaded", strings.Join(push, "\n"), rd)
				}
				if oci && (count(push, "POST") != 0 || count(push, "HEAD", "/blobs/"+rd.String(), " 200") != 1 || count(push, "PUT") != 1) {
					t.Errorf("the push:\n%s\nwant the runner layer %s found and only the manifest written", strings.Join(push, "\n"), rd)
				}
				if h, ok, err := c.Lookup(ctx, env.Context().Tag(WithRunnerTag(env, runner))); err != nil || !ok || h.String() != w.Image.DigestStr() {
					t.Errorf("the tag of env and runner: %v %v %v, want %s", h, ok, err, w.Image.DigestStr())
				}

				img, err := remote.Image(w.Image)
				if err != nil {
					t.Fatal(err)
				}
				m, err := img.Manifest()
				if err != nil {
					t.Fatal(err)
				}
				em, _ := envImg.Manifest()
				if len(m.Layers) != len(em.Layers)+1 || m.MediaType != em.MediaType {
					t.Fatalf("%d layers (%s), want the environment's %d (%s) and one", len(m.Layers), m.MediaType, len(em.Layers), em.MediaType)
				}
				for i, l := range em.Layers {
					if m.Layers[i].Digest != l.Digest {
						t.Errorf("layer %d: %s, want the environment's %s", i, m.Layers[i].Digest, l.Digest)
					}
				}
				last := m.Layers[len(m.Layers)-1]
				wantMT := types.DockerLayer
				if oci {
					wantMT = types.OCILayer
				}
				if last.Digest != rd || last.MediaType != wantMT {
					t.Errorf("the added layer: %s (%s), want the runner image's %s layer %s (%s)", last.Digest, last.MediaType, arch, rd, wantMT)
				}
				cf, err := img.ConfigFile()
				if err != nil {
					t.Fatal(err)
				}
				ecf, _ := envImg.ConfigFile()
				rdiff, _ := rl.DiffID()
				if cf.Architecture != arch || cf.OS != "linux" || strings.Join(cf.Config.Env, " ") != strings.Join(ecf.Config.Env, " ") ||
					cf.Config.Labels[LabelEnvKey] != "env-"+arch || cf.Config.Labels[LabelRunner] != runner.String() ||
					len(cf.RootFS.DiffIDs) != len(ecf.RootFS.DiffIDs)+1 || cf.RootFS.DiffIDs[len(cf.RootFS.DiffIDs)-1] != rdiff {
					t.Errorf("configuration: %+v", cf)
				}
				files := filesOf(t, img)
				want, _ := os.ReadFile(bins["linux/"+arch])
				if got := files[strings.TrimPrefix(job.RunnerPath, "/")]; got != "755 "+string(want) {
					t.Errorf("%s in the image: %q, want %q", job.RunnerPath, got, "755 "+string(want))
				}
				if !strings.HasPrefix(files["etc/os-release"], "644 ID=kinetic-tiny") {
					t.Errorf("the environment's files: %q", files["etc/os-release"])
				}

				// This process: no request. Another process: one HEAD.
				reg.take()
				if again, err := c.AddRunner(ctx, env, runner.String(), nil); err != nil || again != w || len(reg.take()) != 0 {
					t.Errorf("again in this process: %+v %v", again, err)
				}
				withRunnerDone.Clear()
				again, err := c.AddRunner(ctx, env, runner.String(), nil)
				if reqs := reg.take(); err != nil || again != w || len(reqs) != 1 || count(reqs, "HEAD", "/manifests/runner-") != 1 {
					t.Errorf("another process: %+v %v, requests %q: want one HEAD", again, err, reqs)
				}
			})
		}
	}

	t.Run("NewRunner", func(t *testing.T) {
		env, _ := pushEnv(t, reg.Host, "amd64", false)
		w1, err := c.AddRunner(ctx, env, runner.String(), nil)
		if err != nil {
			t.Fatal(err)
		}
		runner2, _ := publishRunner(t, reg.Host, " v2", "linux/amd64", "linux/arm64")
		reg.take()
		w2, err := c.AddRunner(ctx, env, runner2.String(), nil)
		if err != nil {
			t.Fatal(err)
		}
		reqs := reg.take()
		if w2.Image == w1.Image || w2.Runner != runner2 {
			t.Errorf("a new runner: %+v, the old %+v", w2, w1)
		}
		// The environment's layers are there: nothing of them is uploaded again.
		if count(reqs, "PATCH") != 1 || count(reqs, "PUT", "/manifests/") != 1 {
			t.Errorf("a new runner pushed:\n%s\nwant one configuration and one manifest", strings.Join(reqs, "\n"))
		}
		// A runner given by tag is resolved to its digest: the same image.
		tag := runner2.Context().Tag("v2")
		idx, err := remote.Index(runner2)
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.WriteIndex(tag, idx); err != nil {
			t.Fatal(err)
		}
		if w3, err := c.AddRunner(ctx, env, tag.String(), nil); err != nil || w3 != w2 {
			t.Errorf("by tag: %+v %v, want %+v", w3, err, w2)
		}
	})

	t.Run("CannotAdd", func(t *testing.T) {
		armEnv, _ := pushEnv(t, reg.Host, "arm64", false)
		amdOnly, _ := publishRunner(t, reg.Host, " amd64 only", "linux/amd64")
		// One image (not an index) of the other platform.
		one := runnerLayer(t, amdOnly, "amd64")
		single, err := mutate.AppendLayers(imagetestEmpty(), one)
		if err != nil {
			t.Fatal(err)
		}
		scf, _ := single.ConfigFile()
		scf = scf.DeepCopy()
		scf.OS, scf.Architecture = "linux", "amd64"
		single, _ = mutate.ConfigFile(single, scf)
		singleRef := imagetest.Push(t, single, reg.Host+"/team/single-runner:1")
		// A runner image of two layers.
		two, err := mutate.AppendLayers(single, one)
		if err != nil {
			t.Fatal(err)
		}
		twoRef := imagetest.Push(t, two, reg.Host+"/team/fat-runner:1")
		amdEnv, _ := pushEnv(t, reg.Host, "amd64", false)
		for name, tc := range map[string]struct {
			env    name.Digest
			runner string
			want   string
		}{
			"index without the platform": {armEnv, amdOnly.String(), "no image for linux/arm64"},
			"one image of another":       {armEnv, singleRef.String(), "is for linux/amd64"},
			"two layers":                 {amdEnv, twoRef.String(), "has 2 layers"},
		} {
			_, err := c.AddRunner(ctx, tc.env, tc.runner, nil)
			if !errors.Is(err, ErrRunnerNotAdded) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: %v, want ErrRunnerNotAdded saying %q", name, err, tc.want)
			}
		}
		if w, err := c.AddRunner(ctx, amdEnv, singleRef.String(), nil); err != nil || w.Runner.Context().String() != singleRef.Context().String() {
			t.Errorf("one image of the right platform: %+v %v", w, err)
		}
		if _, err := c.AddRunner(ctx, amdEnv, reg.Host+"/team/no-such-runner:1", nil); err == nil || !strings.Contains(err.Error(), "runner_image") {
			t.Errorf("a runner image that does not exist: %v", err)
		}
	})
}
