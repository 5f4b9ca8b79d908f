package pyenv

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kinetic-run/kinetic/testkit/tier"
)

const buildMsg = "kinetic: building Python environment"

// pythons returns the interpreters to test with: python3 on PATH and Debian's
// /usr/bin/python3 when it is a different one. Tests skip without any.
func pythons(t *testing.T) []string {
	t.Helper()
	tier.Heavy(t, "makes virtual environments with pip")
	var out []string
	seen := map[string]bool{}
	for _, p := range []string{"python3", "/usr/bin/python3"} {
		path, err := exec.LookPath(p)
		if err != nil {
			continue
		}
		real, _ := exec.Command(path, "-c", "import sys; print(sys.base_prefix)").Output()
		if seen[string(real)] {
			continue
		}
		seen[string(real)] = true
		out = append(out, path)
	}
	if len(out) == 0 {
		t.Skip("no python3 interpreter")
	}
	return out
}

// wheel writes a pure-Python wheel NAME-VERSION-py3-none-any.whl into dir whose
// package NAME has VERSION = "VERSION".
func wheel(t *testing.T, dir, name, version string) {
	t.Helper()
	distInfo := fmt.Sprintf("%s-%s.dist-info", name, version)
	files := []struct{ path, body string }{
		{name + "/__init__.py", fmt.Sprintf("VERSION = %q\n", version)},
		{distInfo + "/METADATA", fmt.Sprintf("Metadata-Version: 2.1\nName: %s\nVersion: %s\n", name, version)},
		{distInfo + "/WHEEL", "Wheel-Version: 1.0\nGenerator: kinetic-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"},
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	var record strings.Builder
	for _, f := range files {
		w, err := zw.Create(f.path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(f.body)); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256([]byte(f.body))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", f.path, base64.RawURLEncoding.EncodeToString(sum[:]), len(f.body))
	}
	fmt.Fprintf(&record, "%s/RECORD,,\n", distInfo)
	w, err := zw.Create(distInfo + "/RECORD")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte(record.String())); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-%s-py3-none-any.whl", name, version)), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// wheelhouse returns a directory with kpkg_alpha 1.0 and kpkg_beta 2.0.
func wheelhouse(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	wheel(t, dir, "kpkg_alpha", "1.0")
	wheel(t, dir, "kpkg_beta", "2.0")
	return dir
}

func offline(wheels string, reqs ...string) []string {
	return append([]string{"--no-index", "--find-links " + wheels}, reqs...)
}

func pyOutput(t *testing.T, py, code string) string {
	t.Helper()
	out, err := exec.Command(py, "-c", code).CombinedOutput()
	if err != nil {
		t.Fatalf("%s -c %q: %v\n%s", py, code, err, out)
	}
	return strings.TrimSpace(string(out))
}

func TestEnsureInstallsAndCaches(t *testing.T) {
	t.Parallel()
	wheels := wheelhouse(t)
	for _, base := range pythons(t) {
		t.Run(strings.ReplaceAll(base, "/", "_"), func(t *testing.T) {
			ctx := context.Background()
			cache := t.TempDir()
			lines := offline(wheels, "kpkg-alpha==1.0", "kpkg_beta")
			var stderr bytes.Buffer
			py, err := Ensure(ctx, cache, "k1", base, lines, &stderr)
			if err != nil {
				t.Fatalf("Ensure: %v\nstderr:\n%s", err, stderr.String())
			}
			if want := filepath.Join(cache, "k1", "bin", "python"); py != want {
				t.Errorf("python = %q, want %q", py, want)
			}
			if got := pyOutput(t, py, "import kpkg_alpha, kpkg_beta; print(kpkg_alpha.VERSION, kpkg_beta.VERSION)"); got != "1.0 2.0" {
				t.Errorf("versions = %q", got)
			}
			// --system-site-packages: the base interpreter's packages (pip at least)
			// stay importable, and the environment is a real venv.
			if got := pyOutput(t, py, "import sys, pip; print(sys.prefix != sys.base_prefix)"); got != "True" {
				t.Errorf("not a venv with system site packages: %q", got)
			}
			if !strings.Contains(stderr.String(), buildMsg) {
				t.Errorf("stderr lacks build message:\n%s", stderr.String())
			}

			// Second call: cache hit, no pip run, nothing written.
			stderr.Reset()
			start := time.Now()
			py2, err := Ensure(ctx, cache, "k1", base, lines, &stderr)
			if err != nil {
				t.Fatal(err)
			}
			if d := time.Since(start); d > 500*time.Millisecond {
				t.Errorf("cache hit took %v", d)
			}
			if py2 != py || stderr.Len() != 0 {
				t.Errorf("second Ensure = %q, stderr %q; want %q and silence", py2, stderr.String(), py)
			}
		})
	}
}

func TestEnsureEmptyReturnsBase(t *testing.T) {
	t.Parallel()
	cache := filepath.Join(t.TempDir(), "cache")
	for _, lines := range [][]string{nil, {}, {"", "# comment"}, {"--index-url https://example.com/simple", "--pre"}} {
		py, err := Ensure(context.Background(), cache, "k", "python3", lines, nil)
		if err != nil || py != "python3" {
			t.Errorf("Ensure(%q) = %q, %v; want python3", lines, py, err)
		}
	}
	if _, err := os.Stat(cache); !os.IsNotExist(err) {
		t.Errorf("cache dir created for an empty environment: %v", err)
	}
}

func TestEnsureMissingWheelFailsClean(t *testing.T) {
	t.Parallel()
	wheels := wheelhouse(t)
	base := pythons(t)[0]
	cache := t.TempDir()
	var stderr bytes.Buffer
	_, err := Ensure(context.Background(), cache, "kmissing", base, offline(wheels, "kpkg-alpha", "kpkg-missing==9.9"), &stderr)
	if err == nil {
		t.Fatal("Ensure succeeded for a missing wheel")
	}
	for _, want := range []string{"pip install failed", "No matching distribution found for kpkg-missing==9.9"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if _, serr := os.Stat(filepath.Join(cache, "kmissing")); !os.IsNotExist(serr) {
		t.Errorf("failed build left %s behind (%v)", filepath.Join(cache, "kmissing"), serr)
	}
	// The next attempt, with the wheel now present, builds.
	wheel(t, wheels, "kpkg_missing", "9.9")
	py, err := Ensure(context.Background(), cache, "kmissing", base, offline(wheels, "kpkg-alpha", "kpkg-missing==9.9"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := pyOutput(t, py, "import kpkg_missing; print(kpkg_missing.VERSION)"); got != "9.9" {
		t.Errorf("got %q", got)
	}
}

func TestEnsureRebuildsIncomplete(t *testing.T) {
	t.Parallel()
	wheels := wheelhouse(t)
	base := pythons(t)[0]
	cache := t.TempDir()
	// A crashed build: directory without marker.
	junk := filepath.Join(cache, "kstale", "bin")
	if err := os.MkdirAll(junk, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(junk, "python"), []byte("junk"), 0o755); err != nil {
		t.Fatal(err)
	}
	py, err := Ensure(context.Background(), cache, "kstale", base, offline(wheels, "kpkg-beta"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := pyOutput(t, py, "import kpkg_beta; print(kpkg_beta.VERSION)"); got != "2.0" {
		t.Errorf("got %q", got)
	}
}

func TestEnsureConstraints(t *testing.T) {
	t.Parallel()
	wheels := t.TempDir()
	wheel(t, wheels, "kpkg_gamma", "1.0")
	wheel(t, wheels, "kpkg_gamma", "2.0")
	base := pythons(t)[0]
	py, err := EnsureSpec(context.Background(), t.TempDir(), "kc", base,
		Spec{Requirements: offline(wheels, "kpkg-gamma"), Constraints: []string{"kpkg-gamma<2"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := pyOutput(t, py, "import kpkg_gamma; print(kpkg_gamma.VERSION)"); got != "1.0" {
		t.Errorf("constraint ignored: got %q", got)
	}
}

func TestEnsureConcurrentGoroutinesBuildOnce(t *testing.T) {
	t.Parallel()
	wheels := wheelhouse(t)
	base := pythons(t)[0]
	cache := t.TempDir()
	const n = 4
	var wg sync.WaitGroup
	outs := make([]bytes.Buffer, n)
	pys := make([]string, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pys[i], errs[i] = Ensure(context.Background(), cache, "kconc", base, offline(wheels, "kpkg-alpha"), &outs[i])
		}()
	}
	wg.Wait()
	builds := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("Ensure %d: %v", i, errs[i])
		}
		if pys[i] != pys[0] {
			t.Errorf("python %d = %q, want %q", i, pys[i], pys[0])
		}
		builds += strings.Count(outs[i].String(), buildMsg)
	}
	if builds != 1 {
		t.Errorf("built %d times, want once", builds)
	}
}

// TestHelperProcess is run as a separate process by
// TestEnsureConcurrentProcessesBuildOnce.
func TestHelperProcess(t *testing.T) {
	if os.Getenv("KINETIC_PYENV_HELPER") != "1" {
		t.Skip("helper process")
	}
	lines := strings.Split(os.Getenv("KINETIC_PYENV_LINES"), "\n")
	py, err := Ensure(context.Background(), os.Getenv("KINETIC_PYENV_CACHE"), "kproc", os.Getenv("KINETIC_PYENV_PYTHON"), lines, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(3)
	}
	fmt.Println(py)
	os.Exit(0)
}

func TestEnsureConcurrentProcessesBuildOnce(t *testing.T) {
	t.Parallel()
	wheels := wheelhouse(t)
	base := pythons(t)[0]
	cache := t.TempDir()
	const n = 3
	cmds := make([]*exec.Cmd, n)
	outs := make([]bytes.Buffer, n)
	errs := make([]bytes.Buffer, n)
	for i := range n {
		c := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
		c.Env = append(os.Environ(), "KINETIC_PYENV_HELPER=1", "KINETIC_PYENV_CACHE="+cache,
			"KINETIC_PYENV_PYTHON="+base, "KINETIC_PYENV_LINES="+strings.Join(offline(wheels, "kpkg-beta==2.0"), "\n"))
		c.Stdout, c.Stderr = &outs[i], &errs[i]
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[i] = c
	}
	builds := 0
	var pys []string
	for i, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("helper %d: %v\n%s", i, err, errs[i].String())
		}
		builds += strings.Count(errs[i].String(), buildMsg)
		pys = append(pys, strings.TrimSpace(strings.Split(outs[i].String(), "\n")[0]))
	}
	if builds != 1 {
		t.Errorf("built %d times across %d processes, want once", builds, n)
	}
	want := []string{filepath.Join(cache, "kproc", "bin", "python")}
	for range n - 1 {
		want = append(want, want[0])
	}
	if diff := cmp.Diff(want, pys); diff != "" {
		t.Errorf("pythons (-want +got):\n%s", diff)
	}
}

func TestEnsureRejectsBadKey(t *testing.T) {
	t.Parallel()
	for _, key := range []string{"", "..", "../x", "a/b", ".hidden"} {
		if _, err := Ensure(context.Background(), t.TempDir(), key, "python3", []string{"x"}, nil); err == nil {
			t.Errorf("key %q accepted", key)
		}
	}
}

func TestEnsureCancelledWhileWaiting(t *testing.T) {
	t.Parallel()
	cache := t.TempDir()
	unlock, err := lock(context.Background(), filepath.Join(cache, "kw.lock"), nil, "kw")
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	var stderr bytes.Buffer
	_, err = Ensure(ctx, cache, "kw", "python3", []string{"x"}, &stderr)
	if err == nil || !strings.Contains(err.Error(), "deadline") {
		t.Errorf("err = %v, want deadline exceeded", err)
	}
	if !strings.Contains(stderr.String(), "waiting for another build") {
		t.Errorf("stderr = %q", stderr.String())
	}
}

// The caller runs in its own virtual environment: what it can import (cloudpickle, in
// real life) must stay importable in the job's environment.
func TestEnsureFromCallerVenv(t *testing.T) {
	t.Parallel()
	wheels := wheelhouse(t)
	wheel(t, wheels, "kpkg_user", "3.0")
	base := pythons(t)[0]
	userVenv := filepath.Join(t.TempDir(), "uv")
	if out, err := exec.Command(base, "-m", "venv", "--system-site-packages", "--without-pip", userVenv).CombinedOutput(); err != nil {
		t.Fatalf("user venv: %v\n%s", err, out)
	}
	userPy := filepath.Join(userVenv, "bin", "python")
	if out, err := exec.Command(userPy, "-m", "pip", "install", "--no-index", "--find-links", wheels, "kpkg-user").CombinedOutput(); err != nil {
		t.Fatalf("install into user venv: %v\n%s", err, out)
	}
	py, err := Ensure(context.Background(), t.TempDir(), "kuser", userPy, offline(wheels, "kpkg-alpha"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := pyOutput(t, py, "import kpkg_user, kpkg_alpha; print(kpkg_user.VERSION, kpkg_alpha.VERSION)"); got != "3.0 1.0" {
		t.Errorf("got %q", got)
	}
	// The job's environment wins over the caller's: its site-packages comes first.
	order := pyOutput(t, py, "import sys; print([p for p in sys.path if p.endswith('site-packages')][0])")
	if !strings.HasPrefix(order, filepath.Dir(filepath.Dir(py))) {
		t.Errorf("first site-packages = %q, want the job environment's", order)
	}
}
