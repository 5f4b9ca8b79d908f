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
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/testkit/imagetest"
)

// pushEnv pushes a small environment image for linux/arch to host/team/kinetic-env (a
// Docker manifest, or OCI) and returns it by digest.
func pushEnv(t *testing.T, host, arch string, oci bool) (name.Digest, v1.Image) {
	t.Helper()
	return pushImage(t, host+"/team/kinetic-env", arch, oci)
}

// pushImage pushes a small image for linux/arch to repo (a Docker manifest, or OCI),
// tagged ARCH-KIND, and returns it by digest.
func pushImage(t *testing.T, repo, arch string, oci bool) (name.Digest, v1.Image) {
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
	ref := imagetest.Push(t, img, repo+":"+arch+"-"+kind)
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
	reg := imagetest.StartProxy(t, imagetest.StartDockerRegistry(t).Host)
	runner, bins := publishRunner(t, reg.Host, "", "linux/amd64", "linux/arm64")
	c := &Client{}
	for _, arch := range []string{"amd64", "arm64"} {
		for _, oci := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s-oci-%v", arch, oci), func(t *testing.T) {
				env, envImg := pushEnv(t, reg.Host, arch, oci)
				reg.Take()
				w, err := c.AddRunner(ctx, env, env.Context(), runner.String(), nil)
				if err != nil {
					t.Fatal(err)
				}
				push := reg.Take()
				if w.Runner != runner || w.Image.Context() != env.Context() {
					t.Errorf("AddRunner = %+v: want the runner %s, the image in %s", w, runner, env.Context())
				}
				rl := runnerLayer(t, runner, arch)
				rd, _ := rl.Digest()
				// The first time in this repository (the Docker manifest runs first):
				// the runner layer mounted from the runner's repository, not uploaded,
				// and the only blob uploaded (PATCH) the new configuration. The second
				// (OCI, the same blobs): nothing but the manifest.
				if !oci && (imagetest.Count(push, "POST", "mount="+rd.String(), "from=team/kinetic-runner", " 201") != 1 || imagetest.Count(push, "PATCH") != 1) {
					t.Errorf("the push:\n%s\nwant the runner layer %s mounted and only the configuration uploaded", strings.Join(push, "\n"), rd)
				}
				if oci && (imagetest.Count(push, "POST") != 0 || imagetest.Count(push, "HEAD", "/blobs/"+rd.String(), " 200") != 1 || imagetest.Count(push, "PUT") != 1) {
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
				reg.Take()
				if again, err := c.AddRunner(ctx, env, env.Context(), runner.String(), nil); err != nil || again != w || len(reg.Take()) != 0 {
					t.Errorf("again in this process: %+v %v", again, err)
				}
				withRunnerDone.Clear()
				again, err := c.AddRunner(ctx, env, env.Context(), runner.String(), nil)
				if reqs := reg.Take(); err != nil || again != w || len(reqs) != 1 || imagetest.Count(reqs, "HEAD", "/manifests/runner-") != 1 {
					t.Errorf("another process: %+v %v, requests %q: want one HEAD", again, err, reqs)
				}
			})
		}
	}

	t.Run("NewRunner", func(t *testing.T) {
		env, _ := pushEnv(t, reg.Host, "amd64", false)
		w1, err := c.AddRunner(ctx, env, env.Context(), runner.String(), nil)
		if err != nil {
			t.Fatal(err)
		}
		runner2, _ := publishRunner(t, reg.Host, " v2", "linux/amd64", "linux/arm64")
		reg.Take()
		w2, err := c.AddRunner(ctx, env, env.Context(), runner2.String(), nil)
		if err != nil {
			t.Fatal(err)
		}
		reqs := reg.Take()
		if w2.Image == w1.Image || w2.Runner != runner2 {
			t.Errorf("a new runner: %+v, the old %+v", w2, w1)
		}
		// The environment's layers are there: nothing of them is uploaded again.
		if imagetest.Count(reqs, "PATCH") != 1 || imagetest.Count(reqs, "PUT", "/manifests/") != 1 {
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
		if w3, err := c.AddRunner(ctx, env, env.Context(), tag.String(), nil); err != nil || w3 != w2 {
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
			_, err := c.AddRunner(ctx, tc.env, tc.env.Context(), tc.runner, nil)
			if !errors.Is(err, ErrRunnerNotAdded) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: %v, want ErrRunnerNotAdded saying %q", name, err, tc.want)
			}
		}
		if w, err := c.AddRunner(ctx, amdEnv, amdEnv.Context(), singleRef.String(), nil); err != nil || w.Runner.Context().String() != singleRef.Context().String() {
			t.Errorf("one image of the right platform: %+v %v", w, err)
		}
		if _, err := c.AddRunner(ctx, amdEnv, amdEnv.Context(), reg.Host+"/team/no-such-runner:1", nil); err == nil || !strings.Contains(err.Error(), "runner_image") {
			t.Errorf("a runner image that does not exist: %v", err)
		}
	})
}

