package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// makeBatch submits a batch through the Python SDK (the only way to make one) and
// returns its group ID once every child is final.
func (e *env) makeBatch(t *testing.T, n int, extraEnv ...string) string {
	t.Helper()
	return e.makeBatchOf(t, n, false, extraEnv...)
}

// makeBatchOf is makeBatch; with bigValue, input 1 returns a value too large for its
// envelope (it then has a results/1.pkl).
func (e *env) makeBatchOf(t *testing.T, n int, bigValue bool, extraEnv ...string) string {
	t.Helper()
	script := filepath.Join(e.dir, "mkbatch.py")
	os.WriteFile(script, []byte(`import sys, kinetic
BIG = len(sys.argv) > 2  # input 1's value too large for its envelope: a results/1.pkl of its own
@kinetic.run(accelerator="cpu")
def f(x):
    if x == 2:
        raise ValueError("two is bad")
    if x == 1 and BIG:
        return "v" * 20000
    return x * 10
b = f.run_async_map(range(int(sys.argv[1])), name="cli-test")
b.wait()
print(b.group_id)
`), 0o644)
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		py = "python3"
	}
	args := []string{script, strconv.Itoa(n)}
	if bigValue {
		args = append(args, "big")
	}
	cmd := exec.Command(py, args...)
	cmd.Dir = e.dir
	cmd.Env = append(os.Environ(), "KINETIC_BIN="+e.bin, "KINETIC_HOME="+filepath.Join(e.home, "data"), "KINETIC_WARM_IDLE=5s",
		"KINETIC_PROFILES_FILE="+filepath.Join(e.home, "profiles.json"), "PYTHONPATH="+filepath.Join(repoRoot(), "python"))
	cmd.Env = append(cmd.Env, extraEnv...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("make batch: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1]
}

func TestBatchCLI(t *testing.T) {
	e := newEnv(t)
	gid := e.makeBatch(t, 5)

	r := e.run("batch", "list", "--json")
	var list []map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || len(list) != 1 || list[0]["group_id"] != gid || list[0]["name"] != "cli-test" {
		t.Fatalf("batch list: %v %q", err, r.stdout)
	}

	r = e.run("batch", "status", "--json", gid)
	var st struct {
		Counts   map[string]int `json:"counts"`
		Complete bool           `json:"submission_complete"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || st.Counts["SUCCEEDED"] != 4 || st.Counts["FAILED"] != 1 || !st.Complete {
		t.Fatalf("batch status: %v %q", err, r.stdout)
	}

	r = e.run("batch", "results", "--json", gid)
	if r.code != 1 {
		t.Fatalf("batch results with a failed input: exit %d, want 1 (%s)", r.code, r.stderr)
	}
	var rows []struct {
		Index  int    `json:"index"`
		Status string `json:"status"`
		Result struct {
			Success   bool   `json:"success"`
			ValueRepr string `json:"value_repr"`
			ExcType   string `json:"exc_type"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil || len(rows) != 5 {
		t.Fatalf("batch results: %v %q", err, r.stdout)
	}
	for _, row := range rows {
		switch {
		case row.Index == 2 && (row.Status != "FAILED" || !strings.HasSuffix(row.Result.ExcType, "ValueError")):
			t.Errorf("row 2: %+v", row)
		case row.Index != 2 && row.Result.ValueRepr != jsonNumber(row.Index*10):
			t.Errorf("row %d: %+v", row.Index, row)
		}
	}

	if r = e.run("batch", "cancel", gid); r.code != 0 {
		t.Fatalf("batch cancel of a finished batch: %d %s", r.code, r.stderr)
	}
	if r = e.run("batch", "cleanup", gid); r.code != 0 {
		t.Fatalf("batch cleanup: %d %s", r.code, r.stderr)
	}
	if r = e.run("batch", "status", gid); r.code == 0 || !strings.Contains(r.stderr, "no batch") {
		t.Fatalf("status after cleanup: %d %q", r.code, r.stderr)
	}
	if r = e.run("batch", "status", "not/a/group"); r.code == 0 || !strings.Contains(r.stderr, "not a group ID") {
		t.Fatalf("bad group id: %d %q", r.code, r.stderr)
	}
}

func jsonNumber(i int) string { b, _ := json.Marshal(i); return string(b) }

// TestBatchBarNotInPipes: `batch status -f` and `batch results` draw their progress bar
// only on a terminal; through a pipe stderr carries no carriage returns or bar.
func TestBatchBarNotInPipes(t *testing.T) {
	e := newEnv(t)
	gid := e.makeBatch(t, 3)
	for _, args := range [][]string{{"batch", "status", "-f", gid}, {"batch", "results", gid}} {
		r := e.run(args...)
		if strings.ContainsAny(r.stderr, "\r\x1b") || strings.Contains(r.stderr, "█") {
			t.Errorf("%v wrote a progress bar into a pipe: %q", args, r.stderr)
		}
	}
}
