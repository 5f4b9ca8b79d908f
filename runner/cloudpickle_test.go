package runner

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kinetic-run/kinetic/job"
)

// TestNoCloudpickle: a pickled call in a Python without cloudpickle (a real virtualenv
// without it) fails before anything of the user's runs, in the unpickle phase, with the
// image and the fix named and no traceback of the bootstrap's; cold and warm alike.
func TestNoCloudpickle(t *testing.T) {
	withIt := realPython(t, true)
	bare := filepath.Join(t.TempDir(), "bare")
	if out, err := exec.Command(withIt, "-m", "venv", "--without-pip", bare).CombinedOutput(); err != nil {
		t.Skipf("cannot make a virtualenv: %v\n%s", err, out)
	}
	py := filepath.Join(bare, "bin", "python")
	if exec.Command(py, "-c", "import cloudpickle").Run() == nil {
		t.Fatal("the bare virtualenv has cloudpickle")
	}
	payload := pickled(t, withIt, `
def f():
    open("/tmp/kinetic-no-cloudpickle-ran", "w").close()
    return 1
sys.stdout.buffer.write(cloudpickle.dumps((f, (), {})))`)
	for _, tc := range []struct {
		name, image, mode string
		cold              bool
		want              []string
	}{
		{"custom image", "registry.example/alice/model:1", "custom", true,
			[]string{"the image registry.example/alice/model:1 has no cloudpickle", "add cloudpickle to registry.example/alice/model:1 (pip install cloudpickle), or use container_image='bundled'"}},
		{"custom image, warm", "registry.example/alice/model:1", "custom", false,
			[]string{"add cloudpickle to registry.example/alice/model:1 (pip install cloudpickle)"}},
		{"no image", "", "", true,
			[]string{"the job's Python (" + py + ") has no cloudpickle", "-m pip install cloudpickle"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.py, h.cold = py, tc.cold
			ctx := context.Background()
			key, sum, err := h.st.PutBlob(ctx, payload)
			if err != nil {
				t.Fatal(err)
			}
			id := "no-cloudpickle"
			spec := &job.Spec{Version: job.SpecVersion, JobID: id, Kind: job.KindPickle, Python: py,
				Payload: &job.BlobRef{Key: key, SHA256: sum, Size: int64(len(payload))}, Image: tc.image, ImageMode: tc.mode}
			if tc.mode == "custom" {
				spec.ContainerImage = tc.image
			}
			h.putEnv(id, spec, nil)
			env := h.run(ctx, id, nil)
			if env.Success || env.Phase != job.PhaseUnpickle || env.ExcType != "kinetic.RunnerError" || env.Traceback != "" {
				t.Fatalf("envelope %+v: want a runner failure in the unpickle phase, no traceback", env)
			}
			for _, w := range tc.want {
				if !strings.Contains(env.ExcMessage, w) {
					t.Errorf("message %q lacks %q", env.ExcMessage, w)
				}
			}
			if r := env.FailureReason(); strings.Contains(r, "ImportError") || strings.Contains(r, "bootstrap") {
				t.Errorf("reason %q names the runner's internals", r)
			}
		})
	}
}
