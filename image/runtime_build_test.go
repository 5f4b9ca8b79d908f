package image

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/kinetic-run/kinetic/testkit/imagetest"
)

// TestBaseRuntimeLayer: a prebuilt base gets the runtime layer (here fake pure-Python
// wheels named jax, jaxlib, keras and cloudpickle at the pinned versions, from a local
// directory: no index is reached), is tagged with its Python and labelled with it; a
// base whose Python is not the one asked for is refused, naming both.
func TestBaseRuntimeLayer(t *testing.T) {
	reg := imagetest.StartRegistry(t)
	base := imagetest.Push(t, imagetest.TinyBase(t), reg.Host+"/tiny:base") // Python 3.11, by its config
	links := t.TempDir()
	for n, v := range map[string]string{"jax": JaxVersion, "jaxlib": JaxVersion, "keras": KerasVersion, "cloudpickle": CloudpickleVersion} {
		if _, err := imagetest.Wheel(links, n, v, map[string][]byte{n + "/__init__.py": []byte("__version__ = '" + v + "'\n")}); err != nil {
			t.Fatal(err)
		}
	}
	repo, err := name.NewRepository(reg.Host+"/bases", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	req, err := BaseRequest(repo, "cpu", "1.0", "", "3.11", base)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(req.Target.String(), "/bases/base-cpu:1.0-py3.11") {
		t.Errorf("target %s", req.Target)
	}
	req.Requirements = append([]string{"--no-index", "--find-links " + links}, req.Requirements...)
	ctx := context.Background()
	d := &Daemonless{Client: &Client{}}
	dg, err := d.Build(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(dg)
	if err != nil {
		t.Fatal(err)
	}
	files := imageFiles(t, img)
	for _, n := range []string{"jax", "jaxlib", "keras", "cloudpickle"} {
		if _, ok := files["kinetic/site-packages/"+n+"/__init__.py"]; !ok {
			t.Errorf("the base lacks %s", n)
		}
	}
	if cf, _ := img.ConfigFile(); cf.Config.Labels[LabelPython] != "3.11" {
		t.Errorf("labels %v", cf.Config.Labels)
	}

	req312, err := BaseRequest(repo, "cpu", "1.0", "", "3.12", base)
	if err != nil {
		t.Fatal(err)
	}
	req312.BaseSetting = "--base"
	_, err = d.Build(ctx, req312)
	var mm *PythonMismatchError
	if !errors.As(err, &mm) || !strings.Contains(err.Error(), "has Python 3.11, but the client runs Python 3.12") || !strings.Contains(err.Error(), "set --base to a Python 3.12 image") {
		t.Errorf("a 3.11 base for 3.12: %v", err)
	}
	// The engine builders are checked from the configuration before they start.
	if err := PrecheckPython(ctx, &Client{}, &EngineBuilder{Command: "podman"}, req312); !errors.As(err, &mm) {
		t.Errorf("precheck: %v", err)
	}
	if _, err := BaseRequest(repo, "cpu", "1.0", "", "3.9", base); err == nil || !strings.Contains(err.Error(), "--python") {
		t.Errorf("Python 3.9: %v", err)
	}
}

// TestRuntimeLayerShared: the runtime's wheels (the roots and what they require among the
// chosen wheels) go into a layer of their own under the user's, so two images with
// different user requirements share that layer's blob, and an image of the runtime alone
// is that same layer.
func TestRuntimeLayerShared(t *testing.T) {
	reg := imagetest.StartRegistry(t)
	base := imagetest.Push(t, imagetest.TinyBase(t), reg.Host+"/tiny:base")
	links := t.TempDir()
	wheel := func(n, v, meta string) {
		if _, err := imagetest.WheelWithMetadata(links, n, v, meta, map[string][]byte{strings.ReplaceAll(n, "-", "_") + "/__init__.py": []byte("V = '" + v + "'\n")}); err != nil {
			t.Fatal(err)
		}
	}
	wheel("jax", JaxVersion, "Requires-Dist: numpy>=1.0\nRequires-Dist: pytest ; extra == \"test\"\n")
	wheel("jaxlib", JaxVersion, "")
	wheel("keras", KerasVersion, "")
	wheel("cloudpickle", CloudpickleVersion, "")
	wheel("numpy", "1.0", "")
	wheel("kn-a", "1.0", "")
	wheel("kn-b", "1.0", "")
	rt := MustRuntimeRequirements("cpu")
	ctx := context.Background()
	d := &Daemonless{Client: &Client{}}
	build := func(tag string, user ...string) []string {
		t.Helper()
		target, err := name.NewTag(reg.Host+"/kinetic-env:"+tag, name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		lines := append(append([]string{"--no-index", "--find-links " + links}, user...), append(rt, "numpy==1.0")...)
		dg, err := d.Build(ctx, &BuildRequest{Base: base, Target: target, Requirements: lines, Runtime: RuntimeProjects("cpu")})
		if err != nil {
			t.Fatal(err)
		}
		img, err := remote.Image(dg)
		if err != nil {
			t.Fatal(err)
		}
		ls, _ := img.Layers()
		var out []string
		for _, l := range ls {
			h, _ := l.Digest()
			out = append(out, h.String())
		}
		return out
	}
	a := build("a", "kn-a==1.0")
	b := build("b", "kn-b==1.0")
	alone := build("alone")
	if len(a) != 3 || len(b) != 3 || len(alone) != 2 {
		t.Fatalf("layers: a %d, b %d, runtime alone %d; want base+runtime+user, base+runtime+user, base+runtime", len(a), len(b), len(alone))
	}
	if a[1] != b[1] || a[1] != alone[1] {
		t.Errorf("the runtime layer differs: %s, %s, %s", a[1], b[1], alone[1])
	}
	if a[2] == b[2] {
		t.Error("the user layers of different requirements are the same")
	}
	if got := RuntimeProjects("tpu"); strings.Join(got, ",") != "jax,keras,cloudpickle" {
		t.Errorf("RuntimeProjects(tpu) = %v", got)
	}
}
