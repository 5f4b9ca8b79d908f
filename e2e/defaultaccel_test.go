package e2e

import (
	"strings"
	"testing"
)

// TestOneDefaultAccelerator: kinetic run's default accelerator is the SDK's documented
// tpu-v5e-1; left out with nothing configured, the job runs on this machine's CPU and
// says so (as the SDK's default does); the same TPU named on purpose is refused with the
// fixes named; with the local backend chosen, the default is the TPU, run on the CPU
// (issue 46).
func TestOneDefaultAccelerator(t *testing.T) {
	e := newEnv(t)
	r := e.runEnv([]string{"KINETIC_BACKEND="}, "run", "examples/hello.py::main", "1")
	if r.code != 0 || !strings.Contains(r.stderr, "(cpu on local)") || !strings.Contains(r.stderr, "the default accelerator, tpu-v5e-1") {
		t.Errorf("run with no accelerator and nothing configured: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = e.runEnv([]string{"KINETIC_BACKEND="}, "run", "--accelerator", "tpu-v5e-1", "examples/hello.py::main", "1")
	if r.code == 0 || !strings.Contains(r.stderr, "kinetic up --accelerator tpu-v5litepod-1") {
		t.Errorf("run --accelerator tpu-v5e-1 with nothing configured: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = e.runEnv([]string{"KINETIC_BACKEND=local"}, "run", "examples/hello.py::main", "1")
	if r.code != 0 || !strings.Contains(r.stderr, "(tpu-v5litepod-1 on local)") {
		t.Errorf("run with the local backend chosen: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	h := e.run("run", "--help")
	if !strings.Contains(h.stdout, `(default "tpu-v5e-1")`) {
		t.Errorf("run --help does not show the default accelerator:\n%s", h.stdout)
	}
}
