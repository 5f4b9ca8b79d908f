// Package testproc stops what a test started and left running under its temporary
// directory: long-lived local supervisors idle for a minute after their last job, and a
// cancelled job may still be winding down when its test ends. Left alone they write into
// the directory while testing removes it ("directory not empty").
package testproc

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// StopUnderAtCleanup kills, when t ends and before a t.TempDir made earlier is removed,
// every process whose command line names dir or whose working directory is inside it.
func StopUnderAtCleanup(t testing.TB, dir string) {
	t.Cleanup(func() { StopUnder(t, dir) })
}

// StopUnder kills the processes StopUnderAtCleanup describes and waits (up to 10 s) until
// they are gone.
func StopUnder(t testing.TB, dir string) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		pids := Under(dir)
		if len(pids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Logf("testproc: processes under %s still running after SIGKILL: %v", dir, pids)
			return
		}
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Under lists the live processes (not this one, not zombies) whose command line names
// dir or whose working directory is inside it.
func Under(dir string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		if stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err != nil || zombie(stat) {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		cwd, _ := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		if strings.Contains(string(cmd), dir) || cwd == dir || strings.HasPrefix(cwd, dir+"/") {
			pids = append(pids, pid)
		}
	}
	return pids
}

// zombie reads the state field of /proc/PID/stat (after the command in parentheses).
func zombie(stat []byte) bool {
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] == 'Z'
}
