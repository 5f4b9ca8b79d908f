// Package pywheels gives the tests real Python frameworks without the network: the
// wheels of jax, jaxlib, keras and cloudpickle (the runtime layer's pins for the cpu
// category, image.RuntimeRequirements) with all their dependencies, for CPython 3.11 and
// 3.12 on linux/amd64, fetched from PyPI once per machine with pip into the tools cache
// (testkit/toolcache) under wheels-<hash of the recipe>/, one flat directory that a
// requirements file names as `--no-index` and `--find-links DIR`. Besides the pins, the
// directory holds one other jax version for CPython 3.11 (KeepJax), the version a
// `# kn:keep` line asks for in the tests.
//
// `make test-tools` fills it (Ensure, from kubetest.BuildTools); it is the only place
// the tests contact PyPI. It also makes, from the same wheels, a virtual environment of
// a second Python (Client312: pyenv's CPython 3.12 on this kind of machine) with
// cloudpickle, so the SDK runs under another minor version than Debian's python3.
package pywheels

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/kinetic-run/kinetic/image"
	"github.com/kinetic-run/kinetic/testkit/toolcache"
)

// recipeVersion changes the cache key when the steps below change.
const recipeVersion = "1"

// Pythons are the CPython minor versions the wheels are fetched for: Debian bookworm's
// python3 (the test images' and this machine's) and pyenv's 3.12 (the second client).
var Pythons = []string{"3.11", "3.12"}

// Glibc is the glibc the wheels are chosen for: the daemonless builder's assumption for
// a base that does not say (image.Target), so every wheel fetched here loads in the test
// images (bookworm: 2.36) and on this machine.
const Glibc = "2.31"

// KeepJax is the jax version a requirements file pins with `# kn:keep` in the tests:
// not the runtime's, with wheels for CPython 3.11.
const KeepJax = "0.7.2"

// RuntimePins are the runtime layer's requirements for the cpu category.
func RuntimePins() []string {
	return append([]string(nil), runtimePins...)
}

// runtimePins: the product's pins for the cpu category, read from the one place they
// are written (a var only so that a test can change it).
var runtimePins = image.MustRuntimeRequirements("cpu")

// Pin returns the version RuntimePins pins name to ("" if none).
func Pin(name string) string {
	for _, p := range runtimePins {
		if n, v, ok := strings.Cut(p, "=="); ok && n == name {
			return v
		}
	}
	return ""
}

// fetch is one pip download: requirements for one Python.
type fetch struct {
	python string
	reqs   []string
}

func fetches() []fetch {
	var fs []fetch
	for _, py := range Pythons {
		fs = append(fs, fetch{py, RuntimePins()})
	}
	return append(fs, fetch{"3.11", []string{"jax==" + KeepJax, "jaxlib==" + KeepJax}})
}

func target(py string) image.Target { return image.Target{Python: py, Arch: "amd64", Glibc: Glibc} }

// Key is the hash the wheel directory is cached by: the recipe, every download's
// requirements and pip options.
func Key() string {
	h := sha256.New()
	fmt.Fprintf(h, "pywheels v%s\n", recipeVersion)
	for _, f := range fetches() {
		fmt.Fprintf(h, "%s %q %q\n", f.python, f.reqs, target(f.python).PipArgs())
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// Dir is where the wheels of the current recipe are (or will be) kept.
func Dir() (string, error) {
	return toolcache.Dir("wheels-" + Key())
}

// doneFile is written last into the directory: its presence means complete.
const doneFile = "wheels.txt"

func complete(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, doneFile))
	return err == nil
}

// Pip is the interpreter whose pip downloads the wheels: $KINETIC_BUILD_PYTHON (as the
// daemonless builder reads it), else python3 on PATH.
func Pip() string {
	if p := os.Getenv("KINETIC_BUILD_PYTHON"); p != "" {
		return p
	}
	return "python3"
}

// Ensure makes the wheel directory if the cache does not hold it yet (once per machine,
// under the tools cache's lock, replaced whole by a rename) and returns its path.
func Ensure(ctx context.Context, log func(string, ...any)) (string, error) {
	dir, err := Dir()
	if err != nil {
		return "", err
	}
	err = toolcache.Fill(ctx, dir, func() bool { return complete(dir) }, func(ctx context.Context, tmp string) error {
		for _, f := range fetches() {
			start := time.Now()
			args := append([]string{"-m", "pip", "download", "--disable-pip-version-check", "--no-cache-dir", "--progress-bar", "off", "-d", tmp}, target(f.python).PipArgs()...)
			args = append(args, f.reqs...)
			// The machine's pip configuration applies (an index mirror or a proxy it needs).
			cmd := exec.CommandContext(ctx, Pip(), args...)
			cmd.Env = append(os.Environ(), "PIP_NO_INPUT=1")
			out, err := cmd.CombinedOutput()
			if err != nil {
				return fmt.Errorf("pywheels: pip download for Python %s of %s (from PyPI: this step needs the network): %w\n%s", f.python, strings.Join(f.reqs, " "), err, tail(out))
			}
			log("pywheels: Python %s: %s fetched (%s)", f.python, strings.Join(f.reqs, " "), time.Since(start).Round(100*time.Millisecond))
		}
		names, size, err := listWheels(tmp)
		if err != nil {
			return err
		}
		log("pywheels: %d wheels, %d MB", len(names), size>>20)
		return os.WriteFile(filepath.Join(tmp, doneFile), []byte(strings.Join(names, "\n")+"\n"), 0o644)
	})
	if err != nil {
		return "", err
	}
	return dir, nil
}

// Ready returns the wheel directory if `make test-tools` made it; a test calls it
// instead of Ensure, so that nothing is downloaded inside its timeout.
func Ready() (string, error) {
	dir, err := Dir()
	if err != nil {
		return "", err
	}
	if !complete(dir) {
		return "", fmt.Errorf("pywheels: the framework wheels are not in the tools cache (%s): run `make test-tools` (it fetches them from PyPI once)", dir)
	}
	return dir, nil
}

func listWheels(dir string) ([]string, int64, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, 0, err
	}
	var names []string
	var size int64
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".whl") {
			names = append(names, e.Name())
			if fi, err := e.Info(); err == nil {
				size += fi.Size()
			}
		}
	}
	sort.Strings(names)
	if len(names) == 0 {
		return nil, 0, errors.New("pywheels: pip downloaded no wheel")
	}
	return names, size, nil
}

// IndexLines are the requirements-file lines that make pip use the directory alone.
func IndexLines(dir string) []string {
	return []string{"--no-index", "--find-links " + dir}
}

func tail(b []byte) string {
	const n = 4000
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
