package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Damaged objects, one by one (issue 30, item 3): every object of an ended job and of a
// batch truncated, replaced by garbage, emptied or deleted, and what each command says.

// damages are the four ways an object is damaged.
var damages = []struct {
	name   string
	damage func(t *testing.T, path string)
}{
	{"truncated", func(t *testing.T, p string) {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(p, raw[:len(raw)/2], 0o600)
	}},
	{"garbage", func(t *testing.T, p string) { os.WriteFile(p, []byte("\x00\x01garbage{"), 0o600) }},
	{"empty", func(t *testing.T, p string) { os.WriteFile(p, nil, 0o600) }},
	{"deleted", func(t *testing.T, p string) {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}},
}

// goText is Go's own words, which a person never sees.
var goText = []string{"json:", "invalid character", "unexpected end of JSON", "cannot unmarshal", "no such file or directory"}

func hasGoText(s string) string {
	for _, g := range goText {
		if strings.Contains(s, g) {
			return g
		}
	}
	return ""
}

// sdk runs a Python snippet with the SDK against e's store and returns its output.
func (e *env) sdk(t *testing.T, code string) result {
	t.Helper()
	py := "/usr/bin/python3" // Debian's, with cloudpickle (as makeBatch)
	if _, err := os.Stat(py); err != nil {
		py = "python3"
	}
	cmd := exec.Command(py, "-c", code)
	cmd.Dir = e.dir
	cmd.Env = append(os.Environ(), "KINETIC_BIN="+e.bin, "KINETIC_HOME="+filepath.Join(e.home, "data"), "KINETIC_WARM_IDLE=5s",
		"KINETIC_PROFILES_FILE="+filepath.Join(e.home, "profiles.json"), "PYTHONPATH="+filepath.Join(repoRoot(), "python"), "KINETIC_PROJECT=")
	done := make(chan result, 1)
	go func() {
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			code = -1
		}
		done <- result{stdout: string(out), code: code}
	}()
	select {
	case r := <-done:
		return r
	case <-time.After(90 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("the SDK waits for ever: %s", code)
		return result{}
	}
}

// snapshot copies dir to a new directory and returns a function that puts dir back as
// it was (the listing index removed, so that a listing reads every job again).
func snapshot(t *testing.T, dir, store string) func() {
	t.Helper()
	bak := filepath.Join(t.TempDir(), "bak")
	if out, err := exec.Command("cp", "-a", dir, bak).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	return func() {
		os.RemoveAll(dir)
		if out, err := exec.Command("cp", "-a", bak, dir).CombinedOutput(); err != nil {
			t.Fatalf("%v %s", err, out)
		}
		os.Remove(filepath.Join(store, "index", "listing.json"))
	}
}

// timed runs args and fails t if the command takes longer than 30 s (a wait that
// cannot end).
func (e *env) timed(t *testing.T, args ...string) result {
	t.Helper()
	done := make(chan result, 1)
	go func() { done <- e.run(args...) }()
	select {
	case r := <-done:
		return r
	case <-time.After(30 * time.Second):
		t.Fatalf("%v waits for ever", args)
		return result{}
	}
}

