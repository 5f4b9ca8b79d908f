package e2e

import (
	"context"
	"errors"
	"os"
	"os/exec"
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
	py := os.Getenv("PYTHON") // exampleCmd's interpreter
	if py == "" {
		py = "python3"
	}
	v, err := exec.Command(py, "-c", "import sys; print('%d.%d' % sys.version_info[:2])").Output()
	if err != nil {
		t.Fatalf("%s: %v", py, err)
	}
	runKerasLocal(t, strings.TrimSpace(string(v)))
}

// TestExampleKerasPython312 is TestExampleKeras from a client on CPython 3.12 (the
// Python 3.12 client `make test-tools` made, testkit/pywheels): the job's environment is
// made from that interpreter, with the runtime's wheels for cp312, and runs on 3.12.
func TestExampleKerasPython312(t *testing.T) {
	if testing.Short() {
		t.Skip("installs jax and keras into a virtual environment")
	}
	py, err := pywheels.Client312Ready(context.Background())
	if errors.Is(err, pywheels.ErrNoPython312) {
		t.Skipf("no Python 3.12 client: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("PYTHON", py) // exampleCmd's interpreter
	runKerasLocal(t, "3.12")
}

// runKerasLocal runs keras_train.py on the local backend with $PYTHON (python3 by
// default) and checks that it trained on the runtime's jax on Python python.
func runKerasLocal(t *testing.T, python string) {
	t.Helper()
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
		`KERAS_BACKEND=jax keras \S+ backend jax jax `+jax+` on cpu python `+regexp.QuoteMeta(python), // the job's own log line
		`Epoch 2/2`,
		`(?m)^trained 2 epochs with keras \S+ on jax \(KERAS_BACKEND=jax\), jax `+jax+`, python `+regexp.QuoteMeta(python)+`$`)
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