// TestAddRunnerToAUsersImage: an image a user gave, in another repository of the
// registry, gets the runner added in Kinetic's repository: its layers mounted from the
// user's repository and the runner's from the runner's, only a configuration and a
// manifest written, and nothing at all in the user's repository; another process finds
// it with one HEAD. An image that has the runner already is used as it is; one in
// another registry is refused without a request; and a registry that would not mount
// the user's layers gets no copy of them.
func TestAddRunnerToAUsersImage(t *testing.T) {
	ctx := context.Background()
	docker := imagetest.StartDockerRegistry(t)
	reg := imagetest.StartProxy(t, docker.Host)
	runner, bins := publishRunner(t, reg.Host, "", "linux/amd64")
	user, userImg := pushImage(t, reg.Host+"/alice/model", "amd64", false)
	into, err := ParseRepository(reg.Host + "/team/kinetic-env")
	if err != nil {
		t.Fatal(err)
	}
	c := &Client{}
	reg.Take()
	w, err := c.AddRunner(ctx, user, into, runner.String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	push := reg.Take()
	if w.Image.Context() != into || w.Runner != runner {
		t.Errorf("AddRunner = %+v: want the image in %s, the runner %s", w, into, runner)
	}
	um, _ := userImg.Manifest()
	rl, _ := runnerLayer(t, runner, "amd64").Digest()
	for _, l := range um.Layers {
		if imagetest.Count(push, "POST", "/team/kinetic-env/blobs/uploads/", "mount="+l.Digest.String(), "from=alice/model", " 201") != 1 {
			t.Errorf("the user's layer %s was not mounted from alice/model", l.Digest)
		}
	}
	if imagetest.Count(push, "POST", "mount="+rl.String(), "from=team/kinetic-runner", " 201") != 1 ||
		imagetest.Count(push, "PATCH") != 1 || imagetest.Count(push, "PUT", "/team/kinetic-env/manifests/"+WithRunnerTag(user, runner)) != 1 {
		t.Errorf("want the runner's layer mounted, only the configuration uploaded and the manifest written")
	}
	for _, r := range push {
		if !strings.HasPrefix(r, "GET ") && !strings.HasPrefix(r, "HEAD ") && !strings.Contains(r, "/team/kinetic-env/") {
			t.Errorf("a write outside Kinetic's repository: %s", r)
		}
	}
	if t.Failed() {
		t.Logf("the push:\n%s", strings.Join(push, "\n"))
	}
	img, err := remote.Image(w.Image)
	if err != nil {
		t.Fatal(err)
	}
	files := filesOf(t, img)
	want, _ := os.ReadFile(bins["linux/amd64"])
	if files[strings.TrimPrefix(job.RunnerPath, "/")] != "755 "+string(want) || !strings.HasPrefix(files["etc/os-release"], "644 ID=kinetic-tiny") {
		t.Errorf("the image's files: %v", files)
	}

	reg.Take()
	withRunnerDone.Clear() // another process
	again, err := c.AddRunner(ctx, user, into, runner.String(), nil)
	if reqs := reg.Take(); err != nil || again != w || len(reqs) != 1 || imagetest.Count(reqs, "HEAD", "/team/kinetic-env/manifests/runner-") != 1 {
		t.Errorf("another process: %+v %v, requests %q: want one HEAD", again, err, reqs)
	}

	t.Run("HasTheRunner", func(t *testing.T) {
		// The user pushed the image with the runner to their own repository.
		mine := imagetest.Push(t, img, reg.Host+"/alice/model:with-runner")
		d := mine.Context().Digest(w.Image.DigestStr())
		reg.Take()
		got, err := c.AddRunner(ctx, d, into, runner.String(), nil)
		reqs := reg.Take()
		if err != nil || got.Image != d || got.Runner != runner {
			t.Errorf("AddRunner = %+v %v: want %s as it is", got, err, d)
		}
		if n := imagetest.Count(reqs, "PUT") + imagetest.Count(reqs, "POST") + imagetest.Count(reqs, "PATCH"); n != 0 {
			t.Errorf("%d writes for an image with the runner:\n%s", n, strings.Join(reqs, "\n"))
		}
	})

	t.Run("AnotherRegistry", func(t *testing.T) {
		other, err := ParseReference("docker.io/library/python@sha256:" + strings.Repeat("a", 64))
		if err != nil {
			t.Fatal(err)
		}
		reg.Take()
		if _, err := c.AddRunner(ctx, other.(name.Digest), into, runner.String(), nil); !errors.Is(err, ErrRunnerNotAdded) || len(reg.Take()) != 0 {
			t.Errorf("an image in another registry: %v, want ErrRunnerNotAdded and no request", err)
		}
	})

	t.Run("NoMount", func(t *testing.T) {
		// Fault injection: a registry that ignores mount requests (the upload starts).
		rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: docker.Host})
		srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			q := r.URL.Query()
			q.Del("mount")
			q.Del("from")
			r.URL.RawQuery = q.Encode()
			rp.ServeHTTP(rw, r)
		}))
		defer srv.Close()
		host := srv.Listener.Addr().String()
		d, err := ParseReference(host + "/alice/model@" + user.DigestStr())
		if err != nil {
			t.Fatal(err)
		}
		to, _ := ParseRepository(host + "/bob/kinetic-env")
		r, _ := ParseReference(host + "/team/kinetic-runner@" + runner.DigestStr())
		_, err = c.AddRunner(ctx, d.(name.Digest), to, r.String(), nil)
		if !errors.Is(err, ErrRunnerNotAdded) || !strings.Contains(err.Error(), "did not mount") {
			t.Errorf("a registry that would not mount: %v, want ErrRunnerNotAdded", err)
		}
		for _, l := range um.Layers {
			resp, err := http.Head("http://" + docker.Host + "/v2/bob/kinetic-env/blobs/" + l.Digest.String())
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusNotFound {
				t.Errorf("the user's layer %s in bob/kinetic-env: %s, want it not copied", l.Digest, resp.Status)
			}
		}
	})
}

