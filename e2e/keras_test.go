package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/kinetic-run/kinetic/testkit/pywheels"
)

// TestExampleKeras (issue 44, 3a) runs examples/keras_train.py, the seeds' Keras example,
// on the local backend as a user runs it: `python3 keras_train.py` with a requirements.txt
// that lists keras and `jax==0.4.25` (the JAX filter drops it: the wheel directory has no
// 0.4.25, so a pin that got through would fail to install) and no cloudpickle, and names
// the framework wheels `make test-tools` fetched (testkit/pywheels) with --no-index and
// --find-links. The job's virtual environment gets keras and the runtime's jax; keras
// runs on JAX because Kinetic set KERAS_BACKEND=jax; the loss is finite.
func TestExampleKeras(t *testing.T) {
	if testing.Short() {
		t.Skip("installs jax and keras into a virtual environment")
	}
	wheels, err := pywheels.Ready()
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t)
	dir := filepath.Join(e.home, "keras-proj")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(repoRoot(), "examples", "keras_train.py"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "keras_train.py"), src, 0o644)
	req := append(pywheels.IndexLines(wheels), "keras", "jax==0.4.25")
	os.WriteFile(filepath.Join(dir, "requirements.txt"), []byte(strings.Join(req, "\n")+"\n"), 0o644)

	// The caller's KERAS_BACKEND or JAX_PLATFORMS would hide what Kinetic sets.
	t.Setenv("KERAS_BACKEND", "")
	os.Unsetenv("KERAS_BACKEND")
	out := runExample(t, e, dir, nil, "keras_train.py")
	t.Logf("keras_train.py:\n%s", out)
	jax := regexp.QuoteMeta(pywheels.Pin("jax"))
	wantLines(t, "keras_train.py", out,
		`KERAS_BACKEND=jax keras \S+ backend jax jax `+jax+` on cpu python 3\.\d+`, // the job's own log line
		`Epoch 2/2`,
		`(?m)^trained 2 epochs with keras \S+ on jax \(KERAS_BACKEND=jax\), jax `+jax+`, python 3\.\d+$`)
	m := regexp.MustCompile(`(?m)^final loss (\S+) \(first epoch \S+\), weights checksum (\S+)$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no final loss printed:\n%s", out)
	}
	loss, err1 := strconv.ParseFloat(m[1], 64)
	sum, err2 := strconv.ParseFloat(m[2], 64)
	if err1 != nil || err2 != nil || loss != loss || loss <= 0 || loss > 1e6 || sum != sum || sum <= 0 {
		t.Errorf("loss %q, checksum %q: want a finite positive loss and a positive checksum", m[1], m[2])
	}
}
