package image

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/kinetic-run/kinetic/errs"
)

// ErrMissingWheel is wrapped when pip finds no wheel for the image's platform: the
// requirement needs a source build inside the image (an engine builder) or a wheel.
var ErrMissingWheel = errs.New(errs.FailedPrecondition, "no wheel for the image's platform")

// PipError is a failed pip run: its exit status and the end of its output.
type PipError struct {
	Err    error
	Output string
}

func (e *PipError) Error() string {
	return fmt.Sprintf("pip: %v\n%s", e.Err, e.Output)
}
func (e *PipError) Unwrap() error { return e.Err }

var noDistRE = regexp.MustCompile(`(?m)(?:No matching distribution found for|Could not find a version that satisfies the requirement) (\S+)`)

// pipInstall installs the requirement lines (and constraint lines) into dir for target
// with the local pip (python -m pip), without compiling bytecode: the image's interpreter
// compiles what it imports. workDir is pip's working directory (relative paths).
func pipInstall(ctx context.Context, python string, t Target, lines, constraints []string, dir, workDir string, log io.Writer) error {
	return runPip(ctx, python, t, []string{"install", "--no-compile", "--no-warn-script-location", "--target", dir}, lines, constraints, workDir, log)
}

// pipDownload resolves the requirement lines for target with the local pip and puts the
// chosen wheels in dir (pip download): nothing is installed or extracted.
func pipDownload(ctx context.Context, python string, t Target, lines, constraints []string, dir, workDir string, log io.Writer) error {
	return runPip(ctx, python, t, []string{"download", "--dest", dir}, lines, constraints, workDir, log)
}

func runPip(ctx context.Context, python string, t Target, verb, lines, constraints []string, workDir string, log io.Writer) error {
	if python == "" {
		python = "python3"
	}
	tmp, err := os.MkdirTemp("", "kinetic-pip-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	req := filepath.Join(tmp, "requirements.txt")
	if err := os.WriteFile(req, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		return err
	}
	args := append([]string{"-m", "pip"}, verb[0])
	args = append(args, "--quiet", "--disable-pip-version-check", "--no-input")
	args = append(args, verb[1:]...)
	args = append(args, t.PipArgs()...)
	args = append(args, "-r", req)
	if len(constraints) > 0 {
		c := filepath.Join(tmp, "constraints.txt")
		if err := os.WriteFile(c, []byte(strings.Join(constraints, "\n")+"\n"), 0o644); err != nil {
			return err
		}
		args = append(args, "-c", c)
	}
	cmd := exec.CommandContext(ctx, python, args...)
	cmd.Dir = workDir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if log != nil {
		cmd.Stdout, cmd.Stderr = io.MultiWriter(&out, log), io.MultiWriter(&out, log)
	}
	cmd.Env = append(os.Environ(), "PIP_NO_COLOR=1", "PYTHONDONTWRITEBYTECODE=1")
	if err := cmd.Run(); err != nil {
		var ee *exec.Error
		if errors.As(err, &ee) {
			return fmt.Errorf("the daemonless builder runs pip with %s on this machine: %w (install python3 and pip, or name another Python with KINETIC_BUILD_PYTHON or the profile key build_python)", python, err)
		}
		text := out.String()
		if len(text) > 4000 {
			text = "…" + text[len(text)-4000:]
		}
		if m := noDistRE.FindStringSubmatch(text); m != nil {
			return fmt.Errorf("%w: %s has no wheel for Python %s on linux/%s (glibc %s) in the configured indexes: add a wheel to a --find-links directory, pin a version that ships one, or build with an engine (image_builder=podman) so it compiles inside the image: %w", ErrMissingWheel, m[1], t.Python, t.Arch, t.Glibc, &PipError{Err: err, Output: text})
		}
		return &PipError{Err: err, Output: text}
	}
	return nil
}
