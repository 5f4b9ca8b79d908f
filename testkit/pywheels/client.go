package pywheels

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/kinetic-run/kinetic/testkit/imagetest"
	"github.com/kinetic-run/kinetic/testkit/toolcache"
)

// The second client's interpreter is imagetest's (the 3.12 base copies the same tree):
// $KINETIC_TEST_PYTHON312, else pyenv's 3.12.1.
var (
	// Python312 is the interpreter of the second client.
	Python312 = imagetest.Python312
	// ErrNoPython312 is wrapped when the machine has no CPython 3.12 there.
	ErrNoPython312 = imagetest.ErrNoPython312
)

// pythonVersion runs py and returns its "3.X" and full version.
func pythonVersion(ctx context.Context, py string) (minor, full string, err error) {
	out, err := exec.CommandContext(ctx, py, "-c", "import sys; print('%d.%d' % sys.version_info[:2], sys.version.split()[0])").Output()
	if err != nil {
		return "", "", fmt.Errorf("%s: %w: %w", py, ErrNoPython312, err)
	}
	f := strings.Fields(string(out))
	if len(f) != 2 {
		return "", "", fmt.Errorf("%s: unexpected version output %q", py, out)
	}
	return f[0], f[1], nil
}

// clientDir is the cached virtual environment of py (by its path and full version and
// the cloudpickle pin).
func clientDir(py, full string) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "pywheels client v%s\n%s\n%s\ncloudpickle==%s\n", recipeVersion, py, full, Pin("cloudpickle"))
	return toolcache.Dir("client-py312-" + hex.EncodeToString(h.Sum(nil))[:16])
}

// EnsureClient312 makes (once, in the tools cache) a virtual environment of Python312()
// with cloudpickle installed from the wheel directory (Ensure first), and returns its
// bin/python. The SDK runs in it with python/ on PYTHONPATH.
func EnsureClient312(ctx context.Context, log func(string, ...any)) (string, error) {
	wheels, err := Ensure(ctx, log)
	if err != nil {
		return "", err
	}
	py := Python312()
	minor, full, err := pythonVersion(ctx, py)
	if err != nil {
		return "", err
	}
	if minor != "3.12" {
		return "", fmt.Errorf("%s is Python %s: %w", py, full, ErrNoPython312)
	}
	dir, err := clientDir(py, full)
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "bin", "python")
	err = toolcache.Fill(ctx, dir, func() bool { return toolcache.Executable(bin) && exists(filepath.Join(dir, doneFile)) }, func(ctx context.Context, tmp string) error {
		// Made in tmp, then renamed: bin/python is a link to py and pyvenv.cfg names py's
		// directory, so the interpreter finds its environment wherever it lies (only the
		// activate scripts and pip's launcher name tmp, and nothing here uses them).
		if out, err := exec.CommandContext(ctx, py, "-m", "venv", "--clear", tmp).CombinedOutput(); err != nil {
			return fmt.Errorf("pywheels: %s -m venv: %w\n%s", py, err, out)
		}
		args := []string{"-m", "pip", "install", "--disable-pip-version-check", "--no-index", "--find-links", wheels, "cloudpickle==" + Pin("cloudpickle")}
		cmd := exec.CommandContext(ctx, filepath.Join(tmp, "bin", "python"), args...)
		cmd.Env = append(os.Environ(), "PIP_CONFIG_FILE="+os.DevNull, "PIP_NO_INPUT=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("pywheels: install cloudpickle into the %s client: %w\n%s", full, err, tail(out))
		}
		log("pywheels: Python %s client with cloudpickle %s", full, Pin("cloudpickle"))
		return os.WriteFile(filepath.Join(tmp, doneFile), []byte(py+" "+full+"\n"), 0o644)
	})
	if err != nil {
		return "", err
	}
	return bin, nil
}

// Client312Ready returns the second client's bin/python if `make test-tools` made it.
func Client312Ready(ctx context.Context) (string, error) {
	py := Python312()
	_, full, err := pythonVersion(ctx, py)
	if err != nil {
		return "", err
	}
	dir, err := clientDir(py, full)
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "bin", "python")
	if !toolcache.Executable(bin) || !exists(filepath.Join(dir, doneFile)) {
		return "", fmt.Errorf("pywheels: the Python 3.12 client is not in the tools cache (%s): run `make test-tools`", dir)
	}
	return bin, nil
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
