// Package frameworks_test runs the seeds' Keras example (examples/keras_train.py) with
// real jax and keras on the real single-node test cluster (testkit/kubetest) in bundled
// mode, as a user runs it: `python3 keras_train.py` with the SDK, a requirements.txt that
// lists keras and a filtered `jax==0.4.25` and no cloudpickle, and the kinetic binary.
// The bases have no cloudpickle, jax or keras (testkit/imagetest, framework.go): what the
// job imports, the runtime layer brought. The wheels come from the tools cache
// (testkit/pywheels, fetched from PyPI once by `make test-tools`); the requirements name
// them with --no-index and --find-links, so nothing is downloaded here. Needs root;
// KINETIC_SKIP_CLUSTER=1 skips it.
package frameworks_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/testkit/imagetest"
	"github.com/kinetic-run/kinetic/testkit/kubetest"
	"github.com/kinetic-run/kinetic/testkit/pywheels"
	"github.com/kinetic-run/kinetic/testkit/srcroot"
	"github.com/kinetic-run/kinetic/testkit/testbin"
)

// The images the tests push to the harness registry.
const (
	RunnerImage = kubetest.RegistryURL + "/kinetic-test/runner:frameworks"
	Bare311     = kubetest.RegistryURL + "/kinetic-test/python-bare:3.11"
	Bare312     = kubetest.RegistryURL + "/kinetic-test/python-bare:3.12"
)

var (
	cluster    *kubetest.Cluster
	clusterErr error
	kineticBin string
	wheels     string
	has312     error // nil when the 3.12 base and client are ready
	client312  string
)

func TestMain(m *testing.M) {
	code := func() int {
		if os.Getenv("KINETIC_SKIP_CLUSTER") == "1" {
			return m.Run()
		}
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
		defer cancel()
		if clusterErr = prepare(ctx); clusterErr != nil {
			return m.Run() // every test reports the error
		}
		cluster, clusterErr = kubetest.Start(ctx, kubetest.Options{Log: os.Stderr})
		if clusterErr != nil {
			return m.Run()
		}
		defer cluster.Stop()
		clusterErr = pushImages(ctx)
		logf("TestMain: the cluster and its images ready in %s", time.Since(start).Round(100*time.Millisecond))
		return m.Run()
	}()
	os.Exit(code)
}

func logf(format string, a ...any) { fmt.Fprintf(os.Stderr, format+"\n", a...) }

// prepare finds what `make test-tools` made: the binaries, the wheels, the 3.12 client.
// Nothing is built or downloaded here but what is missing from a machine where
// test-tools did not run (then the error says so).
func prepare(ctx context.Context) (err error) {
	if kineticBin, err = testbin.WithRunners(); err != nil {
		return err
	}
	if wheels, err = pywheels.Ready(); err != nil {
		return err
	}
	client312, has312 = pywheels.Client312Ready(ctx)
	return nil
}

