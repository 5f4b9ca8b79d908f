package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/kinetic-run/kinetic/testkit/imagetest"
)

// TestCustomImageWithoutCloudpickle: a pickled call (the Python SDK) in a custom image
// whose Python has no cloudpickle — the test's Python base with a layer that deletes its
// cloudpickle (an OCI whiteout), run by podman — fails before the function runs, with the
// image and the fix named as the job's reason, and no traceback of the runner's.
func TestCustomImageWithoutCloudpickle(t *testing.T) {
	if testing.Short() {
		t.Skip("builds images and runs podman")
	}
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		t.Skip("needs Debian's python3 with cloudpickle (the SDK's tests use it)")
	}
	_, reg, base, e := imageEnv(t)
	img, err := remote.Image(base)
	if err != nil {
		t.Fatal(err)
	}
	wh, err := imagetest.LayerFromFiles(map[string][]byte{"usr/lib/python3/dist-packages/.wh.cloudpickle": nil})
	if err != nil {
		t.Fatal(err)
	}
	if img, err = mutate.AppendLayers(img, wh); err != nil {
		t.Fatal(err)
	}
	bare := imagetest.Push(t, img, reg.Host+"/no-cloudpickle:1").String()
	os.WriteFile(filepath.Join(e.dir, "requirements.txt"), nil, 0o644)
	script := filepath.Join(e.dir, "sdk.py")
	os.WriteFile(script, []byte(`import sys, kinetic
@kinetic.run(accelerator="cpu", container_image=sys.argv[1])
def f():
    print("THE FUNCTION RAN")
    return 1
h = f.run_async()
try:
    h.result()
    print("SUCCEEDED")
except Exception as e:
    print("RAISED", type(e).__name__, e)
print("STATUS", h.status())
`), 0o644)
	cmd := exec.Command(py, script, bare)
	cmd.Dir = e.dir
	cmd.Env = append(os.Environ(), "KINETIC_BIN="+e.bin, "KINETIC_HOME="+filepath.Join(e.home, "data"),
		"KINETIC_PROFILES_FILE="+filepath.Join(e.home, "profiles.json"), "PYTHONPATH="+filepath.Join(repoRoot(), "python"),
		"KINETIC_CONTAINER=podman", "KINETIC_IMAGE_REGISTRY="+reg.Host+"/kn", "KINETIC_BASE_IMAGE_CPU="+base.String())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, out, stderr.String())
	}
	got := string(out)
	for _, want := range []string{
		"RAISED",
		"the image " + bare + " has no cloudpickle",
		"add cloudpickle to " + bare + " (pip install cloudpickle), or use container_image='bundled'",
		"STATUS JobStatus.FAILED",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s\nstderr:\n%s", want, got, stderr.String())
		}
	}
	for _, not := range []string{"THE FUNCTION RAN", "SUCCEEDED", "Traceback", "bootstrap.py"} {
		if strings.Contains(got, not) {
			t.Errorf("output has %q:\n%s", not, got)
		}
	}
}
