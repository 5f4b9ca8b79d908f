package runner

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestOOMText: a SIGKILL while the cgroup's OOM-kill count grew reads OOMKilled with the
// limit, for cgroup v2 and v1 files; one that did not grow, or another signal, reads as
// the signal; the count is noted once, so a later unrelated SIGKILL is not blamed on it.
func TestOOMText(t *testing.T) {
	sigkill := syscall.WaitStatus(syscall.SIGKILL) // signaled, by SIGKILL
	sigterm := syscall.WaitStatus(syscall.SIGTERM)
	for _, layout := range []struct{ events, limit, line, max, want string }{
		{"memory.events", "memory.max", "low 0\nhigh 0\nmax 3\noom 1\noom_kill %d\n", "50331648\n", "its memory limit of 48 MiB"},
		{"memory/memory.oom_control", "memory/memory.limit_in_bytes", "oom_kill_disable 0\nunder_oom 0\noom_kill %d\n", "9223372036854771712\n", "its memory limit (ask"},
	} {
		dir := t.TempDir()
		old := cgroupRoot
		cgroupRoot = dir
		oom.seen, oom.known = 0, false
		t.Cleanup(func() { cgroupRoot = old })
		write := func(name, text string) {
			os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
			if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		write(layout.limit, layout.max)
		write(layout.events, strings.Replace(layout.line, "%d", "2", 1))
		noteOOMCount()
		if got := waitText(sigkill); got != "killed by signal killed" {
			t.Errorf("%s: no new OOM kill: %q", layout.events, got)
		}
		write(layout.events, strings.Replace(layout.line, "%d", "3", 1))
		if got := waitText(sigterm); got != "killed by signal terminated" {
			t.Errorf("%s: SIGTERM: %q", layout.events, got)
		}
		got := waitText(sigkill)
		if !strings.HasPrefix(got, "OOMKilled: ") || !strings.Contains(got, layout.want) {
			t.Errorf("%s: OOM kill: %q, want OOMKilled and %q", layout.events, got, layout.want)
		}
		if got := waitText(sigkill); got != "killed by signal killed" {
			t.Errorf("%s: the same OOM kill blamed twice: %q", layout.events, got)
		}
	}
	// No cgroup files at all: the signal, as before.
	old := cgroupRoot
	cgroupRoot = t.TempDir()
	defer func() { cgroupRoot = old }()
	oom.seen, oom.known = 0, false
	noteOOMCount()
	if got := waitText(sigkill); got != "killed by signal killed" {
		t.Errorf("no cgroup: %q", got)
	}
}
