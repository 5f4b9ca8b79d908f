package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/testkit/faultfs"
)

// Full disks (issue 30, item 4): the store on a tmpfs of its own, the state directory
// (workspaces, the supervisor's files) on the ordinary disk, as a user with a store on
// a small volume has it.

// onFullStore gives e a store on a fresh tmpfs of sizeKiB: the environment to run
// commands with, and the store's directory.
func (e *env) onSmallStore(t *testing.T, sizeKiB int) ([]string, string) {
	t.Helper()
	mnt := faultfs.Tmpfs(t, sizeKiB)
	return []string{"KINETIC_STORE=file://" + mnt}, mnt
}

// freeKiB is what is left on the file system of dir.
func freeKiB(t *testing.T, dir string) uint64 {
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir, &fs); err != nil {
		t.Fatal(err)
	}
	return fs.Bavail * uint64(fs.Bsize) / 1024
}

func faultJobFillsStore(t *testing.T, e *env) {
	storeEnv, mnt := e.onSmallStore(t, 2048)
	r := e.runEnv(storeEnv, "run", "--async", "--json", "--", "sh", "-c",
		`echo start; i=0; while :; do cat /dev/zero > "$KINETIC_OUTPUT_DIR/f$i"; i=$((i+1)); done`)
	var h map[string]string
	if err := json.Unmarshal([]byte(r.stdout), &h); r.code != 0 || err != nil || h["job_id"] == "" {
		t.Fatalf("submit: %d %v %q", r.code, err, r.stderr)
	}
	id := h["job_id"]
	jobDir := filepath.Join(mnt, "jobs", id)
	before := map[string][]byte{}
	for _, f := range []string{"handle.json", "spec.json"} {
		b, err := os.ReadFile(filepath.Join(jobDir, f))
		if err != nil {
			t.Fatal(err)
		}
		before[f] = b
	}
	// Read commands, while the store is full: they answer, and write nothing.
	status := func() (map[string]any, result) {
		r := e.runEnv(storeEnv, "jobs", "status", "--json", id)
		var st map[string]any
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &st) != nil {
			t.Fatalf("jobs status on a full store: exit %d, %q %q", r.code, r.stdout, r.stderr)
		}
		return st, r
	}
	start := time.Now()
	var st map[string]any
	for {
		st, _ = status()
		if st["status"] == "FAILED" || st["status"] == "SUCCEEDED" {
			break
		}
		if time.Since(start) > 60*time.Second {
			t.Fatalf("still %v after a minute on a full store", st["status"])
		}
		time.Sleep(200 * time.Millisecond)
	}
	if free := freeKiB(t, mnt); free > 64 {
		t.Fatalf("the store is not full (%d KiB free): the fault was not injected", free)
	}
	reason, _ := st["reason"].(string)
	t.Logf("ended %v after %s: %s", st["status"], time.Since(start).Round(time.Millisecond), reason)
	if st["status"] != "FAILED" || !strings.Contains(reason, "no space left on device") || !strings.Contains(reason, mnt) || strings.Contains(reason, "killed") {
		t.Errorf("status %v, reason %q; want FAILED, no space left on device naming the store %s", st["status"], reason, mnt)
	}
	res := e.runEnv(storeEnv, "jobs", "result", id)
	if res.code != 1 || !strings.Contains(res.stderr, "no space left on device") || strings.Contains(res.stderr, "status.json") {
		t.Errorf("jobs result on a full store: exit %d, %q; want the job's failure, no write error", res.code, res.stderr)
	}
	for f, b := range before {
		if now, err := os.ReadFile(filepath.Join(jobDir, f)); err != nil || string(now) != string(b) {
			t.Errorf("%s changed on a full store: %v", f, err)
		}
	}
	if raw, err := os.ReadFile(filepath.Join(jobDir, "status.json")); err != nil || !json.Valid(raw) {
		t.Errorf("status.json not whole: %v %q", err, raw)
	}
	// Space back: the same verdict, never "killed".
	os.RemoveAll(filepath.Join(mnt, "outputs", id))
	st, _ = status()
	if reason2, _ := st["reason"].(string); st["status"] != "FAILED" || reason2 != reason {
		t.Errorf("after freeing space: %v %q, want FAILED %q", st["status"], reason2, reason)
	}
}

