package runner

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
)

// A warm pod's memory between jobs (docs/kubernetes.md, "Warm pods"). Each job's
// interpreter exits with its job, so a module's globals go with it; what can stay is
// memory no process frees by exiting: System V shared memory a job did not remove, tmpfs
// files outside the directories cleaned after it (/dev/shm), and the runner's own heap.
// The runner measures what its container holds before the first job and after each
// clean-up; a pod that grew by more than the bound takes no other job.

// DefaultWarmMemoryGrowth bounds how much more memory a warm pod may hold after a job
// than before its first one (a quarter of the container's memory limit when that is
// less).
const DefaultWarmMemoryGrowth = 256 << 20

// memUse is what the runner's container holds.
type memUse struct {
	// Held is anonymous plus shared memory (shmem: tmpfs, System V and POSIX shared
	// memory) of the container's memory cgroup, or the runner's own resident set when no
	// cgroup can be read.
	Held int64
	// Limit is the cgroup's memory limit (0: none known).
	Limit int64
	// From says where Held was read.
	From string
}

// noLimit: cgroup v1 writes "no limit" as a number near 2^63.
const noLimit = 1 << 62

// readMemUse reads the memory of the runner's container: its memory cgroup (v2, else
// v1; in a container the cgroup's own directory is mounted at /sys/fs/cgroup), else
// the runner's resident set from /proc/self/status.
func readMemUse() (memUse, error) {
	if u, ok := readCgroup(cgroupDirs("/proc/self/cgroup")); ok {
		return u, nil
	}
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return memUse{}, fmt.Errorf("read the runner's memory: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err == nil {
				return memUse{Held: kb << 10, From: "/proc/self/status VmRSS"}, nil
			}
		}
	}
	return memUse{}, errors.New("read the runner's memory: no VmRSS in /proc/self/status")
}

// cgroupDirs are the directories that may hold the runner's memory cgroup, most
// specific first: the path /proc/self/cgroup names under the v2 and v1 mounts, then the
// mounts' roots (what a container sees of its own cgroup).
func cgroupDirs(procCgroup string) []string {
	var dirs []string
	if b, err := os.ReadFile(procCgroup); err == nil {
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			f := strings.SplitN(line, ":", 3)
			if len(f) != 3 || f[2] == "/" {
				continue
			}
			switch {
			case f[0] == "0" && f[1] == "":
				dirs = append(dirs, filepath.Join("/sys/fs/cgroup", f[2]))
			case strings.Contains(","+f[1]+",", ",memory,"):
				dirs = append(dirs, filepath.Join("/sys/fs/cgroup/memory", f[2]))
			}
		}
	}
	return append(dirs, "/sys/fs/cgroup", "/sys/fs/cgroup/memory")
}

// readCgroup reads the first of dirs that holds a memory cgroup's memory.stat.
func readCgroup(dirs []string) (memUse, bool) {
	for _, d := range dirs {
		stat, err := os.ReadFile(filepath.Join(d, "memory.stat"))
		if err != nil {
			continue
		}
		v := map[string]int64{}
		sc := bufio.NewScanner(strings.NewReader(string(stat)))
		for sc.Scan() {
			if k, n, ok := strings.Cut(sc.Text(), " "); ok {
				v[k], _ = strconv.ParseInt(n, 10, 64)
			}
		}
		u := memUse{From: filepath.Join(d, "memory.stat")}
		if _, ok := v["anon"]; ok { // v2
			u.Held = v["anon"] + v["shmem"]
			u.Limit = readLimit(filepath.Join(d, "memory.max"))
		} else if _, ok := v["total_rss"]; ok { // v1, hierarchical
			u.Held = v["total_rss"] + v["total_shmem"]
			u.Limit = readLimit(filepath.Join(d, "memory.limit_in_bytes"))
		} else if _, ok := v["rss"]; ok {
			u.Held = v["rss"] + v["shmem"]
			u.Limit = readLimit(filepath.Join(d, "memory.limit_in_bytes"))
		} else {
			continue
		}
		return u, true
	}
	return memUse{}, false
}

func readLimit(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64) // "max" (v2): none
	if err != nil || n >= noLimit {
		return 0
	}
	return n
}

// memoryBound is the growth allowed over base: bound (DefaultWarmMemoryGrowth if 0), or a
// quarter of the limit when that is less.
func memoryBound(limit, bound int64) int64 {
	if bound <= 0 {
		bound = DefaultWarmMemoryGrowth
	}
	if limit > 0 && limit/4 < bound {
		bound = limit / 4
	}
	return bound
}

// checkMemory says why the pod must not take another job when it holds more than the
// bound over base (what it held before its first job); nil when it may.
func checkMemory(base, now memUse, bound int64) error {
	b := memoryBound(now.Limit, bound)
	if grew := now.Held - base.Held; grew > b {
		return fmt.Errorf("it holds %d MiB more memory than before its first job (%d MiB, from %s), over the bound of %d MiB: the job left shared memory (System V segments, files in /dev/shm) or the runner grew", grew>>20, now.Held>>20, now.From, b>>20)
	}
	return nil
}

// memoryAfterJob is checkMemory with the runner's heap handed back to the system first
// (a large result or log burst leaves it holding pages it no longer uses). A reading
// that fails lets the pod be kept: the bound is a guard, not a condition of warm pods.
func memoryAfterJob(base memUse, baseErr error, bound int64) error {
	if baseErr != nil {
		return nil
	}
	debug.FreeOSMemory()
	now, err := readMemUse()
	if err != nil || now.From != base.From {
		return nil
	}
	return checkMemory(base, now, bound)
}
