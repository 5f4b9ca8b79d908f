package testproc

import (
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"
)

func TestStopUnder(t *testing.T) {
	dir := t.TempDir()
	byCwd := exec.Command("sleep", "300")
	byCwd.Dir = dir
	byArg := exec.Command("sh", "-c", "sleep 300; : "+dir)
	other := exec.Command("sleep", "300")
	for _, c := range []*exec.Cmd{byCwd, byArg, other} {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		go c.Wait() // reap, so a killed child is not a zombie for long
	}
	defer other.Process.Kill()
	got := Under(dir)
	if !slices.Contains(got, byCwd.Process.Pid) || !slices.Contains(got, byArg.Process.Pid) || slices.Contains(got, other.Process.Pid) {
		t.Fatalf("Under(%s) = %v; want %d and %d, not %d", dir, got, byCwd.Process.Pid, byArg.Process.Pid, other.Process.Pid)
	}
	StopUnder(t, dir)
	time.Sleep(100 * time.Millisecond)
	if left := Under(dir); len(left) != 0 {
		t.Fatalf("still running under %s: %v", dir, left)
	}
	if err := syscall.Kill(other.Process.Pid, 0); err != nil {
		t.Fatalf("a process outside the directory was stopped: %v", err)
	}
}
