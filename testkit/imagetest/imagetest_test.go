package imagetest

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

func TestMirrorFromDeb822(t *testing.T) {
	dir := t.TempDir()
	p := dir + "/debian.sources"
	writeFile(t, p, "Types: deb\nURIs: http://example.invalid/debian-security\nSuites: bookworm-security\n\nTypes: deb\nURIs: http://mirror.example/debian\nSuites: bookworm bookworm-updates\nComponents: main\n")
	if got := mirrorFromDeb822(p); got != "http://mirror.example/debian" {
		t.Fatalf("mirrorFromDeb822 = %q", got)
	}
	writeFile(t, p+".list", "# c\ndeb [arch=amd64] http://m.example/debian bookworm main\n")
	if got := mirrorFromList(p + ".list"); got != "http://m.example/debian" {
		t.Fatalf("mirrorFromList = %q", got)
	}
}

func TestRegistriesAndTinyBase(t *testing.T) {
	for _, tc := range []struct {
		name  string
		start func(testing.TB, ...string) *Registry
	}{
		{"in-process", func(t testing.TB, _ ...string) *Registry { return StartRegistry(t) }},
		{"docker-registry", StartDockerRegistry},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.start(t)
			ref := Push(t, TinyBase(t), r.Host+"/tiny:v1")
			img, err := remote.Image(ref)
			if err != nil {
				t.Fatal(err)
			}
			cf, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(strings.Join(cf.Config.Env, " "), "PYTHON_VERSION=3.11") {
				t.Fatalf("env = %v", cf.Config.Env)
			}
		})
	}
}

func TestPythonBaseRunsUnderPodman(t *testing.T) {
	if testing.Short() {
		t.Skip("makes a Debian rootfs and runs podman")
	}
	r := StartDockerRegistry(t)
	ref := PushPythonBase(t, r.Host)
	p := NewPodman(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	run := func() ([]byte, error) {
		return p.Command(ctx, "run", "--rm", "--network=host", "--tls-verify=false", ref.String(),
			"python3", "-c", "import cloudpickle, json, sys; print(json.dumps(sys.version_info[:2]))").CombinedOutput()
	}
	out, err := run()
	if err != nil && strings.Contains(string(out), "no such exit code") {
		// podman (4.3, runc, cgroupfs) under load sometimes asks its database for the exit
		// code before conmon has written it; the container itself ran. Once more.
		t.Logf("podman lost the exit code, running again:\n%s", out)
		out, err = run()
	}
	if err != nil {
		t.Fatalf("podman run: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "[3, 11]") {
		t.Fatalf("output %q", out)
	}
	if _, err := name.ParseReference(ref.String()); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}
