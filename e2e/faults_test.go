package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kinetic-run/kinetic/testkit/faultfs"
)

// The fault corpus (issue: nothing lost, nothing stuck): each case injects one fault
// through the real binary — a full tmpfs, bytes written into the store, a kill by PID —
// and says what a person must see. docs/status.md counts them.
var faultCases = []struct {
	name  string
	fault string // what is done to the system
	want  string // what a person must see
	run   func(t *testing.T, e *env)
}{
	{
		name:  "output-fills-disk",
		fault: "the job prints until the file system of the store and the workspace (a 4 MiB tmpfs) is full",
		want:  "FAILED with reason \"no space left on device\" within seconds; the output so far readable",
		run:   faultOutputFillsDisk,
	},
	{
		name:  "job-fills-store",
		fault: "a command job writes to its output directory until the store (a 2 MiB tmpfs of its own) is full; read commands run while it stays full",
		want:  "jobs status and jobs result answer (nothing written, no write error); FAILED \"no space left on device\" naming the store, also after space is freed; handle and spec whole",
		run:   faultJobFillsStore,
	},
	{
		name:  "batch-fills-store",
		fault: "in a 30-input batch run by one group worker, input 3 fills the store (a 4 MiB tmpfs) and returns a value that cannot be stored; inputs 4 and 5 end while it is full; input 6 frees the space",
		want:  "inputs 3-5 FAILED \"no space left on device\" naming the store; the worker survives and the other 27 inputs SUCCEED; every input ran once",
		run:   faultBatchFillsStore,
	},
	{
		name:  "status-write-on-full-disk",
		fault: "the disk is full when a finished job's status would be rewritten (jobs cancel)",
		want:  "the old status.json stays whole; status, result and list keep working after space is freed",
		run:   faultStatusOnFullDisk,
	},
	{
		name:  "secrets-not-world-readable",
		fault: "a job captures AWS_SECRET_ACCESS_KEY",
		want:  "env.json is 0600 and no store directory is readable by others",
		run:   faultSecretsPermissions,
	},
	{
		name:  "modes-as-documented",
		fault: "a Python job with a result, a command job writing an output, a batch run by executors",
		want:  "every directory of the store and of the state directory (KINETIC_HOME/local) is 0700, every file 0600 (0700 if executable): result.pkl, inputs.bin, blobs, .kinetic-store, local/slots, jobs/ID/root and jobs/ID/out included (docs/store.md)",
		run:   faultModes,
	},
	{
		name:  "concurrent-prunes",
		fault: "two `kinetic prune --json` at once over 150 removable workspaces and 150 empty output directories",
		want:  "everything removed; every path reported by exactly one of the two",
		run:   faultConcurrentPrune,
	},
	{
		name:  "captured-secret-only-in-env-json",
		fault: "a job and a batch (run_async_map) capture a variable holding a random value",
		want:  "the value is in no file of the store or of KINETIC_HOME but env.json objects (jobs/ID/, groups/G/), each 0600; never in a batch's template.json",
		run:   faultSecretOnlyInEnvJSON,
	},
	{
		name:  "unreadable-request-line",
		fault: "kinetic serve --stdio reads a request with NaN in it (Python's json for float('nan')), then a line of garbage",
		want:  "each is answered: the first with its own id, the second with its line number, saying what was wrong without Go's words; the next request is served",
		run:   faultUnreadableLines,
	},
	{
		name:  "symlinks-leaving-the-root",
		fault: "the working directory holds links to /etc/shadow and to ../outside.txt",
		want:  "neither target is read or uploaded; a warning names each link",
		run:   faultSymlinksOutside,
	},
	{
		name:  "supervisor-lock-deleted",
		fault: "supervisor.lock of a running job is deleted",
		want:  "the job stays RUNNING and then SUCCEEDED (never FAILED first)",
		run:   faultLockDeleted,
	},
	{
		name:  "supervisor-killed-subprocesses",
		fault: "kill -9 of a running job's supervisor (cold path, KINETIC_WARM=0) while the job's own subprocess runs",
		want:  "the job's subprocesses die with it; the job is FAILED with the supervisor named",
		run:   faultSupervisorKilled,
	},
	{
		name:  "status-json-deleted",
		fault: "status.json of a finished job is deleted",
		want:  "status and result come from the job's envelope at once; never rewritten as \"never started\"",
		run:   faultStatusDeleted,
	},
	{
		name:  "damaged-entries-listed",
		fault: "one job's status.json holds garbage, another's handle.json is empty, a third has no handle.json (its submitter died)",
		want:  "jobs list shows each as an ERROR row with the file named, warns on stderr, exits 0; jobs status names the job and the file; jobs cleanup removes them",
		run:   faultDamagedEntries,
	},
	{
		name:  "batch-submitter-killed",
		fault: "the store as a submitter killed after 3 of 6 inputs leaves it: manifest unfinished, last heartbeat 2 minutes old",
		want:  "batch results returns at once: the submitted inputs' results, the others as submission failures (\"never submitted\"); batch status says submission is complete",
		run:   faultBatchSubmitterKilled,
	},
	{
		name:  "batch-manifest-damaged",
		fault: "groups/G/manifest.json of a finished batch truncated, replaced by garbage, emptied or deleted (batches run by executors and with a job per input)",
		want:  "batch list lists each batch as damaged, naming it and the file, and exits 0; batch status names the file; batch cleanup G removes the children and groups/G/",
		run:   faultBatchManifestDamaged,
	},
	{
		name:  "batch-template-damaged",
		fault: "groups/G/template.json of a finished batch holds garbage",
		want:  "batch status and batch results fail at once naming the file (never 4/4 NOT_FOUND, never a wait); batch cleanup G removes the batch",
		run:   faultBatchTemplateDamaged,
	},
	{
		name:  "handle-json-deleted",
		fault: "handle.json of a finished job is deleted",
		want:  "jobs status says at once that the job is damaged, naming handle.json (never \"no job ID in the store\"); jobs list shows an ERROR row naming it; jobs cleanup removes the job",
		run:   faultHandleDeleted,
	},
	{
		name:  "one-disk-fills",
		fault: "a command job that ignores SIGTERM writes to its output directory until the one small disk (a 4 MiB tmpfs) holding both the store and the state directory is full, and on through its stop's grace period",
		want:  "FAILED \"no space left on device\" (never \"supervisor stopped\"), readers answer while it is full, handle and spec whole, the same verdict once space is freed",
		run:   faultOneDiskFills,
	},
	{
		name:  "python-job-no-space",
		fault: "on one full disk (store and state directory), a Python function's own writes to KINETIC_OUTPUT_DIR fail with ENOSPC: it raises the OSError, catches it, or returns a 3 MiB value",
		want:  "raised: FAILED with the function's OSError, result() raises it (errno 28); caught: SUCCEEDED with its value; the value: FAILED \"no space left on device in the store …\"",
		run:   faultPythonNoSpace,
	},
	{
		name:  "job-objects-damaged",
		fault: "each object of an ended job (a Python job with a value, a command job with a log and a captured variable) truncated, replaced by garbage, emptied or deleted, one at a time: spec.json, payload.pkl, env.json, status.json, result.json, result.pkl, logs/00000000.log",
		want:  "what can no longer be read is named with what is wrong with it by every command that reads it (jobs list an ERROR row for status.json; jobs result and the SDK's result() for result.json and result.pkl, a deleted result.pkl as missing), never Go's words, never a wait; what nothing reads any more changes nothing; jobs cleanup removes the job",
		run:   faultJobObjectsDamaged,
	},
	{
		name:  "batch-objects-damaged",
		fault: "one object of a finished batch at a time truncated, replaced by garbage, emptied or deleted: a child's result.json and result.pkl (groups/G/results/1.json and 1.pkl), groups/G/inputs.bin, a collection record (groups/G/collected/r000000001.json)",
		want:  "batch results and the SDK's results() name the object (BatchError's message names each failed input's cause), never Go's words, never a wait; what nothing reads any more changes nothing; batch cleanup removes the batch and its children",
		run:   faultBatchObjectsDamaged,
	},
	{
		name:  "batch-markers-damaged",
		fault: "one object of a finished batch at a time truncated, replaced by garbage, emptied or deleted: a gone marker of a collected batch (groups/G/gone/0), a child's entry of a batch of a job per input (groups/G/children/00000001.json), the captured environment (groups/G/env.json)",
		want:  "batch status, batch results and the SDK's results() say what they said before, or name the object and the fix (a non-zero exit or a DAMAGED row); never Go's words, never a wait; batch cleanup removes the batch and its children",
		run:   faultBatchMarkersDamaged,
	},
	{
		name:  "tombstone-damaged",
		fault: "the tombstone of a job whose result was collected (tombstones/ID.json) truncated, replaced by garbage, emptied or deleted, after a listing indexed it",
		want:  "jobs list lists the job and names the tombstone; jobs status and the SDK's result() fail naming it and the fix; jobs cleanup removes it; deleted: the job is not found; never Go's words",
		run:   faultTombstoneDamaged,
	},
}