func faultJobObjectsDamaged(t *testing.T, e *env) {
	os.Setenv("DAMAGED_TEST_VAR", "v")
	defer os.Unsetenv("DAMAGED_TEST_VAR")
	// A Python job with a value (pickled by the SDK: payload.pkl), and a command job
	// with a log and a captured variable.
	r := e.sdk(t, `import kinetic
@kinetic.run(accelerator="cpu")
def main():
    print("a log line")
    return list(range(3))
print("ID", main.run_async().job_id)
`)
	_, py, ok := strings.Cut(strings.TrimSpace(r.stdout), "ID ")
	if r.code != 0 || !ok {
		t.Fatalf("submit: %d %q", r.code, r.stdout)
	}
	var h map[string]string
	r = e.run("run", "--async", "--json", "--capture-env", "DAMAGED_TEST_VAR", "--", "sh", "-c", "echo one; echo two")
	if err := json.Unmarshal([]byte(r.stdout), &h); r.code != 0 || err != nil {
		t.Fatalf("submit: %d %v %q", r.code, err, r.stderr)
	}
	cmdJob := h["job_id"]
	e.waitStatus(t, py, "SUCCEEDED")
	e.waitStatus(t, cmdJob, "SUCCEEDED")

	// What each object's damage does to the readers: listed as damaged (an ERROR row;
	// jobs status names it), jobs result names it, the SDK's result() names it (else
	// it returns the value). Everything not named works as before.
	type want struct{ listed, cliResult, sdkResult bool }
	var (
		harmless = want{}                   // the job ended: nothing reads it any more
		damaged  = want{true, true, true}   // status.json: how it ended cannot be read
		envelope = want{false, true, true}  // result.json: status.json says how it ended
		value    = want{false, false, true} // result.pkl: jobs result prints the envelope's repr
	)
	objects := []struct {
		id, file         string
		broken, deletion want
	}{
		{py, "spec.json", harmless, harmless},
		{py, "payload.pkl", harmless, harmless},
		{cmdJob, "env.json", harmless, harmless},
		{py, "status.json", damaged, harmless},                  // deleted: the envelope says how it ended
		{py, "result.json", envelope, want{false, true, false}}, // deleted: result.pkl holds the value, the SDK reads it
		{py, "result.pkl", value, value},
		{cmdJob, "logs/00000000.log", harmless, harmless}, // the log prints what is left
	}
	for _, o := range objects {
		restore := snapshot(t, filepath.Join(e.store, "jobs", o.id), e.store)
		for _, d := range damages {
			t.Run(strings.ReplaceAll(o.file, "/", "-")+"-"+d.name, func(t *testing.T) {
				defer restore()
				p := filepath.Join(e.store, "jobs", o.id, filepath.FromSlash(o.file))
				if _, err := os.Stat(p); err != nil {
					t.Fatalf("the job has no %s to damage: %v", o.file, err)
				}
				e.timed(t, "jobs", "list") // the listing index holds the job: damage must show through it
				d.damage(t, p)
				w := o.broken
				if d.name == "deleted" {
					w = o.deletion
				}
				checkJobDamage(t, e, o.id, o.file, d.name, w.listed, w.cliResult, w.sdkResult, py == o.id)
			})
		}
	}
}

