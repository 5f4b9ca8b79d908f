package runner

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// The kernel counts the processes its OOM killer ended in each memory cgroup. A call
// killed by SIGKILL while that count grew was killed for memory: the runner, which
// survives its child in a container with a memory limit, says so itself (the pod's own
// OOMKilled state comes only when the container's main process dies, and the runner
// reports first).

// cgroupRoot is where this process's cgroup files are: in a container with its own
// cgroup namespace (and on the host, for the root cgroup) /sys/fs/cgroup. Tests move it.
var cgroupRoot = "/sys/fs/cgroup"

var oom struct {
	sync.Mutex
	seen  int64 // the count already accounted for
	known bool
}

// oomKillCount reads the OOM-kill count of the memory cgroup: cgroup v2's memory.events,
// or v1's memory/memory.oom_control (both have an "oom_kill N" line).
func oomKillCount() (int64, bool) {
	for _, f := range []string{"memory.events", "memory/memory.oom_control"} {
		raw, err := os.ReadFile(filepath.Join(cgroupRoot, f))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(bytes.NewReader(raw))
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "oom_kill "); ok {
				if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
					return n, true
				}
			}
		}
	}
	return 0, false
}

// noteOOMCount records the count before a call starts, so kills before it are not its.
func noteOOMCount() {
	n, ok := oomKillCount()
	oom.Lock()
	defer oom.Unlock()
	if ok && (!oom.known || n > oom.seen) {
		oom.seen, oom.known = n, true
	}
}

// oomKilled reports whether the OOM killer ended a process of this cgroup since the
// count was last noted, and notes the new count.
func oomKilled() bool {
	n, ok := oomKillCount()
	if !ok {
		return false
	}
	oom.Lock()
	defer oom.Unlock()
	grew := oom.known && n > oom.seen
	oom.seen, oom.known = n, true
	return grew
}

// memoryLimit is the cgroup's memory limit in a person's units ("48 MiB"), or "" when
// there is none or it cannot be read.
func memoryLimit() string {
	for _, f := range []string{"memory.max", "memory/memory.limit_in_bytes"} {
		raw, err := os.ReadFile(filepath.Join(cgroupRoot, f))
		if err != nil {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
		if err != nil || n <= 0 || n >= 1<<60 {
			return ""
		}
		if n%(1<<20) == 0 {
			return fmt.Sprintf("%d MiB", n>>20)
		}
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return ""
}

// oomText says a SIGKILL was the OOM killer's, when the cgroup's count says so.
func oomText(ws syscall.WaitStatus) (string, bool) {
	if !ws.Signaled() || ws.Signal() != syscall.SIGKILL || !oomKilled() {
		return "", false
	}
	limit := "its memory limit"
	if l := memoryLimit(); l != "" {
		limit = "its memory limit of " + l
	}
	return "OOMKilled: killed by the kernel for using more than " + limit + " (ask for more memory — pod_memory, or a larger machine — or lower the job's memory use)", true
}
