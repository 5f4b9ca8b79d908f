// Package pyenv builds and caches the local Python environments jobs run in on the
// local backend: one virtual environment per environment key (deps.EnvKey), built once
// with pip from the filtered requirements and reused by every later job with the same
// key, across goroutines and processes.
//
// Layout under the cache directory:
//
//	<cacheDir>/<key>/                    the virtual environment (bin/python, lib/…)
//	<cacheDir>/<key>/kinetic-env.json    completion marker, written last (atomically)
//	<cacheDir>/<key>/kinetic-requirements.txt, kinetic-constraints.txt  what pip got
//	<cacheDir>/<key>.lock                flock(2) lock serialising builds of <key>
//	<cacheDir>/pip-cache/                pip's download/wheel cache (not ~/.cache/pip)
//
// Debian/Ubuntu's /usr/bin/python3 needs the python3-venv package; with python3-pip
// installed too, environments reuse the base pip instead of installing one each.
//
// An environment exists exactly when its marker does. A build runs under the key's
// lock; it first removes whatever a crashed build left behind, and removes its own work
// if it fails, so a failed build leaves nothing half-built.
//
// The environment is created with --system-site-packages: the base environment of the
// local backend is the caller's interpreter, so what it has (cloudpickle, the user's
// own packages) stays importable, and the requirements are installed on top. When the
// caller's interpreter is itself a virtual environment, a .pth file (BasePthFile) adds
// its site-packages too. See docs/dependencies.md.
package pyenv

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/kinetic-run/kinetic/errs"
	"github.com/kinetic-run/kinetic/internal/filelock"
)

// MarkerFile is the name of the completion marker inside an environment directory.
const MarkerFile = "kinetic-env.json"

// ErrNoVenv is returned (wrapped) when the interpreter can create neither a virtual
// environment without pip nor one with pip (Debian: install python3-venv, or
// python3-pip).
var ErrNoVenv = errs.New(errs.FailedPrecondition, "python cannot create a virtual environment")

// Spec is what to install: requirements-file lines (requirements and pip directives
// such as --index-url, as deps.Requirements.Lines returns them) and constraints-file
// lines (deps.Requirements.ConstraintLines).
type Spec struct {
	Requirements []string
	Constraints  []string
}

// Marker is the content of the completion marker.
type Marker struct {
	Key          string    `json:"key"`
	BasePython   string    `json:"base_python"`
	Requirements []string  `json:"requirements"`
	Constraints  []string  `json:"constraints,omitempty"`
	Created      time.Time `json:"created"`
}

// Ensure returns the interpreter of the environment for key, building it first if it
// does not exist yet: a virtual environment of python (created with
// --system-site-packages) with the requirement lines installed by pip. lines are
// requirements-file lines, directives included. When lines hold no requirement, Ensure
// builds nothing and returns python itself. Build progress and pip's output go to
// stderr (nil discards them); a failed build returns an error that includes the tail of
// pip's output.
//
// Ensure is safe to call concurrently from goroutines and processes: the build runs
// once, the other callers wait for it (or for ctx) and reuse it.
func Ensure(ctx context.Context, cacheDir, key, python string, lines []string, stderr io.Writer) (pythonPath string, err error) {
	return EnsureSpec(ctx, cacheDir, key, python, Spec{Requirements: lines}, stderr)
}

var keyRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// EnsureSpec is Ensure with constraints.
func EnsureSpec(ctx context.Context, cacheDir, key, python string, spec Spec, stderr io.Writer) (string, error) {
	if !hasRequirement(spec.Requirements) {
		return python, nil
	}
	if !keyRE.MatchString(key) {
		return "", fmt.Errorf("pyenv: invalid environment key %q", key)
	}
	if stderr == nil {
		stderr = io.Discard
	}
	cacheDir, err := filepath.Abs(cacheDir)
	if err != nil {
		return "", fmt.Errorf("pyenv: %w", err)
	}
	envDir := filepath.Join(cacheDir, key)
	py := filepath.Join(envDir, "bin", "python")
	if ready(envDir) {
		touch(envDir) // last used: what `kinetic prune` goes by
		return py, nil
	}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return "", fmt.Errorf("pyenv: create cache dir: %w", err)
	}
	unlock, err := lock(ctx, filepath.Join(cacheDir, key+".lock"), stderr, key)
	if err != nil {
		return "", err
	}
	defer unlock()
	if ready(envDir) { // built by whoever held the lock before us
		return py, nil
	}
	if err := build(ctx, cacheDir, envDir, key, python, spec, stderr); err != nil {
		_ = os.RemoveAll(envDir)
		return "", err
	}
	return py, nil
}

// Path returns where the environment for key lives (whether or not it exists).
func Path(cacheDir, key string) string { return filepath.Join(cacheDir, key) }

// hasRequirement reports whether lines ask for anything to be installed (not only
// blank lines, comments and index/source directives).
func hasRequirement(lines []string) bool {
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if !strings.HasPrefix(l, "-") {
			return true
		}
		for _, p := range []string{"-r", "--requirement", "-e", "--editable"} {
			if strings.HasPrefix(l, p) {
				return true
			}
		}
	}
	return false
}