// checkJobDamage runs every reader of job id whose object file was damaged (how) and
// checks what each says: listed (an ERROR row, jobs status names it), cliResult (jobs
// result names it), sdkResult (the SDK's result() names it; else, for a Python job,
// returns the value); anything else works as before; cleanup removes the job.
func checkJobDamage(t *testing.T, e *env, id, file, how string, listed, cliResult, sdkResult, pyJob bool) {
	base := filepath.Base(file)
	named := func(what string, r result) {
		out := r.stdout + r.stderr
		if r.code == 0 || !strings.Contains(out, id) || !strings.Contains(out, base) {
			t.Errorf("%s: exit %d, not naming %s and %s: %q %q", what, r.code, id, base, r.stdout, r.stderr)
		}
		if g := hasGoText(out); g != "" {
			t.Errorf("%s says Go's %q: %q", what, g, out)
		}
	}
	list := e.timed(t, "jobs", "list")
	row := ""
	for _, l := range strings.Split(list.stdout, "\n") {
		if strings.HasPrefix(l, id) {
			row = l
		}
	}
	if list.code != 0 || row == "" {
		t.Fatalf("jobs list: exit %d, no row for %s: %q %q", list.code, id, list.stdout, list.stderr)
	}
	status := e.timed(t, "jobs", "status", id)
	result := e.timed(t, "jobs", "result", "--no-cleanup", id)
	logs := e.timed(t, "jobs", "logs", id)
	if listed {
		if !strings.Contains(row, "ERROR") || !strings.Contains(list.stderr, id) || !strings.Contains(list.stderr, base) {
			t.Errorf("jobs list does not show %s as damaged, naming %s: %q %q", id, base, row, list.stderr)
		}
		named("jobs status", status)
	} else if strings.Contains(row, "ERROR") || !strings.Contains(status.stdout, "SUCCEEDED") {
		t.Errorf("an ended job with its %s %s: list %q, status %d %q %q", file, how, row, status.code, status.stdout, status.stderr)
	}
	if cliResult {
		named("jobs result", result)
	} else if result.code != 0 {
		t.Errorf("jobs result with %s %s: exit %d %q", file, how, result.code, result.stderr)
	}
	if logs.code != 0 && !listed {
		t.Errorf("jobs logs with %s %s: exit %d %q", file, how, logs.code, logs.stderr)
	}
	if pyJob {
		r := e.sdk(t, fmt.Sprintf(`import kinetic
try:
    v = kinetic.attach(%q).result(cleanup=False)
except Exception as e:
    print("RAISED", type(e).__name__, e)
else:
    print("VALUE", repr(v))
`, id))
		switch {
		case !sdkResult:
			if !strings.Contains(r.stdout, "VALUE [0, 1, 2]") {
				t.Errorf("result() with %s %s: %s", file, how, r.stdout)
			}
		case !strings.Contains(r.stdout, "RAISED") || !strings.Contains(r.stdout, id) || !strings.Contains(r.stdout, base):
			t.Errorf("result() does not raise naming %s and %s: %s", id, base, r.stdout)
		case how == "deleted" && !strings.Contains(r.stdout, "missing"):
			t.Errorf("result() does not say %s is missing: %s", base, r.stdout)
		case hasGoText(r.stdout) != "":
			t.Errorf("result() says Go's %q: %s", hasGoText(r.stdout), r.stdout)
		}
	}
	if r := e.timed(t, "jobs", "cleanup", id); r.code != 0 {
		t.Errorf("jobs cleanup: exit %d %q", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(e.store, "jobs", id)); !os.IsNotExist(err) {
		t.Errorf("jobs cleanup left jobs/%s (%v)", id, err)
	}
}

func faultBatchObjectsDamaged(t *testing.T, e *env) {
	gid := e.makeBatchOf(t, 3, true) // run by executors: input 2 raises, input 1's value has its own 1.pkl
	child := strings.Replace(gid, "grp-", "job-", 1) + "-1"
	// A second batch collected once (its successes cleaned up): it has a collection record.
	collected := e.makeBatch(t, 3)
	r := e.sdk(t, fmt.Sprintf("import kinetic\ntry:\n    kinetic.attach_batch(%q).results()\nexcept kinetic.BatchError:\n    pass\n", collected))
	records, _ := filepath.Glob(filepath.Join(e.store, "groups", collected, "collected", "*.json"))
	if r.code != 0 || len(records) == 0 {
		t.Fatalf("collecting batch %s: %d %s (records %v)", collected, r.code, r.stdout, records)
	}
	record := "collected/" + filepath.Base(records[0])
	const childEnvelope = "results/1.json"

	objects := []struct {
		gid, path string // path under the store ("": input 1's line in its envelope log)
		file      string // what an error names
		named     bool   // an error names it; else the batch reads as before
		sdkNames  bool   // results() raises naming it
	}{
		// A child's envelope is a line of its worker's log in the batch's ends/ (a
		// file store), read as its results/1.json (store.EnvelopeKey); its value of
		// more than 8 KiB is in results/.
		{gid, "", childEnvelope, true, true},
		{gid, "groups/" + gid + "/results/1.pkl", "results/1.pkl", false, true},
		{gid, "groups/" + gid + "/inputs.bin", "", false, false},
		{collected, "groups/" + collected + "/" + record, "groups/" + collected + "/" + record, true, true},
	}
	restore := snapshot(t, e.store, e.store)
	for _, o := range objects {
		for _, d := range damages {
			if d.name == "deleted" && o.file == "groups/"+collected+"/"+record {
				continue // a record removed is a cleanup of the batch under way
			}
			name := strings.ReplaceAll(strings.TrimPrefix(o.path, "groups/"+o.gid+"/"), "/", "-")
			if o.path == "" {
				name = "ends-line-1"
			}
			t.Run(name+"-"+d.name, func(t *testing.T) {
				defer restore()
				if o.path == "" {
					damageEndsLine(t, e.store, o.gid, 1, d.name)
				} else {
					d.damage(t, filepath.Join(e.store, filepath.FromSlash(o.path)))
				}
				if o.file == childEnvelope && d.name == "deleted" {
					// The input's reason names the file, never a worker that stopped.
					for what, r := range map[string]result{"jobs status": e.timed(t, "jobs", "status", child), "batch status": e.timed(t, "batch", "status", gid)} {
						out := r.stdout + r.stderr
						t.Logf("%s (exit %d): %s", what, r.code, out)
						if !strings.Contains(out, childEnvelope) || strings.Contains(out, "stopped") {
							t.Errorf("%s of input 1 without its %s: %q", what, childEnvelope, out)
						}
					}
				}
				checkBatchDamage(t, e, o.gid, o.file, d.name, o.named || (d.name == "deleted" && o.file == childEnvelope), o.sdkNames)
			})
		}
	}
}

// damageEndsLine damages input i's line in the envelope log of batch gid that holds it
// (docs/store.md, "A batch's ends") as how says: truncated (its envelope cut in the
// middle), garbage, empty (the line's envelope removed, its index left) or deleted (the
// line removed).
func damageEndsLine(t *testing.T, storeDir, gid string, i int, how string) {
	t.Helper()
	logs, _ := filepath.Glob(filepath.Join(storeDir, "groups", gid, "ends", "*.ends"))
	prefix := []byte(strconv.Itoa(i) + " ")
	for _, p := range logs {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		start := 0
		for start < len(raw) && !bytes.HasPrefix(raw[start:], prefix) {
			start += bytes.IndexByte(raw[start:], '\n') + 1
		}
		if start >= len(raw) {
			continue
		}
		end := start + bytes.IndexByte(raw[start:], '\n') + 1
		env := start + len(prefix)
		var out []byte
		switch how {
		case "truncated": // its envelope cut short, as a write torn by a full disk leaves it
			out = slices.Concat(raw[:(env+end)/2], []byte("\n"), raw[end:])
		case "garbage":
			out = slices.Concat(raw[:env], []byte("\x00\x01garbage{\n"), raw[end:])
		case "empty":
			out = slices.Concat(raw[:env], []byte("\n"), raw[end:])
		case "deleted":
			out = slices.Concat(raw[:start], raw[end:])
		default:
			t.Fatalf("no such damage %q", how)
		}
		if err := os.WriteFile(p, out, 0o600); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatalf("no envelope log of batch %s holds input %d: %v", gid, i, logs)
}

func checkBatchDamage(t *testing.T, e *env, gid, file, how string, named, sdkNames bool) {
	list := e.timed(t, "batch", "list")
	if list.code != 0 || !strings.Contains(list.stdout, gid) {
		t.Errorf("batch list: exit %d, no %s: %q %q", list.code, gid, list.stdout, list.stderr)
	}
	if strings.HasPrefix(file, "groups/") && (!strings.Contains(list.stdout, gid+"  DAMAGED") || !strings.Contains(list.stderr, file)) {
		t.Errorf("batch list does not show %s as damaged, naming %s: %q %q", gid, file, list.stdout, list.stderr)
	}
	status := e.timed(t, "batch", "status", gid)
	results := e.timed(t, "batch", "results", "--timeout", "20s", gid)
	if results.code == 124 {
		t.Errorf("batch results waits: %q", results.stderr)
	}
	for what, r := range map[string]result{"batch status": status, "batch results": results} {
		out := r.stdout + r.stderr
		if g := hasGoText(out); g != "" {
			t.Errorf("%s says Go's %q: %q", what, g, out)
		}
	}
	if named && !strings.Contains(results.stdout+results.stderr, filepath.Base(file)) {
		t.Errorf("batch results does not name %s: %q %q", file, results.stdout, results.stderr)
	}
	if !named && status.code != 0 {
		t.Errorf("batch status with an unread object %s: exit %d %q", how, status.code, status.stderr)
	}
	r := e.sdk(t, fmt.Sprintf(`import kinetic
try:
    v = kinetic.attach_batch(%q).results(cleanup=False, timeout=30)
except Exception as e:
    print("RAISED", type(e).__name__, e)
else:
    print("VALUES", repr(v))
`, gid))
	switch {
	case strings.Contains(r.stdout, "TimeoutError"):
		t.Errorf("results() waited: %s", r.stdout)
	case sdkNames && (!strings.Contains(r.stdout, "RAISED") || !strings.Contains(r.stdout, filepath.Base(file))):
		t.Errorf("results() does not raise naming %s: %s", file, r.stdout)
	case sdkNames && how == "deleted" && !strings.Contains(r.stdout, "missing"):
		t.Errorf("results() does not say %s is missing: %s", file, r.stdout)
	case !sdkNames && !strings.Contains(r.stdout, "input 2: ValueError: two is bad"):
		t.Errorf("results() with an unread object %s: %s", how, r.stdout)
	case hasGoText(r.stdout) != "":
		t.Errorf("results() says Go's %q: %s", hasGoText(r.stdout), r.stdout)
	}
	if r := e.timed(t, "batch", "cleanup", gid); r.code != 0 {
		t.Errorf("batch cleanup: exit %d %q", r.code, r.stderr)
	}
	if left := e.childrenInStore(gid); len(left) > 0 {
		t.Errorf("batch cleanup left its children %v", left)
	}
	if _, err := os.Stat(filepath.Join(e.store, "groups", gid)); !os.IsNotExist(err) {
		t.Errorf("batch cleanup left groups/%s (%v)", gid, err)
	}
}