func TestFaults(t *testing.T) {
	for _, c := range faultCases {
		t.Run(c.name, func(t *testing.T) {
			t.Logf("fault: %s; want: %s", c.fault, c.want)
			c.run(t, newEnv(t))
		})
	}
}

// onTmpfs puts the environment's data directory (store, workspaces, environments) on a
// tmpfs of sizeKiB.
func (e *env) onTmpfs(t *testing.T, sizeKiB int) string {
	t.Helper()
	data := filepath.Join(e.home, "data")
	os.MkdirAll(data, 0o755)
	mnt := faultfs.Tmpfs(t, sizeKiB)
	if err := os.Remove(data); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(mnt, data); err != nil {
		t.Fatal(err)
	}
	return mnt
}

// submitAsync submits a command job with --async and returns its ID.
func (e *env) submitAsync(t *testing.T, argv ...string) string {
	t.Helper()
	r := e.run(append([]string{"run", "--async", "--json", "--"}, argv...)...)
	var h map[string]string
	if err := json.Unmarshal([]byte(r.stdout), &h); r.code != 0 || err != nil || h["job_id"] == "" {
		t.Fatalf("submit %v: %d %v %q", argv, r.code, err, r.stderr)
	}
	return h["job_id"]
}

// waitStatus polls jobs status until the job is in state want, failing t after 30 s.
func (e *env) waitStatus(t *testing.T, id, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for e.statusJSON(t, id)["status"] != want {
		if time.Now().After(deadline) {
			t.Fatalf("job %s never %s: %v", id, want, e.statusJSON(t, id))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (e *env) statusJSON(t *testing.T, id string) map[string]any {
	t.Helper()
	r := e.run("jobs", "status", "--json", id)
	var st map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		t.Fatalf("jobs status --json %s: %v: %q %q", id, err, r.stdout, r.stderr)
	}
	return st
}

func faultOutputFillsDisk(t *testing.T, e *env) {
	e.onTmpfs(t, 4096)
	start := time.Now()
	id := e.submitAsync(t, "sh", "-c", "echo first-line; while :; do echo aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa; done")
	var st map[string]any
	for {
		st = e.statusJSON(t, id)
		if st["status"] == "FAILED" || st["status"] == "SUCCEEDED" {
			break
		}
		if time.Since(start) > 60*time.Second {
			t.Fatalf("still %v after %s with a full disk", st["status"], time.Since(start).Round(time.Second))
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("ended %v after %s: %v", st["status"], time.Since(start).Round(time.Millisecond), st["reason"])
	if st["status"] != "FAILED" || !strings.Contains(st["reason"].(string), "no space left on device") {
		t.Fatalf("status %v, reason %q; want FAILED, no space left on device", st["status"], st["reason"])
	}
	if r := e.run("jobs", "logs", id); !strings.HasPrefix(r.stdout, "first-line\n") {
		t.Fatalf("logs after a full disk: code %d, %q... %q", r.code, r.stdout[:min(len(r.stdout), 80)], r.stderr)
	}
}

func faultStatusOnFullDisk(t *testing.T, e *env) {
	mnt := e.onTmpfs(t, 4096)
	id := e.submitAsync(t, "sh", "-c", "echo done")
	e.waitStatus(t, id, "SUCCEEDED")
	statusFile := filepath.Join(mnt, "store", "jobs", id, "status.json")
	before, err := os.ReadFile(statusFile)
	if err != nil || len(before) == 0 {
		t.Fatalf("status.json: %v %q", err, before)
	}
	filler := faultfs.Fill(t, mnt)
	e.run("jobs", "cancel", id) // rewrites nothing for a finished job; must not break it
	e.run("jobs", "list")
	after, _ := os.ReadFile(statusFile)
	if string(after) != string(before) {
		t.Fatalf("status.json changed on a full disk: %q -> %q", before, after)
	}
	os.Remove(filler)
	if st := e.statusJSON(t, id); st["status"] != "SUCCEEDED" {
		t.Fatalf("status after freeing space: %v", st)
	}
	r := e.run("jobs", "list", "--json")
	if !strings.Contains(r.stdout, id) {
		t.Fatalf("the job dropped out of jobs list: %q %q", r.stdout, r.stderr)
	}
}

func faultSecretsPermissions(t *testing.T, e *env) {
	os.Setenv("AWS_SECRET_ACCESS_KEY", "not-really-a-secret")
	defer os.Unsetenv("AWS_SECRET_ACCESS_KEY")
	r := e.run("run", "--capture-env", "AWS_SECRET_ACCESS_KEY", "--", "sh", "-c", "echo ok")
	if r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	// The store, and the local backend's workspaces (payload.pkl, result.pkl, logs).
	ws, _ := filepath.Glob(filepath.Join(e.home, "data", "local", "jobs", "job-*"))
	for _, root := range append([]string{e.store}, ws...) {
		if _, err := os.Stat(root); err != nil {
			t.Fatal(err)
		}
		walkPerms(t, root)
	}
}

// walkPerms fails for any file under root that another user could read: one whose
// directories, from root down, all let others in.
func walkPerms(t *testing.T, root string) {
	open := map[string]bool{filepath.Dir(root): true}
	err := filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		reachable := open[filepath.Dir(p)]
		if fi.IsDir() {
			open[p] = reachable && fi.Mode().Perm()&0o005 != 0
			if p == root && fi.Mode().Perm()&0o077 != 0 {
				t.Errorf("directory %s is %v, want 0700", p, fi.Mode().Perm())
			}
			return nil
		}
		if reachable && fi.Mode().Perm()&0o004 != 0 {
			t.Errorf("%s (%v) can be read by other users", p, fi.Mode().Perm())
		}
		if filepath.Base(p) == "env.json" && fi.Mode().Perm() != 0o600 {
			t.Errorf("%s is %v, want 0600", p, fi.Mode().Perm())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func faultSymlinksOutside(t *testing.T, e *env) {
	marker := "outside-secret-4b1d"
	os.WriteFile(filepath.Join(e.home, "outside.txt"), []byte(marker), 0o644)
	os.Symlink("../outside.txt", filepath.Join(e.dir, "up"))
	os.Symlink("/etc/shadow", filepath.Join(e.dir, "shadow"))
	r := e.run("run", "--", "sh", "-c", "ls; cat up shadow 2>&1 || true")
	if r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	for _, l := range []string{"up -> ../outside.txt", "shadow -> /etc/shadow"} {
		if !strings.Contains(r.stderr, l) {
			t.Errorf("no warning naming %q: %q", l, r.stderr)
		}
	}
	if strings.Contains(r.stdout+r.stderr, marker) {
		t.Errorf("the job read the outside file: %q", r.stdout)
	}
	shadow, _ := os.ReadFile("/etc/shadow")
	filepath.Walk(e.store, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		b, _ := os.ReadFile(p)
		if bytes.Contains(b, []byte(marker)) || (len(shadow) > 0 && bytes.Contains(b, shadow)) {
			t.Errorf("%s holds what a link outside the root points at", p)
		}
		return nil
	})
}

func faultLockDeleted(t *testing.T, e *env) {
	// Long enough that a loaded machine's status polls still see it RUNNING.
	id := e.submitAsync(t, "sh", "-c", "sleep 8; echo done")
	e.waitStatus(t, id, "RUNNING")
	deadline := time.Now().Add(40 * time.Second)
	if err := os.Remove(filepath.Join(e.home, "data", "local", "jobs", id, "supervisor.lock")); err != nil {
		t.Fatal(err)
	}
	var seen []any
	for {
		st := e.statusJSON(t, id)
		if len(seen) == 0 || seen[len(seen)-1] != st["status"] {
			seen = append(seen, st["status"])
		}
		if st["status"] == "SUCCEEDED" || st["status"] == "FAILED" {
			if st["status"] != "SUCCEEDED" {
				t.Fatalf("after the lock was deleted: %v (%v); statuses seen %v", st["status"], st["reason"], seen)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("never finished: %v", seen)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func faultSupervisorKilled(t *testing.T, e *env) {
	pidFile := filepath.Join(e.home, "grandchild.pid")
	os.Setenv("KINETIC_WARM", "0")
	defer os.Unsetenv("KINETIC_WARM")
	id := e.submitAsync(t, "sh", "-c", "sleep 300 & echo $! > "+pidFile+"; wait")
	var pid int
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, _ := os.ReadFile(pidFile)
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			pid = n
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the job never started its subprocess: %v", e.statusJSON(t, id))
		}
		time.Sleep(50 * time.Millisecond)
	}
	defer syscall.Kill(pid, syscall.SIGKILL)
	raw, err := os.ReadFile(filepath.Join(e.store, "jobs", id, "status.json"))
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Local struct {
			PID int `json:"supervisor_pid"`
		} `json:"local"`
	}
	if err := json.Unmarshal(raw, &st); err != nil || st.Local.PID <= 0 {
		t.Fatalf("status.json %q: %v", raw, err)
	}
	if err := syscall.Kill(st.Local.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for syscall.Kill(pid, 0) == nil {
		if b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); strings.Contains(string(b), ") Z ") {
			break // a zombie waiting for its reaper is dead
		}
		if time.Now().After(deadline) {
			t.Fatalf("the job's subprocess %d outlived its killed supervisor", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if s := e.statusJSON(t, id); s["status"] != "FAILED" || !strings.Contains(s["reason"].(string), "supervisor") {
		t.Fatalf("status after kill -9 of the supervisor: %v", s)
	}
}

func faultStatusDeleted(t *testing.T, e *env) {
	id := e.submitAsync(t, "sh", "-c", "echo hi")
	e.waitStatus(t, id, "SUCCEEDED")
	if err := os.Remove(filepath.Join(e.store, "jobs", id, "status.json")); err != nil {
		t.Fatal(err)
	}
	if st := e.statusJSON(t, id); st["status"] != "SUCCEEDED" {
		t.Fatalf("status after status.json was deleted: %v", st)
	}
	done := make(chan result, 1)
	go func() { done <- e.run("jobs", "result", "--json", id) }()
	select {
	case r := <-done:
		if r.code != 0 {
			t.Fatalf("jobs result: %d %q %q", r.code, r.stdout, r.stderr)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("jobs result hangs after status.json was deleted")
	}
}

func faultDamagedEntries(t *testing.T, e *env) {
	ids := []string{e.submitAsync(t, "true"), e.submitAsync(t, "true")}
	for _, id := range ids {
		e.waitStatus(t, id, "SUCCEEDED")
	}
	garbled, emptied := ids[0], ids[1]
	os.WriteFile(filepath.Join(e.store, "jobs", garbled, "status.json"), []byte("{not json"), 0o600)
	os.WriteFile(filepath.Join(e.store, "jobs", emptied, "handle.json"), nil, 0o600)
	orphan := "job-0000000001abcdefghijklm" // made in 1970: long past any submission
	os.MkdirAll(filepath.Join(e.store, "jobs", orphan), 0o700)
	os.WriteFile(filepath.Join(e.store, "jobs", orphan, "payload.pkl"), []byte("x"), 0o600)

	r := e.run("jobs", "list")
	if r.code != 0 {
		t.Fatalf("jobs list: %d %q", r.code, r.stderr)
	}
	for id, file := range map[string]string{garbled: "status.json", emptied: "handle.json", orphan: "handle.json"} {
		if !strings.Contains(r.stdout, id) || !strings.Contains(r.stderr, id) || !strings.Contains(r.stderr, file) {
			t.Errorf("jobs list does not show %s (%s) with a warning:\n%s\n%s", id, file, r.stdout, r.stderr)
		}
	}
	if n := strings.Count(r.stdout, "ERROR"); n != 3 {
		t.Errorf("jobs list shows %d ERROR rows, want 3:\n%s", n, r.stdout)
	}
	r = e.run("jobs", "status", garbled)
	if r.code == 0 || !strings.Contains(r.stderr, garbled) || !strings.Contains(r.stderr, "status.json") {
		t.Errorf("jobs status of a damaged job: %d %q", r.code, r.stderr)
	}
	for _, id := range []string{garbled, emptied, orphan} {
		if r := e.run("jobs", "cleanup", id); r.code != 0 {
			t.Errorf("jobs cleanup %s: %d %q", id, r.code, r.stderr)
		}
	}
	if got := e.jobsInStore(); len(got) != 0 {
		t.Errorf("left in the store after cleanup: %v", got)
	}
}

func faultBatchSubmitterKilled(t *testing.T, e *env) {
	// A batch whose submitter died after 3 of 6 inputs, as the store holds it then: the
	// manifest unfinished with its last heartbeat two minutes old, children 3-5 never
	// written. (Killing the engine at that instant is a race on the local backend,
	// whose queue takes every input within milliseconds; the scheduler's own test kills
	// it mid-way.) Each input a job of its own: a batch run by executors is written
	// whole at once, so no submitter dies half-way through it.
	gid := e.makeBatch(t, 6, "KINETIC_BATCH_ISOLATION=job")
	mpath := filepath.Join(e.store, "groups", gid, "manifest.json")
	raw, err := os.ReadFile(mpath)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	m["submission_complete"], m["settled"] = false, false
	m["heartbeat"] = time.Now().Add(-2 * time.Minute).UTC().Format(time.RFC3339Nano)
	m["children"] = m["children"].([]any)[:3]
	raw, _ = json.Marshal(m)
	os.WriteFile(mpath, raw, 0o600)
	for i := 3; i < 6; i++ {
		os.Remove(filepath.Join(e.store, "groups", gid, "children", fmt.Sprintf("%08d.json", i)))
	}
	start := time.Now()
	r := e.run("batch", "results", "--json", "--timeout", "2m", gid)
	t.Logf("batch results returned %d after %s", r.code, time.Since(start).Round(time.Millisecond))
	if r.code == 124 || time.Since(start) > 30*time.Second {
		t.Fatalf("batch results waited for a batch whose submitter is gone: %d %q", r.code, r.stderr)
	}
	var rows []struct {
		Index  int    `json:"index"`
		Status string `json:"status"`
		Error  string `json:"error"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil || len(rows) != 6 {
		t.Fatalf("rows: %v, %d rows: %q %q", err, len(rows), r.stdout, r.stderr)
	}
	for _, row := range rows {
		if lost := strings.Contains(row.Error, "never submitted"); lost != (row.Index >= 3) {
			t.Errorf("input %d: %q %q", row.Index, row.Status, row.Error)
		}
	}
	if r.code != 1 {
		t.Errorf("exit %d, want 1 (inputs failed)", r.code)
	}
	st := e.run("batch", "status", "--json", gid)
	if !strings.Contains(st.stdout, `"submission_complete": true`) {
		t.Fatalf("batch status of a batch whose submitter is gone: %q", st.stdout)
	}
}

// childrenInStore lists the job prefixes in the store that belong to batch gid: its
// derived children (job.ChildID) and the jobs whose handle names the batch.
func (e *env) childrenInStore(gid string) []string {
	var out []string
	for _, id := range e.jobsInStore() {
		if strings.Contains(id, strings.TrimPrefix(gid, "grp-")) {
			out = append(out, id)
			continue
		}
		raw, _ := os.ReadFile(filepath.Join(e.store, "jobs", id, "handle.json"))
		if bytes.Contains(raw, []byte(gid)) {
			out = append(out, id)
		}
	}
	return out
}

func faultBatchManifestDamaged(t *testing.T, e *env) {
	damages := []struct {
		name, isolation string
		damage          func(path string)
	}{
		{"truncated", "", func(p string) { raw, _ := os.ReadFile(p); os.WriteFile(p, raw[:len(raw)/2], 0o600) }},
		{"garbage", "job", func(p string) { os.WriteFile(p, []byte("\x00\x01garbage{"), 0o600) }},
		{"empty", "", func(p string) { os.WriteFile(p, nil, 0o600) }},
		{"deleted", "", func(p string) { os.Remove(p) }},
		{"deleted-job-per-input", "job", func(p string) { os.Remove(p) }},
	}
	gids := make([]string, len(damages))
	for i, d := range damages {
		var extra []string
		if d.isolation != "" {
			extra = append(extra, "KINETIC_BATCH_ISOLATION="+d.isolation)
		}
		gids[i] = e.makeBatch(t, 3, extra...)
		if len(e.childrenInStore(gids[i])) == 0 {
			t.Fatalf("%s: batch %s left no children in the store to clean up", d.name, gids[i])
		}
		d.damage(filepath.Join(e.store, "groups", gids[i], "manifest.json"))
	}
	start := time.Now()
	r := e.run("batch", "list")
	t.Logf("batch list after %s:\n%s%s", time.Since(start).Round(time.Millisecond), r.stdout, r.stderr)
	if r.code != 0 {
		t.Fatalf("batch list: exit %d %q", r.code, r.stderr)
	}
	for i, gid := range gids {
		if !strings.Contains(r.stdout, gid) || !strings.Contains(r.stderr, gid) || !strings.Contains(r.stderr, "groups/"+gid+"/manifest.json") {
			t.Errorf("%s: batch list hides %s or gives no warning naming its manifest", damages[i].name, gid)
		}
	}
	if n := strings.Count(r.stdout, "DAMAGED"); n != len(gids) {
		t.Errorf("batch list shows %d DAMAGED rows, want %d", n, len(gids))
	}
	r = e.run("batch", "list", "--json")
	var rows []map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil || len(rows) != len(gids) {
		t.Fatalf("batch list --json: %v %q", err, r.stdout)
	}
	for _, row := range rows {
		if msg, _ := row["error"].(string); !strings.Contains(msg, "manifest.json") {
			t.Errorf("batch list --json row without the damage named: %v", row)
		}
	}
	for i, gid := range gids {
		r = e.run("batch", "status", gid)
		if r.code == 0 || !strings.Contains(r.stderr, "groups/"+gid+"/manifest.json") || strings.Contains(r.stderr, "json:") {
			t.Errorf("%s: batch status %s: %d %q", damages[i].name, gid, r.code, r.stderr)
		}
		r = e.run("batch", "cleanup", gid)
		if r.code != 0 {
			t.Errorf("%s: batch cleanup %s: exit %d %q", damages[i].name, gid, r.code, r.stderr)
		}
		if left := e.childrenInStore(gid); len(left) > 0 {
			t.Errorf("%s: batch cleanup %s left its children %v", damages[i].name, gid, left)
		}
		if _, err := os.Stat(filepath.Join(e.store, "groups", gid)); !os.IsNotExist(err) {
			t.Errorf("%s: batch cleanup %s left groups/%s (%v)", damages[i].name, gid, gid, err)
		}
	}
}

func faultBatchTemplateDamaged(t *testing.T, e *env) {
	gid := e.makeBatch(t, 4)
	tmpl := filepath.Join(e.store, "groups", gid, "template.json")
	if _, err := os.Stat(tmpl); err != nil {
		t.Fatalf("the batch has no template to damage: %v", err)
	}
	os.WriteFile(tmpl, []byte("{\"handle\": garbage"), 0o600)
	for _, args := range [][]string{{"batch", "status", gid}, {"batch", "results", "--timeout", "60s", gid}} {
		start := time.Now()
		r := e.run(args...)
		took := time.Since(start)
		t.Logf("%v: exit %d after %s: %q %q", args, r.code, took.Round(time.Millisecond), r.stdout, r.stderr)
		if r.code == 0 || r.code == 124 || took > 45*time.Second || !strings.Contains(r.stderr, "groups/"+gid+"/template.json") || strings.Contains(r.stderr, "json:") {
			t.Errorf("%v with a damaged template: exit %d after %s: %q %q", args, r.code, took.Round(time.Millisecond), r.stdout, r.stderr)
		}
	}
	if r := e.run("batch", "cleanup", gid); r.code != 0 {
		t.Errorf("batch cleanup %s: exit %d %q", gid, r.code, r.stderr)
	}
	if left := e.childrenInStore(gid); len(left) > 0 {
		t.Errorf("batch cleanup %s left its children %v", gid, left)
	}
	if _, err := os.Stat(filepath.Join(e.store, "groups", gid)); !os.IsNotExist(err) {
		t.Errorf("batch cleanup %s left groups/%s (%v)", gid, gid, err)
	}
}

func faultHandleDeleted(t *testing.T, e *env) {
	id := e.submitAsync(t, "sh", "-c", "echo hi")
	e.waitStatus(t, id, "SUCCEEDED")
	if err := os.Remove(filepath.Join(e.store, "jobs", id, "handle.json")); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"jobs", "status", id}, {"jobs", "result", id}, {"jobs", "logs", id}} {
		r := e.run(args...)
		if r.code == 0 || !strings.Contains(r.stderr, "handle.json") || !strings.Contains(r.stderr, "damaged") || strings.Contains(r.stderr, "no job") {
			t.Errorf("%v after handle.json was deleted: %d %q", args, r.code, r.stderr)
		}
	}
	r := e.run("jobs", "list")
	if r.code != 0 || !strings.Contains(r.stdout, id) || !strings.Contains(r.stdout, "ERROR") || !strings.Contains(r.stderr, "handle.json") {
		t.Errorf("jobs list after handle.json was deleted: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if r := e.run("jobs", "cleanup", id); r.code != 0 {
		t.Errorf("jobs cleanup %s: %d %q", id, r.code, r.stderr)
	}
	if got := e.jobsInStore(); len(got) != 0 {
		t.Errorf("left in the store after cleanup: %v", got)
	}
}