// TestRunnerRepository: a user's image gets the runner in image_registry's bundled
// repository when it is in that registry, and nowhere otherwise.
func TestRunnerRepository(t *testing.T) {
	for _, tc := range []struct {
		name, registry, img, want string
	}{
		{"same registry", "registry.example/team", "registry.example/alice/model:1", "registry.example/team/kinetic-env"},
		{"same repository", "127.0.0.1:5000/team", "127.0.0.1:5000/team/model@sha256:" + strings.Repeat("b", 64), "127.0.0.1:5000/team/kinetic-env"},
		{"another registry", "registry.example/team", "docker.io/library/python:3.11", ""},
		{"Docker Hub by short name", "registry.example/team", "python:3.11", ""},
		{"another port", "127.0.0.1:5000/team", "127.0.0.1:5001/team/model:1", ""},
		{"no image_registry", "", "registry.example/alice/model:1", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img, err := ParseReference(tc.img)
			if err != nil {
				t.Fatal(err)
			}
			repo, ok := Settings{Registry: tc.registry}.RunnerRepository(img)
			got := ""
			if ok {
				got = repo.String()
			}
			if got != tc.want {
				t.Errorf("RunnerRepository(%s) with image_registry=%q: %q, want %q", tc.img, tc.registry, got, tc.want)
			}
		})
	}
}
