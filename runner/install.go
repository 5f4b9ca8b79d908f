package runner

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/kinetic-run/kinetic/job"
)

// installAtStart installs the job's filtered requirements into a directory of the
// workspace for a prebuilt image (Spec.InstallAtStart): with uv when the image has it,
// else with the interpreter's pip. It returns environ with that directory first on
// PYTHONPATH.
func installAtStart(ctx context.Context, spec *job.Spec, py string, o Options, environ []string, out io.Writer) ([]string, error) {
	site := filepath.Join(o.Workspace, "site-packages")
	dir := filepath.Join(o.Workspace, "install")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	req := filepath.Join(dir, "requirements.txt")
	if err := os.WriteFile(req, []byte(strings.Join(spec.Requirements, "\n")+"\n"), 0o644); err != nil {
		return nil, err
	}
	var args []string
	tool := "pip"
	if uv, err := exec.LookPath("uv"); err == nil {
		tool = "uv"
		args = []string{uv, "pip", "install", "--python", py, "--target", site, "-r", req}
	} else {
		args = []string{py, "-m", "pip", "install", "--disable-pip-version-check", "--no-input", "--target", site, "-r", req}
	}
	if len(spec.Constraints) > 0 {
		c := filepath.Join(dir, "constraints.txt")
		if err := os.WriteFile(c, []byte(strings.Join(spec.Constraints, "\n")+"\n"), 0o644); err != nil {
			return nil, err
		}
		args = append(args, "-c", c)
	}
	fmt.Fprintf(out, "kinetic: installing %d requirement lines with %s (prebuilt image)\n", len(spec.Requirements), tool)
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr, cmd.Env = out, out, environ
	if err := cmd.Run(); err != nil {
		src := spec.RequirementsSource
		if src == "" {
			src = "the requirements"
		}
		return nil, fmt.Errorf("installing %s with %s in the prebuilt image: %w (the image needs pip or uv; or use bundled mode)", src, tool, err)
	}
	pp := site
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, "PYTHONPATH="); ok && v != "" {
			pp = site + ":" + v
		}
	}
	return append(environ, "PYTHONPATH="+pp), nil
}