// ready reports whether envDir holds a complete environment whose interpreter still
// resolves (a venv's bin/python is a symlink to the base interpreter, which may have
// been removed since).
func ready(envDir string) bool {
	if _, err := os.Stat(filepath.Join(envDir, MarkerFile)); err != nil {
		return false
	}
	_, err := os.Stat(filepath.Join(envDir, "bin", "python"))
	return err == nil
}

// lock takes the build lock of key, saying once on stderr when it must wait for another
// build; ctx ends the wait.
func lock(ctx context.Context, path string, stderr io.Writer, key string) (func(), error) {
	unlock, err := filelock.LockContext(ctx, path, func() {
		fmt.Fprintf(stderr, "kinetic: waiting for another build of Python environment %s\n", short(key))
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("pyenv: waiting for environment %s: %w", short(key), ctx.Err())
		}
		return nil, fmt.Errorf("pyenv: %w", err)
	}
	return unlock, nil
}

func short(key string) string {
	if len(key) > 12 {
		return key[:12]
	}
	return key
}

func build(ctx context.Context, cacheDir, envDir, key, python string, spec Spec, stderr io.Writer) error {
	start := time.Now()
	// Leftovers of a build that crashed (no marker): start from scratch.
	if err := os.RemoveAll(envDir); err != nil {
		return fmt.Errorf("pyenv: remove incomplete environment: %w", err)
	}
	base, err := exec.LookPath(python)
	if err != nil {
		return fmt.Errorf("pyenv: python interpreter %q: %w", python, err)
	}
	fmt.Fprintf(stderr, "kinetic: building Python environment %s in %s\n", short(key), envDir)
	if err := createVenv(ctx, base, envDir); err != nil {
		return err
	}
	venvPy := filepath.Join(envDir, "bin", "python")

	reqFile := filepath.Join(envDir, "kinetic-requirements.txt")
	if err := os.WriteFile(reqFile, []byte(strings.Join(spec.Requirements, "\n")+"\n"), 0o644); err != nil {
		return fmt.Errorf("pyenv: %w", err)
	}
	args := []string{"-m", "pip", "install",
		"--disable-pip-version-check", "--no-input", "--progress-bar", "off",
		"--cache-dir", filepath.Join(cacheDir, "pip-cache"),
		"-r", reqFile}
	if len(spec.Constraints) > 0 {
		conFile := filepath.Join(envDir, "kinetic-constraints.txt")
		if err := os.WriteFile(conFile, []byte(strings.Join(spec.Constraints, "\n")+"\n"), 0o644); err != nil {
			return fmt.Errorf("pyenv: %w", err)
		}
		args = append(args, "-c", conFile)
	}
	if out, err := run(ctx, stderr, venvPy, args...); err != nil {
		return fmt.Errorf("pyenv: pip install failed for environment %s: %w\n%s", short(key), err, out)
	}

	m := Marker{Key: key, BasePython: base, Requirements: spec.Requirements, Constraints: spec.Constraints, Created: time.Now().UTC()}
	data, _ := json.MarshalIndent(m, "", "  ")
	tmp := filepath.Join(envDir, MarkerFile+".tmp")
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("pyenv: write marker: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(envDir, MarkerFile)); err != nil {
		return fmt.Errorf("pyenv: write marker: %w", err)
	}
	fmt.Fprintf(stderr, "kinetic: Python environment %s ready (%s)\n", short(key), time.Since(start).Round(100*time.Millisecond))
	return nil
}

// createVenv creates envDir as a virtual environment of base with system site packages.
// It first tries --without-pip (fast: pip then comes from the base interpreter's site
// packages, visible through --system-site-packages); if the base has no pip, it lets
// venv install pip with ensurepip (Debian: needs python3-venv).
//
// When base is itself a virtual environment (the user runs kinetic from a venv), venv
// would build on that venv's underlying installation and --system-site-packages would
// not see the user's venv. A .pth file then puts the user's site-packages on sys.path,
// after the new environment's own, so what the caller can import stays importable.
func createVenv(ctx context.Context, base, envDir string) error {
	if out, err := run(ctx, io.Discard, base, "-m", "venv", "--system-site-packages", "--without-pip", envDir); err != nil {
		return fmt.Errorf("pyenv: %w: %s -m venv: %v\n%s(Debian/Ubuntu: apt-get install python3-venv)", ErrNoVenv, base, err, out)
	}
	if err := linkBaseVenv(ctx, base, envDir); err != nil {
		return err
	}
	venvPy := filepath.Join(envDir, "bin", "python")
	if _, err := run(ctx, io.Discard, venvPy, "-m", "pip", "--version"); err == nil {
		return nil
	}
	if err := os.RemoveAll(envDir); err != nil {
		return fmt.Errorf("pyenv: %w", err)
	}
	if out, err := run(ctx, io.Discard, base, "-m", "venv", "--system-site-packages", envDir); err != nil {
		return fmt.Errorf("pyenv: %w: %s has no pip and venv cannot install one: %v\n%s(Debian/Ubuntu: apt-get install python3-venv, or python3-pip)", ErrNoVenv, base, err, out)
	}
	return linkBaseVenv(ctx, base, envDir)
}

