package image

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/kinetic-run/kinetic/testkit/imagetest"
)

func TestParseChoice(t *testing.T) {
	for _, tc := range []struct {
		in, mode, ref, err string
	}{
		{in: "", mode: "bundled"},
		{in: "bundled", mode: "bundled"},
		{in: " prebuilt ", mode: "prebuilt"},
		{in: "us-docker.pkg.dev/p/r/img:v1", mode: "custom", ref: "us-docker.pkg.dev/p/r/img:v1"},
		{in: "python:3.11", mode: "custom", ref: "index.docker.io/library/python:3.11"},
		{in: "127.0.0.1:5000/x@sha256:" + strings.Repeat("a", 64), mode: "custom", ref: "127.0.0.1:5000/x@sha256:" + strings.Repeat("a", 64)},
		{in: "Bundled", err: `write "bundled" in lower case`},
		{in: "https://gcr.io/x/y", err: "leave out the scheme"},
		{in: "gcr.io/X/Y:1", err: "invalid image reference"},
		{in: "a b", err: "white space"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			c, err := ParseChoice(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want it to contain %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(c.Mode) != tc.mode {
				t.Fatalf("mode = %s, want %s", c.Mode, tc.mode)
			}
			if tc.ref != "" && c.Ref.Name() != tc.ref {
				t.Fatalf("ref = %s, want %s", c.Ref.Name(), tc.ref)
			}
		})
	}
}