// pushImages pushes the runner image and the bare bases (3.11; 3.12 when the machine has
// a CPython 3.12) to the harness registry, side by side.
func pushImages(ctx context.Context) error {
	t := time.Now()
	bare, err := imagetest.MakeBareBaseLayer()
	if err != nil {
		return err
	}
	var g errgroup.Group
	g.Go(func() error {
		runner := filepath.Join(filepath.Dir(kineticBin), "kinetic-runner-linux-amd64")
		return kubetest.PushFiles(ctx, RunnerImage, []kubetest.File{{Path: strings.TrimPrefix(job.RunnerPath, "/"), Source: runner, Mode: 0o755}}, []string{job.RunnerPath}, nil)
	})
	g.Go(func() error {
		return kubetest.PushLayerTars(ctx, Bare311, []string{bare}, []string{"/usr/bin/python3"}, imagetest.Env311)
	})
	if has312 == nil {
		g.Go(func() error {
			py312, err := imagetest.MakePython312Layer(ctx)
			if err != nil {
				return err
			}
			return kubetest.PushLayerTars(ctx, Bare312, []string{bare, py312}, []string{"/usr/local/bin/python3"}, imagetest.Env312)
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	logf("TestMain: images pushed (%s)", time.Since(t).Round(100*time.Millisecond))
	return nil
}

func needCluster(t *testing.T) *kubetest.Cluster {
	t.Helper()
	if os.Getenv("KINETIC_SKIP_CLUSTER") == "1" {
		t.Skip("KINETIC_SKIP_CLUSTER=1: no real cluster here")
	}
	if clusterErr != nil {
		t.Fatalf("the test cluster or its images are not ready: %v", clusterErr)
	}
	return cluster
}

var bucketMu sync.Mutex

// newStoreURL is a fresh bucket on the emulator, as the store URL pods reach.
func newStoreURL(t *testing.T) string {
	t.Helper()
	c := needCluster(t)
	bucketMu.Lock()
	name := fmt.Sprintf("kn-fw-%d", time.Now().UnixNano())
	bucketMu.Unlock()
	if err := c.GCS.MakeBucket(name); err != nil {
		t.Fatal(err)
	}
	return "gs://" + name + "?endpoint=" + c.GCS.URL()
}

// userEnv is the environment of a user of the test cluster in bundled mode on base.
func userEnv(t *testing.T, store, base string) []string {
	home := t.TempDir()
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KINETIC_") && !strings.HasPrefix(kv, "KERAS_") && !strings.HasPrefix(kv, "JAX_") && !strings.HasPrefix(kv, "PYTHONPATH=") {
			env = append(env, kv)
		}
	}
	return append(env,
		"HOME="+home, "KINETIC_HOME="+filepath.Join(home, "kinetic"), "KINETIC_PROFILES_FILE="+filepath.Join(home, "profiles.json"),
		"KINETIC_BIN="+kineticBin, "KINETIC_BACKEND=k8s", "KINETIC_STORE="+store, "KUBECONFIG="+cluster.Kubeconfig,
		"KINETIC_RUNNER_IMAGE="+RunnerImage, "KINETIC_IMAGE_REGISTRY="+kubetest.RegistryURL+"/kinetic-fw",
		"KINETIC_BASE_IMAGE_CPU="+base, "KINETIC_POD_CPU=100m", "KINETIC_IMAGE_PULL_GRACE=120s",
		"KINETIC_WARM_PODS=0", "PYTHONPATH="+srcroot.Join("python"),
	)
}

// kerasProject is a project with examples/keras_train.py and a requirements.txt naming
// the wheel directory, keras, and the given lines (jax pins); no cloudpickle.
func kerasProject(t *testing.T, lines ...string) string {
	t.Helper()
	dir := t.TempDir()
	src, err := os.ReadFile(srcroot.Join("examples", "keras_train.py"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "keras_train.py"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	req := append(append(pywheels.IndexLines(wheels), "keras"), lines...)
	if err := os.WriteFile(filepath.Join(dir, "requirements.txt"), []byte(strings.Join(req, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// run runs name args in dir with env and returns stdout and stderr.
func run(ctx context.Context, dir string, env []string, name string, args ...string) (string, string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = dir, env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err
}

// trained is what examples/keras_train.py printed about its job.
type trained struct {
	keras, backend, kerasBackendEnv, jax, python string
	loss, checksum                               float64
}

var (
	trainedRE = regexp.MustCompile(`(?m)^trained 2 epochs with keras (\S+) on (\S+) \(KERAS_BACKEND=(\S+)\), jax (\S+), python (\S+)$`)
	lossRE    = regexp.MustCompile(`(?m)^final loss (\S+) \(first epoch \S+\), weights checksum (\S+)$`)
)

func parseTrained(t *testing.T, out string) trained {
	t.Helper()
	m, l := trainedRE.FindStringSubmatch(out), lossRE.FindStringSubmatch(out)
	if m == nil || l == nil {
		t.Fatalf("keras_train.py did not print its result:\n%s", out)
	}
	r := trained{keras: m[1], backend: m[2], kerasBackendEnv: m[3], jax: m[4], python: m[5]}
	var err error
	if r.loss, err = strconv.ParseFloat(l[1], 64); err != nil {
		t.Fatalf("loss %q: %v", l[1], err)
	}
	if r.checksum, err = strconv.ParseFloat(l[2], 64); err != nil {
		t.Fatalf("checksum %q: %v", l[2], err)
	}
	return r
}

// runKeras runs keras_train.py in dir with python against the cluster on base and
// returns what the example printed.
func runKeras(t *testing.T, python, base, dir string) trained {
	t.Helper()
	return runKerasIn(t, python, dir, userEnv(t, newStoreURL(t), base))
}

func runKerasIn(t *testing.T, python, dir string, env []string) trained {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	start := time.Now()
	out, errOut, err := run(ctx, dir, env, python, "keras_train.py")
	if err != nil {
		t.Fatalf("%s keras_train.py: %v\n%s\n%s", python, err, out, errOut)
	}
	t.Logf("keras_train.py in %s:\n%s", time.Since(start).Round(100*time.Millisecond), out)
	r := parseTrained(t, out)

	// The job's own log line, streamed back while it ran. Not required: the values above
	// come from inside the job, and the stream of a pod that starts late under load has
	// been seen to bring nothing (TestKerasBundled reads the log through the binary).
	want := fmt.Sprintf("KERAS_BACKEND=jax keras %s backend jax jax %s on cpu python %s", r.keras, r.jax, r.python)
	if all := out + errOut; !strings.Contains(all, want) || !strings.Contains(all, "Epoch 2/2") {
		t.Logf("note: the call's streamed output has no line %q or no second epoch", want)
	}
	return r
}

// checkTrained holds what every run must show: two epochs of keras on jax, chosen by
// KERAS_BACKEND=jax from Kinetic, a finite loss and a checksum.
func checkTrained(t *testing.T, r trained, jax, python string) {
	t.Helper()
	if r.backend != "jax" || r.kerasBackendEnv != "jax" {
		t.Errorf("keras ran on %s with KERAS_BACKEND=%s, want jax from Kinetic's environment", r.backend, r.kerasBackendEnv)
	}
	if r.jax != jax {
		t.Errorf("the job ran jax %s, want %s", r.jax, jax)
	}
	if r.python != python {
		t.Errorf("the job ran Python %s, want %s", r.python, python)
	}
	if r.loss != r.loss || r.loss <= 0 || r.loss > 1e6 || r.checksum != r.checksum || r.checksum <= 0 {
		t.Errorf("loss %v, checksum %v: want a finite positive loss and a positive checksum", r.loss, r.checksum)
	}
}

// noneOf fails when the base image ref already has one of the runtime's packages: then
// the test would not prove that the layer brought it.
func noneOf(t *testing.T, ref string) {
	t.Helper()
	for _, f := range []string{"cloudpickle/__init__.py", "jax/__init__.py", "keras/__init__.py"} {
		if imagetest.HasFile(t, ref, f) {
			t.Fatalf("the base %s has %s: the test would not show that the runtime layer brings it", ref, f)
		}
	}
}

// TestKerasBundled (issue 44, 3b): the seeds' Keras example on the cluster in bundled
// mode, on a Debian 3.11 base without cloudpickle, jax or keras; requirements list keras
// and jax==0.4.25 (dropped by the JAX filter). The job trains with the runtime's jax,
// keras on the JAX backend because Kinetic set KERAS_BACKEND=jax.
//
// Then the example's function again with run_async and result(cleanup=False), and its
// log read through the binary, `kinetic jobs logs ID`, after the end (the image is the
// one the first call built): it says KERAS_BACKEND=jax and the runtime's jax, and two
// epochs ran.
func TestKerasBundled(t *testing.T) {
	t.Parallel()
	needCluster(t)
	noneOf(t, Bare311)
	dir := kerasProject(t, "jax==0.4.25")
	env := userEnv(t, newStoreURL(t), Bare311)
	r := runKerasIn(t, "/usr/bin/python3", dir, env)
	checkTrained(t, r, pywheels.Pin("jax"), "3.11")

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	driver := "import keras_train\nh = keras_train.train.run_async()\nprint('JOB', h.job_id, flush=True)\nprint('VALUE', h.result(cleanup=False))\n"
	if err := os.WriteFile(filepath.Join(dir, "driver.py"), []byte(driver), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := run(ctx, dir, env, "/usr/bin/python3", "driver.py")
	m := regexp.MustCompile(`(?m)^JOB (job-\S+)$`).FindStringSubmatch(out)
	if err != nil || m == nil || !strings.Contains(out, "'keras_backend_env': 'jax'") {
		t.Fatalf("run_async of the example's function: %v\n%s\n%s", err, out, errOut)
	}
	logs, errOut, err := run(ctx, dir, env, kineticBin, "jobs", "logs", m[1])
	if err != nil {
		t.Fatalf("kinetic jobs logs %s: %v\n%s", m[1], err, errOut)
	}
	want := fmt.Sprintf("KERAS_BACKEND=jax keras %s backend jax jax %s on cpu python 3.11", r.keras, pywheels.Pin("jax"))
	if !strings.Contains(logs, want) || !strings.Contains(logs, "Epoch 2/2") {
		t.Errorf("kinetic jobs logs %s: no line %q or no second epoch:\n%s", m[1], want, logs)
	}
	t.Logf("kinetic jobs logs %s:\n%s", m[1], logs)
}

// TestKerasKeepPin (issue 44, 3c): a `# kn:keep` pin of another jax version wins over the
// runtime's.
func TestKerasKeepPin(t *testing.T) {
	t.Parallel()
	needCluster(t)
	r := runKeras(t, "/usr/bin/python3", Bare311, kerasProject(t, "jax=="+pywheels.KeepJax+"  # kn:keep"))
	checkTrained(t, r, pywheels.KeepJax, "3.11")
}

// TestKerasPython312 (issue 44, 3d): the client is CPython 3.12 (pyenv's, with only
// cloudpickle: make test-tools made it); with a 3.12 base the job runs on 3.12, with
// the runtime's wheels for cp312.
func TestKerasPython312(t *testing.T) {
	t.Parallel()
	needCluster(t)
	if has312 != nil {
		t.Skipf("no Python 3.12 client: %v", has312)
	}
	noneOf(t, Bare312)
	r := runKeras(t, client312, Bare312, kerasProject(t, "jax==0.4.25"))
	checkTrained(t, r, pywheels.Pin("jax"), "3.12")
}