// BasePthFile is the .pth file that links a caller's virtual environment into ours.
const BasePthFile = "_kinetic_base_venv.pth"

const sitePathsScript = `import sys, sysconfig
if sys.prefix != sys.base_prefix:
    for p in dict.fromkeys([sysconfig.get_path("purelib"), sysconfig.get_path("platlib")]):
        print(p)
`

// linkBaseVenv writes BasePthFile into envDir's site-packages when base runs in a
// virtual environment.
func linkBaseVenv(ctx context.Context, base, envDir string) error {
	out, err := output(ctx, base, "-c", sitePathsScript)
	if err != nil {
		return fmt.Errorf("pyenv: inspect %s: %w", base, err)
	}
	if strings.TrimSpace(out) == "" {
		return nil
	}
	site, err := output(ctx, filepath.Join(envDir, "bin", "python"), "-c", `import sysconfig; print(sysconfig.get_path("purelib"))`)
	if err != nil {
		return fmt.Errorf("pyenv: inspect new environment: %w", err)
	}
	pth := filepath.Join(strings.TrimSpace(site), BasePthFile)
	if err := os.WriteFile(pth, []byte(strings.TrimSpace(out)+"\n"), 0o644); err != nil {
		return fmt.Errorf("pyenv: %w", err)
	}
	return nil
}

// MinorVersion returns the MAJOR.MINOR version of the interpreter python ("3.12").
func MinorVersion(ctx context.Context, python string) (string, error) {
	out, err := output(ctx, python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])")
	if err != nil {
		return "", fmt.Errorf("ask %s its version: %w", python, err)
	}
	return strings.TrimSpace(out), nil
}

// output runs a short command and returns its standard output.
func output(ctx context.Context, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = sanitisedEnv()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}

// tailSize bounds the output kept for error messages.
const tailSize = 16 << 10

// run runs a command with a sanitised environment, copying its combined output to w,
// and returns the tail of that output.
func run(ctx context.Context, w io.Writer, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = sanitisedEnv()
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	t := &tail{}
	out := io.MultiWriter(w, t)
	cmd.Stdout, cmd.Stderr = out, out
	err := cmd.Run()
	if err != nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	return t.String(), err
}

// sanitisedEnv is the environment without the variables that would make pip install
// somewhere other than the environment, or python run another installation.
func sanitisedEnv() []string {
	drop := map[string]bool{
		"PIP_USER": true, "PIP_TARGET": true, "PIP_PREFIX": true, "PIP_ROOT": true,
		"PIP_EDITABLE": true, "PIP_REQUIREMENT": true, "PIP_CONSTRAINT": true,
		"PYTHONHOME": true, "PYTHONPATH": true, "VIRTUAL_ENV": true,
		"PIP_REQUIRE_VIRTUALENV": true, "PIP_NO_CACHE_DIR": true,
	}
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if drop[k] {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "PIP_DISABLE_PIP_VERSION_CHECK=1")
}

// tail keeps the last tailSize bytes written to it.
type tail struct{ buf []byte }

func (t *tail) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if len(t.buf) > tailSize {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-tailSize:]...)
	}
	return len(p), nil
}

func (t *tail) String() string { return string(bytes.TrimRight(t.buf, "\n")) + "\n" }

// touch marks the environment in envDir used now (its marker's modification time).
func touch(envDir string) {
	now := time.Now()
	os.Chtimes(filepath.Join(envDir, MarkerFile), now, now)
}

// LastUsed is when the environment in envDir was last used (or built); false when it is
// not a complete environment.
func LastUsed(envDir string) (time.Time, bool) {
	fi, err := os.Stat(filepath.Join(envDir, MarkerFile))
	if err != nil {
		return time.Time{}, false
	}
	return fi.ModTime(), true
}

// Remove deletes the environment of key under its build lock, if it is still unused
// since before cutoff (a job may have used it since it was looked at). It reports
// whether it removed it.
func Remove(ctx context.Context, cacheDir, key string, cutoff time.Time) (bool, error) {
	unlock, err := lock(ctx, filepath.Join(cacheDir, key+".lock"), io.Discard, key)
	if err != nil {
		return false, err
	}
	defer unlock()
	envDir := filepath.Join(cacheDir, key)
	if _, err := os.Stat(envDir); errors.Is(err, fs.ErrNotExist) {
		return false, nil // another prune removed it while this one waited for the lock
	}
	if used, ok := LastUsed(envDir); ok && used.After(cutoff) {
		return false, nil
	}
	if err := os.RemoveAll(envDir); err != nil {
		return false, fmt.Errorf("pyenv: remove %s: %w", envDir, err)
	}
	return true, nil
}