func faultBatchFillsStore(t *testing.T, e *env) {
	storeEnv, mnt := e.onSmallStore(t, 4096)
	filler := filepath.Join(mnt, "outputs", "filler")
	ran := filepath.Join(e.home, "ran")
	// One worker runs the 30 inputs in order: input 3 fills the store and returns a
	// value that cannot be stored; 4 and 5 end while it is still full (5 once the test
	// has read the batch then), with values of 6,000 bytes, which their envelopes carry
	// (at most 8 KiB) and which do not fit in the rest of a block of the worker's
	// envelope log (docs/store.md, "A batch's ends"): a small one would, and be
	// recorded whole; 6 frees the space.
	gofile := filepath.Join(e.home, "go")
	script := filepath.Join(e.dir, "fill_batch.py")
	os.WriteFile(script, []byte(`import os, sys, kinetic
import time
FILLER, RAN, GO = `+pyStr(filler)+`, `+pyStr(ran)+`, `+pyStr(gofile)+`
@kinetic.run(accelerator="cpu")
def f(x):
    with open(RAN, "a") as r:
        r.write("%d\n" % x)
    if x == 3:
        try:
            with open(FILLER, "wb") as w:
                while True:
                    w.write(b"x" * 65536)
                    w.flush()
        except OSError:
            pass
        return b"v" * 200000
    if x == 5:
        deadline = time.time() + 60
        while not os.path.exists(GO) and time.time() < deadline:
            time.sleep(0.05)
    if x == 6 and os.path.exists(FILLER):
        os.remove(FILLER)
    if x in (4, 5):
        return b"w" * 6000
    return x * 10
b = f.run_async_map(range(30), max_concurrent=1)
print(b.group_id, flush=True)
b.wait()
`), 0o644)
	cmd := exec.Command("python3", script)
	cmd.Dir = e.dir
	cmd.Env = append(os.Environ(), "KINETIC_BIN="+e.bin, "KINETIC_HOME="+filepath.Join(e.home, "data"), "KINETIC_WARM_IDLE=5s",
		"KINETIC_PROFILES_FILE="+filepath.Join(e.home, "profiles.json"), "PYTHONPATH="+filepath.Join(repoRoot(), "python"), storeEnv[0])
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	// While input 5 runs, the store is full: inputs 3 and 4 read as failed for want of
	// space (their envelopes kept by the worker), and the read writes nothing.
	deadline := time.Now().Add(90 * time.Second)
	for raw, _ := os.ReadFile(ran); !strings.Contains(string(raw), "\n5\n"); raw, _ = os.ReadFile(ran) {
		if time.Now().After(deadline) {
			t.Fatalf("input 5 never started: ran %q; %s %s", raw, out.String(), errb.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	gid := strings.TrimSpace(out.String())
	if free := freeKiB(t, mnt); free > 64 {
		t.Fatalf("the store is not full (%d KiB free): the fault was not injected", free)
	}
	for _, i := range []int{3, 4} {
		r := e.runEnv(storeEnv, "jobs", "status", "--json", job.ChildID(gid, i))
		if r.code != 0 || !strings.Contains(r.stdout, "FAILED") || !strings.Contains(r.stdout, "no space left on device") || !strings.Contains(r.stdout, mnt) {
			t.Errorf("input %d while the store is full: exit %d %q %q; want FAILED, no space left on device naming the store", i, r.code, r.stdout, r.stderr)
		}
	}
	for _, f := range []string{"manifest.json", "template.json", "inputs.bin"} {
		if fi, err := os.Stat(filepath.Join(mnt, "groups", gid, f)); err != nil || fi.Size() == 0 {
			t.Errorf("groups/%s/%s on a full store: %v", gid, f, err)
		}
	}
	os.WriteFile(gofile, nil, 0o644)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("batch: %v\n%s%s", err, out.String(), errb.String())
	}
	r := e.runEnv(storeEnv, "batch", "results", "--json", gid)
	var rows []struct {
		Index  int    `json:"index"`
		Status string `json:"status"`
		Error  string `json:"error"`
		Result *struct {
			ExcMessage string `json:"exc_message"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil || len(rows) != 30 {
		t.Fatalf("batch results: %v, %d rows: %q %q", err, len(rows), r.stdout, r.stderr)
	}
	for _, row := range rows {
		if row.Result != nil {
			row.Error += row.Result.ExcMessage
		}
		full := row.Index >= 3 && row.Index <= 5
		switch {
		case full && (row.Status != "FAILED" || !strings.Contains(row.Error, "no space left on device") || !strings.Contains(row.Error, mnt)):
			t.Errorf("input %d (store full): %s %q; want FAILED, no space left on device naming the store", row.Index, row.Status, row.Error)
		case !full && row.Status != "SUCCEEDED":
			t.Errorf("input %d: %s %q; want SUCCEEDED", row.Index, row.Status, row.Error)
		}
	}
	for _, f := range []string{"manifest.json", "template.json"} {
		if raw, err := os.ReadFile(filepath.Join(mnt, "groups", gid, f)); err != nil || !json.Valid(raw) {
			t.Errorf("groups/%s/%s not whole: %v %q", gid, f, err, raw)
		}
	}
	if kept, _ := filepath.Glob(filepath.Join(e.home, "data", "local", "groups", gid, "ended", "*")); len(kept) != 0 {
		t.Errorf("envelopes still kept outside the store once it had space: %v", kept)
	}
	raw, _ := os.ReadFile(ran)
	counts := map[string]int{}
	for _, l := range strings.Fields(string(raw)) {
		counts[l]++
	}
	for i := 0; i < 30; i++ {
		if n := counts[strconv.Itoa(i)]; n != 1 {
			t.Errorf("input %d ran %d times, want once", i, n)
		}
	}
}

// pyStr is s as a Python string literal.
func pyStr(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func faultModes(t *testing.T, e *env) {
	// A job (a Python function with a result, files in its working directory) and a
	// batch run by executors.
	os.WriteFile(filepath.Join(e.dir, "modes.py"), []byte("def f():\n    return 42\n"), 0o644)
	os.WriteFile(filepath.Join(e.dir, "tool.sh"), []byte("#!/bin/sh\necho hi\n"), 0o755)
	if r := e.run("run", "modes.py::f"); r.code != 0 {
		t.Fatalf("run: %d %q", r.code, r.stderr)
	}
	if r := e.run("run", "--async", "--", "sh", "-c", "echo out > $KINETIC_OUTPUT_DIR/o.txt"); r.code != 0 {
		t.Fatalf("run: %d %q", r.code, r.stderr)
	}
	e.makeBatch(t, 4)
	// Every directory Kinetic made 0700, every file it wrote readable by its user only.
	// Below a shipped tree (jobs/ID/root, or the tree a worker keeps for its next job,
	// workers/K/tree) and an output directory (outputs/ID) are the user's files, with the
	// modes the user or the job gave them: those directories themselves are 0700.
	for _, root := range []string{e.store, filepath.Join(e.home, "data", "local")} {
		err := filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			if parent := filepath.Base(filepath.Dir(p)); parent == "root" || parent == "tree" || filepath.Base(filepath.Dir(filepath.Dir(p))) == "outputs" {
				if fi.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			switch m := fi.Mode(); {
			case m.IsDir() && m.Perm() != 0o700:
				t.Errorf("directory %s is %v, want 0700", p, m.Perm())
			case m.IsRegular() && m.Perm()&0o077 != 0:
				t.Errorf("file %s is %v, want 0600 (or 0700)", p, m.Perm())
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func faultConcurrentPrune(t *testing.T, e *env) {
	// What two prunes both find removable: workspaces of jobs gone from the store and
	// empty output directories, untouched for a minute.
	old := time.Now().Add(-time.Minute)
	var want []string
	for i := 0; i < 150; i++ {
		id := job.NewID()
		ws := filepath.Join(e.home, "data", "local", "jobs", id)
		os.MkdirAll(filepath.Join(ws, "root"), 0o700)
		os.WriteFile(filepath.Join(ws, "runner.log"), []byte("log\n"), 0o600)
		out := filepath.Join(e.store, "outputs", id)
		os.MkdirAll(out, 0o700)
		for _, p := range []string{ws, out} {
			os.Chtimes(p, old, old)
			want = append(want, p)
		}
	}
	type freed struct {
		Freed []struct{ Kind, Path string }
	}
	cmds := make([]*exec.Cmd, 2)
	outs := make([]*bytes.Buffer, 2)
	for k := range cmds {
		c := exec.Command(e.bin, "prune", "--older-than", "1s", "--json")
		c.Dir = e.dir
		c.Env = append(os.Environ(), "KINETIC_HOME="+filepath.Join(e.home, "data"), "KINETIC_PROFILES_FILE="+filepath.Join(e.home, "profiles.json"), "HOME="+e.home, "KINETIC_PROJECT=")
		outs[k] = &bytes.Buffer{}
		c.Stdout, c.Stderr = outs[k], os.Stderr
		cmds[k] = c
	}
	for _, c := range cmds {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]int{}
	for k, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("prune %d: %v", k, err)
		}
		var f freed
		if err := json.Unmarshal(outs[k].Bytes(), &f); err != nil {
			t.Fatalf("prune %d --json: %v %q", k, err, outs[k].String())
		}
		for _, x := range f.Freed {
			seen[x.Path]++
		}
	}
	twice := 0
	for _, p := range want {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s not removed: %v", p, err)
		}
		switch seen[p] {
		case 0:
			t.Errorf("%s removed, but neither prune reported it", p)
		case 2:
			twice++
		}
	}
	if twice > 0 {
		t.Errorf("%d of %d paths reported freed by both prunes; each must report only what it removed", twice, len(want))
	}
}

// faultOneDiskFills is job-fills-store with the store and the state directory (the
// workspaces, the supervisor's files) on one small disk, as the default KINETIC_HOME has
// them: even the final status kept in the workspace has no room once the job filled it.
func faultOneDiskFills(t *testing.T, e *env) {
	mnt := e.onTmpfs(t, 4096)
	// It ignores SIGTERM (so do its cats), and so goes on writing through the grace
	// period after it is stopped: space given back then is taken again at once.
	id := e.submitAsync(t, "sh", "-c", `trap '' TERM; echo start; i=0; while :; do cat /dev/zero > "$KINETIC_OUTPUT_DIR/f$i"; i=$((i+1)); done`)
	jobDir := filepath.Join(mnt, "store", "jobs", id)
	before := map[string][]byte{}
	for _, f := range []string{"handle.json", "spec.json"} {
		b, err := os.ReadFile(filepath.Join(jobDir, f))
		if err != nil {
			t.Fatal(err)
		}
		before[f] = b
	}
	start := time.Now()
	var st map[string]any
	for {
		r := e.run("jobs", "status", "--json", id)
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &st) != nil {
			t.Fatalf("jobs status on a full disk: exit %d, %q %q", r.code, r.stdout, r.stderr)
		}
		if st["status"] == "FAILED" || st["status"] == "SUCCEEDED" {
			break
		}
		if time.Since(start) > 60*time.Second {
			t.Fatalf("still %v after a minute on a full disk", st["status"])
		}
		time.Sleep(200 * time.Millisecond)
	}
	if free := freeKiB(t, mnt); free > 300 {
		t.Fatalf("the disk is not full (%d KiB free): the fault was not injected", free)
	}
	reason, _ := st["reason"].(string)
	t.Logf("ended %v after %s: %s", st["status"], time.Since(start).Round(time.Millisecond), reason)
	if st["status"] != "FAILED" || !strings.Contains(reason, "no space left on device") || strings.Contains(reason, "killed") || strings.Contains(reason, "supervisor") {
		t.Errorf("status %v, reason %q; want FAILED, no space left on device", st["status"], reason)
	}
	if res := e.run("jobs", "result", id); res.code != 1 || !strings.Contains(res.stderr, "no space left on device") {
		t.Errorf("jobs result on a full disk: exit %d, %q", res.code, res.stderr)
	}
	if r := e.run("jobs", "list"); r.code != 0 || !strings.Contains(r.stdout, id) {
		t.Errorf("jobs list on a full disk: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
	for f, b := range before {
		if now, err := os.ReadFile(filepath.Join(jobDir, f)); err != nil || string(now) != string(b) {
			t.Errorf("%s changed on a full disk: %v", f, err)
		}
	}
	// Space back: the same verdict, never "killed".
	os.RemoveAll(filepath.Join(mnt, "store", "outputs", id))
	if st2 := e.statusJSON(t, id); st2["status"] != "FAILED" || st2["reason"] != reason {
		t.Errorf("after freeing space: %v %q, want FAILED %q", st2["status"], st2["reason"], reason)
	}
}

// faultPythonNoSpace: a Python function whose own writes to KINETIC_OUTPUT_DIR fill the
// disk (the store and the state directory on it): raising the OSError, catching it, and
// returning a value the full store cannot take.
func faultPythonNoSpace(t *testing.T, e *env) {
	mnt := e.onTmpfs(t, 8192)
	for _, c := range []struct {
		mode string
		want string // what the script prints
	}{
		{"raise", "FAILED|OSError|RAISED OSError 28"},
		{"catch", "SUCCEEDED||VALUE 'caught'"},
		{"value", "FAILED|no space left on device in the store file://" + e.store + "|RAISED"},
	} {
		t.Run(c.mode, func(t *testing.T) {
			r := e.sdk(t, `import os, time, kinetic
@kinetic.run(accelerator="cpu")
def fill(mode):
    d = os.environ["KINETIC_OUTPUT_DIR"]
    try:
        with open(os.path.join(d, "big"), "wb") as f:
            while True:
                f.write(b"x" * 65536)
                f.flush()
    except OSError:
        if mode == "raise":
            raise
    if mode == "value":
        return b"v" * (3 << 20)
    return "caught"
h = fill.run_async(`+pyStr(c.mode)+`)
deadline = time.time() + 60
while h.status().value not in ("SUCCEEDED", "FAILED") and time.time() < deadline:
    time.sleep(0.1)
import subprocess, json
st = json.loads(subprocess.run([os.environ["KINETIC_BIN"], "jobs", "status", "--json", h.job_id], capture_output=True, text=True).stdout)
print("STATUS", st["status"])
print("REASON", st.get("reason", ""))
try:
    v = h.result(cleanup=False)
except Exception as e:
    print("RAISED", type(e).__name__, getattr(e, "errno", ""), e)
else:
    print("VALUE", repr(v))
print("ID", h.job_id)
`)
			t.Logf("%s", r.stdout)
			lines := map[string]string{}
			outcome := ""
			for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
				k, v, _ := strings.Cut(l, " ")
				lines[k] = v
				if k == "RAISED" || k == "VALUE" {
					outcome = l
				}
			}
			want := strings.SplitN(c.want, "|", 3)
			if lines["STATUS"] != want[0] || !strings.Contains(lines["REASON"], want[1]) || !strings.HasPrefix(outcome, want[2]) {
				t.Errorf("%s: got %q, want status %s, reason with %q, %s", c.mode, r.stdout, want[0], want[1], want[2])
			}
			if c.mode != "value" && strings.Contains(lines["REASON"], "kinetic.RunnerError") || strings.Contains(lines["REASON"], "supervisor") {
				t.Errorf("%s: a system error instead of the job's own: %q", c.mode, lines["REASON"])
			}
			if c.mode == "raise" && !strings.Contains(lines["REASON"], "OSError: [Errno 28]") {
				t.Errorf("raise: the reason is not the function's OSError: %q", lines["REASON"])
			}
			os.RemoveAll(filepath.Join(mnt, "store", "outputs", lines["ID"]))
		})
	}
}
