package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Under `ulimit -n 64` (issue 45) every input failed "python exited before it loaded the
// function", with no cause: the warm server put its sockets at fd 200 and up, which such
// a limit refuses. Now jobs and batches run under it.
func TestLowOpenFilesLimit(t *testing.T) {
	e := newEnv(t)
	limited := func(n string, argv ...string) result {
		t.Helper()
		q := make([]string, len(argv))
		for i, a := range argv {
			q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		cmd := exec.Command("sh", "-c", "ulimit -n "+n+" && exec "+strings.Join(q, " "))
		cmd.Dir = e.dir
		cmd.Env = append(os.Environ(), "KINETIC_HOME="+filepath.Join(e.home, "data"), "KINETIC_PROFILES_FILE="+filepath.Join(e.home, "profiles.json"), "HOME="+e.home, "KINETIC_PROJECT=",
			"KINETIC_BIN="+e.bin, "KINETIC_WARM_IDLE=5s", "PYTHONPATH="+filepath.Join(repoRoot(), "python"))
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return result{stdout: string(out), code: code}
	}
	if r := limited("64", e.bin, "run", "examples/hello.py::main", "2"); r.code != 0 || !strings.Contains(r.stdout, "{'sum': 3, 'steps': 2}") {
		t.Errorf("a job under ulimit -n 64: exit %d %q", r.code, r.stdout)
	}
	os.WriteFile(filepath.Join(e.dir, "m.py"), []byte(`import kinetic
@kinetic.run(accelerator="cpu")
def f(x):
    return x * 10
print(f.run_async_map(range(4)).results())
`), 0o644)
	if r := limited("64", "python3", "m.py"); r.code != 0 || !strings.Contains(r.stdout, "[0, 10, 20, 30]") {
		t.Errorf("a batch under ulimit -n 64: exit %d %q", r.code, r.stdout)
	}
	// A limit too low even for that is named in the error with how to raise it:
	// runner TestFDLimitSaid (how low "too low" is depends on the machine).
}