func TestLoopbackIsPlainHTTP(t *testing.T) {
	for in, want := range map[string]string{"127.0.0.1:5000/a:b": "http", "localhost:5000/a:b": "http", "[::1]:5000/a:b": "http", "gcr.io/a:b": "https", "10.85.0.1:5000/a:b": "http" /* RFC 1918, as go-containerregistry */, "8.8.8.8:5000/a:b": "https"} {
		r, err := ParseReference(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Context().Registry.Scheme(); got != want {
			t.Errorf("%s: scheme %s, want %s", in, got, want)
		}
	}
}

func TestSettingsRefs(t *testing.T) {
	s := Settings{Registry: "127.0.0.1:5000/team", BaseImageRepo: "us-docker.pkg.dev/p/bases", Version: "0.3.0+dev", Bases: map[string]string{"cpu": "127.0.0.1:5000/py:3.11"}}
	key := strings.Repeat("ab", 32)
	b, err := s.BundledRef(key)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff("127.0.0.1:5000/team/kinetic-env:"+key, b.String()); diff != "" {
		t.Fatal(diff)
	}
	p, err := s.PrebuiltRef("gpu")
	if err != nil {
		t.Fatal(err)
	}
	// Prebuilt bases are per Python: the client's, DefaultPython when it did not say.
	if diff := cmp.Diff("us-docker.pkg.dev/p/bases/base-gpu:0.3.0-dev-py"+DefaultPython, p.String()); diff != "" {
		t.Fatal(diff)
	}
	if base, _ := s.Base("cpu"); base.String() != "127.0.0.1:5000/py:3.11" || s.BaseSetting("cpu") != "base_image_cpu" {
		t.Fatalf("base cpu = %s (%s)", base, s.BaseSetting("cpu"))
	}
	if base, _ := s.Base("tpu"); base.String() != "docker.io/library/python:"+DefaultPython+"-slim" || s.BaseSetting("tpu") != "" {
		t.Fatalf("base tpu = %s (%s)", base, s.BaseSetting("tpu"))
	}
	s12 := s
	s12.Python = "3.12"
	if base, _ := s12.Base("gpu"); base.String() != "docker.io/library/python:3.12-slim" {
		t.Fatalf("base gpu for Python 3.12 = %s", base)
	}
	if base, _ := s12.Base("cpu"); base.String() != "127.0.0.1:5000/py:3.11" {
		t.Fatalf("a configured base changed with the client's Python: %s", base)
	}
	if p, _ := s12.PrebuiltRef("tpu"); p.String() != "us-docker.pkg.dev/p/bases/base-tpu:0.3.0-dev-py3.12" {
		t.Fatalf("prebuilt tpu for Python 3.12 = %s", p)
	}
	for name, err := range map[string]error{
		"no registry":  func() error { _, err := (Settings{}).BundledRef(key); return err }(),
		"no repo":      func() error { _, err := (Settings{}).PrebuiltRef("cpu"); return err }(),
		"bad category": func() error { _, err := s.PrebuiltRef("fpga"); return err }(),
	} {
		if err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestResolve(t *testing.T) {
	s := Settings{Registry: "reg.example/team", BaseImageRepo: "reg.example/bases", Version: "1.2.3"}
	key := strings.Repeat("c", 64)
	custom, _ := ParseChoice("reg.example/mine:v1")
	for _, tc := range []struct {
		c    Choice
		want string
	}{
		{Choice{Mode: Bundled}, "reg.example/team/kinetic-env:" + key},
		{Choice{Mode: Prebuilt}, "reg.example/bases/base-tpu:1.2.3-py" + DefaultPython},
		{custom, "reg.example/mine:v1"},
	} {
		r, err := Resolve(tc.c, key, "tpu", s)
		if err != nil {
			t.Fatal(err)
		}
		if r.String() != tc.want {
			t.Errorf("%s: %s, want %s", tc.c.Mode, r, tc.want)
		}
	}
	if _, err := Resolve(Choice{Mode: Bundled}, key, "fpga", s); err == nil || !strings.Contains(err.Error(), "cpu, gpu, tpu") {
		t.Errorf("bad category: %v", err)
	}
}

func TestTargetPlatforms(t *testing.T) {
	tg := Target{Python: "3.11", Arch: "amd64", Glibc: "2.19"}
	if got := (Target{Python: "3.11", Arch: "amd64", Glibc: "2.5"}).Platforms(); got[0] != "manylinux_2_31_x86_64" {
		t.Fatalf("glibc 2.5: platforms %v, want the default 2.31 first", got)
	}
	got := tg.Platforms()
	want := []string{"manylinux_2_19_x86_64"}
	if got[0] != want[0] || got[len(got)-1] != "manylinux1_x86_64" {
		t.Fatalf("platforms = %v", got)
	}
	args := strings.Join(Target{Python: "3.12", Arch: "arm64", Glibc: "2.36"}.PipArgs(), " ")
	for _, w := range []string{"--python-version 3.12", "--abi cp312", "--platform manylinux_2_36_aarch64", "--platform manylinux_2_17_aarch64", "--only-binary=:all:"} {
		if !strings.Contains(args, w) {
			t.Errorf("pip args %q lack %q", args, w)
		}
	}
}

// wheelDir makes a find-links directory with one pure-Python wheel.
func wheelDir(t *testing.T, name, version string) string {
	t.Helper()
	dir := t.TempDir()
	mod := strings.ReplaceAll(name, "-", "_")
	if _, err := imagetest.Wheel(dir, name, version, map[string][]byte{mod + "/__init__.py": []byte("VALUE = " + "'" + version + "'\n")}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// countingBuilder counts builds.
type countingBuilder struct {
	Builder
	n atomic.Int32
}

func (c *countingBuilder) Build(ctx context.Context, r *BuildRequest) (name.Digest, error) {
	c.n.Add(1)
	return c.Builder.Build(ctx, r)
}

func TestEnsureBuildsOnceThenHitsWithOneRequest(t *testing.T) {
	reg := imagetest.StartRegistry(t)
	base := imagetest.Push(t, imagetest.TinyBase(t), reg.Host+"/tiny:base")
	links := wheelDir(t, "kn-demo", "1.0")
	target, err := name.NewTag(reg.Host+"/kinetic-env:"+strings.Repeat("1", 64), name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	b := &countingBuilder{Builder: &Daemonless{}}
	e := &Ensurer{Builder: b, LockDir: t.TempDir()}
	req := &BuildRequest{
		Base: base, Target: target,
		Requirements: []string{"--no-index", "--find-links " + links, "kn-demo==1.0"},
		Labels:       map[string]string{LabelEnvKey: "k"},
	}
	ctx := context.Background()

	// Concurrent first submissions: one build.
	var wg sync.WaitGroup
	results := make([]Result, 4)
	errs := make([]error, 4)
	for i := range results {
		wg.Add(1)
		go func() { defer wg.Done(); results[i], errs[i] = e.Ensure(ctx, req) }()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := b.n.Load(); n != 1 {
		t.Fatalf("%d builds, want 1", n)
	}

	img, err := remote.Image(results[0].Ref)
	if err != nil {
		t.Fatal(err)
	}
	files := imageFiles(t, img)
	for _, f := range []string{"kinetic/site-packages/kn_demo/__init__.py", "bin/busybox"} {
		if _, ok := files[f]; !ok {
			t.Errorf("image lacks %s", f)
		}
	}
	// No pod runs a kinetic binary from a bundled image (the backends inject theirs at
	// job.RunnerPath), so the image carries none.
	for f := range files {
		if strings.HasPrefix(f, "kinetic/bin") {
			t.Errorf("bundled image holds %s", f)
		}
	}
	cf, _ := img.ConfigFile()
	if !contains(cf.Config.Env, "PYTHONPATH="+SitePackages) || cf.Config.Labels[LabelEnvKey] != "k" {
		t.Fatalf("config env %v labels %v", cf.Config.Env, cf.Config.Labels)
	}

	// A second submission (a new Ensurer: a new process) is one registry request.
	reg.ResetRequests()
	e2 := &Ensurer{Builder: b}
	r, err := e2.Ensure(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Cached || r.Ref.String() != results[0].Ref.String() {
		t.Fatalf("second ensure = %+v, want a cache hit of %s", r, results[0].Ref)
	}
	if diff := cmp.Diff([]string{"HEAD /v2/kinetic-env/manifests/" + target.TagStr()}, reg.Requests()); diff != "" {
		t.Fatalf("warm lookup requests (-want +got):\n%s", diff)
	}
	if n := b.n.Load(); n != 1 {
		t.Fatalf("%d builds after the hit, want 1", n)
	}

	// The same inputs build the same image (reproducible layers).
	target2 := target.Context().Tag(strings.Repeat("2", 64))
	req2 := *req
	req2.Target = target2
	r2, err := e2.Ensure(ctx, &req2)
	if err != nil {
		t.Fatal(err)
	}
	if r2.Ref.(name.Digest).DigestStr() != results[0].Ref.(name.Digest).DigestStr() {
		t.Fatalf("rebuild digest %s differs from %s", r2.Ref, results[0].Ref)
	}
}

func TestBuildErrors(t *testing.T) {
	reg := imagetest.StartRegistry(t)
	base := imagetest.Push(t, imagetest.TinyBase(t), reg.Host+"/tiny:base")
	tag := func(host string) name.Tag {
		tg, err := name.NewTag(host+"/kinetic-env:"+strings.Repeat("3", 64), name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		return tg
	}
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := l.Addr().String()
	l.Close()
	missingBase, _ := name.ParseReference(reg.Host+"/nope:1", name.Insecure)
	noPython := imagetest.Push(t, mustEmptyish(t), reg.Host+"/nopython:1")
	links := wheelDir(t, "kn-demo", "1.0")
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		req  BuildRequest
		is   error
		msg  string
	}{
		{"bad base", BuildRequest{Base: missingBase, Target: tag(reg.Host)}, nil, "base image " + missingBase.String() + " was not found"},
		{"unreachable registry", BuildRequest{Base: base, Target: tag(closed)}, ErrUnreachable, closed},
		{"missing wheel", BuildRequest{Base: base, Target: tag(reg.Host), Requirements: []string{"--no-index", "--find-links " + links, "kn-absent==2.0"}}, ErrMissingWheel, "kn-absent==2.0 has no wheel for Python 3.11"},
		{"no python in base", BuildRequest{Base: noPython, Target: tag(reg.Host), Requirements: []string{"kn-demo"}}, nil, "bundled images need a base with python3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := (&Ensurer{}).Ensure(ctx, &tc.req)
			if err == nil {
				t.Fatal("no error")
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %v is not %v", err, tc.is)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %q lacks %q", err, tc.msg)
			}
		})
	}
}

// mustEmptyish is an image with one file and no Python anywhere.
func mustEmptyish(t *testing.T) v1.Image {
	l, err := imagetest.LayerFromFiles(map[string][]byte{"etc/hostname": []byte("x\n")})
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(imagetestEmpty(), l)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func imageFiles(t *testing.T, img v1.Image) map[string]int64 {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	out := map[string]int64{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out[strings.TrimPrefix(h.Name, "/")] = h.Mode
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// TestEnsureAcrossProcessesBuildsOnce: two Ensurers (as two processes: separate
// singleflight groups) sharing the lock directory race on one tag; one builds, the other
// finds the image after the lock and builds nothing.
func TestEnsureAcrossProcessesBuildsOnce(t *testing.T) {
	reg := imagetest.StartRegistry(t)
	base := imagetest.Push(t, imagetest.TinyBase(t), reg.Host+"/tiny:base")
	target, _ := name.NewTag(reg.Host+"/kinetic-env:"+strings.Repeat("8", 64), name.Insecure)
	locks := t.TempDir()
	b := &countingBuilder{Builder: &Daemonless{}}
	req := &BuildRequest{Base: base, Target: target}
	var wg sync.WaitGroup
	res := make([]Result, 2)
	errs := make([]error, 2)
	for i := range res {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[i], errs[i] = (&Ensurer{Builder: b, LockDir: locks}).Ensure(context.Background(), req)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := b.n.Load(); n != 1 {
		t.Fatalf("%d builds, want 1", n)
	}
	if res[0].Ref.String() != res[1].Ref.String() || res[0].Cached == res[1].Cached {
		t.Fatalf("results %+v and %+v: want the same digest, one built and one found", res[0], res[1])
	}
}
