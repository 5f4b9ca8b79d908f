package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestJobsList: a screenful, newest first, with a "N more" line; --all, --status,
// --since; batches folded to one row; AGE and DURATION; --json keeps its rows and adds
// the new fields.
func TestJobsList(t *testing.T) {
	e := newEnv(t)
	gid := e.makeBatch(t, 3)
	var ids []string
	for i := 0; i < 3; i++ {
		ids = append(ids, e.submitAsync(t, "sh", "-c", fmt.Sprintf("exit %d", i%2*3)))
	}
	for i, id := range ids {
		e.waitStatus(t, id, map[bool]string{true: "SUCCEEDED", false: "FAILED"}[i%2 == 0])
	}

	r := e.run("jobs", "list")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != 0 || len(lines) != 5 {
		t.Fatalf("jobs list: %d rows, want a header, 3 jobs and 1 batch:\n%s%s", len(lines), r.stdout, r.stderr)
	}
	if h := strings.Fields(lines[0]); strings.Join(h, " ") != "ID STATUS FUNCTION ACCELERATOR BACKEND AGE DURATION" {
		t.Fatalf("header: %q", lines[0])
	}
	// Newest first: the three jobs (last submitted first), then the batch, folded.
	for i, want := range []string{ids[2], ids[1], ids[0], gid} {
		if !strings.HasPrefix(lines[i+1], want) {
			t.Errorf("row %d: %q, want %s", i+1, lines[i+1], want)
		}
	}
	if !strings.Contains(lines[4], "FAILED 1 of 3") || !strings.Contains(lines[4], "f ×3") {
		t.Errorf("batch row: %q", lines[4])
	}
	if strings.Count(r.stdout, "job-") != 3 {
		t.Errorf("batch children not folded:\n%s", r.stdout)
	}
	for _, l := range lines[1:4] {
		f := strings.Fields(l)
		if age, dur := f[len(f)-2], f[len(f)-1]; !strings.HasSuffix(age, "s") || !strings.HasSuffix(dur, "s") {
			t.Errorf("AGE/DURATION not human: %q", l)
		}
	}

	r = e.run("jobs", "list", "--limit", "2")
	if n := strings.Count(r.stdout, "\n"); n != 3 || !strings.Contains(r.stderr, "2 more; --all shows them") {
		t.Errorf("--limit 2: %d lines\n%s%s", n, r.stdout, r.stderr)
	}
	if r = e.run("jobs", "list", "--all", "--limit", "1"); strings.Count(r.stdout, "\n") != 5 {
		t.Errorf("--all:\n%s", r.stdout)
	}
	if r = e.run("jobs", "list", "--status", "failed"); strings.Count(r.stdout, "\n") != 3 || !strings.Contains(r.stdout, ids[1]) || !strings.Contains(r.stdout, gid) {
		t.Errorf("--status failed (the failed job and the batch's failed child):\n%s", r.stdout)
	}
	if r = e.run("jobs", "list", "--since", "1h"); strings.Count(r.stdout, "\n") != 5 {
		t.Errorf("--since 1h:\n%s", r.stdout)
	}
	for _, bad := range [][]string{{"--since", "soon"}, {"--status", "done"}, {"--limit", "0"}} {
		if r = e.run(append([]string{"jobs", "list"}, bad...)...); r.code == 0 || !strings.Contains(r.stderr, bad[0]) {
			t.Errorf("jobs list %v: exit %d %q", bad, r.code, r.stderr)
		}
	}

	r = e.run("jobs", "list", "--json")
	var rows []map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil || len(rows) != 6 {
		t.Fatalf("--json: every job unfolded, want 6: %v %q", err, r.stdout)
	}
	for _, row := range rows {
		if row["handle"] == nil || row["status"] == nil || row["age_seconds"] == nil || row["duration_seconds"] == nil || row["finished_at"] == nil {
			t.Errorf("--json row lacks a field: %v", row)
		}
	}
}

// TestJobsListWatch: --watch redraws the table in place on a terminal (tmux), and a job
// submitted meanwhile appears.
func TestJobsListWatch(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("no tmux")
	}
	e := newEnv(t)
	first := e.submitAsync(t, "true")
	sock := filepath.Join(t.TempDir(), "tmux.sock")
	tmux := func(args ...string) string {
		out, _ := exec.Command("tmux", append([]string{"-S", sock}, args...)...).CombinedOutput()
		return string(out)
	}
	envs := fmt.Sprintf("KINETIC_HOME=%s KINETIC_PROFILES_FILE=%s HOME=%s", filepath.Join(e.home, "data"), filepath.Join(e.home, "profiles.json"), e.home)
	tmux("new-session", "-d", "-x", "150", "-y", "30", "-c", e.dir, "env "+envs+" "+e.bin+" jobs list --watch --interval 300ms; sleep 30")
	defer tmux("kill-server")
	screen := func(want string) string {
		deadline := time.Now().Add(20 * time.Second)
		for {
			s := tmux("capture-pane", "-p")
			if strings.Contains(s, want) || time.Now().After(deadline) {
				return s
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	if s := screen(first); !strings.Contains(s, "Every 300ms") || !strings.HasPrefix(s, "ID ") {
		t.Fatalf("watch screen:\n%s", s)
	}
	second := e.submitAsync(t, "true")
	s := screen(second)
	if !strings.Contains(s, second) || strings.Count(s, "ID  ") != 1 {
		t.Fatalf("the new job is not redrawn in place:\n%s", s)
	}
	tmux("send-keys", "C-c")
	if s := screen("$"); strings.Contains(s, "context canceled") {
		t.Fatalf("Ctrl-C: %s", s)
	}
	os.Remove(sock)
}
