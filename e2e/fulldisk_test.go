package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

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
