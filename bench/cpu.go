package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// cpuBench runs a batch of n inputs and one of base inputs, each with every process it
// starts reaped here, and prints the CPU time of each and the difference per input.
func cpuBench(batch func(n int) float64, n, base int) {
	check(unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0))
	load := func() string {
		b, _ := os.ReadFile("/proc/loadavg")
		return strings.Join(strings.Fields(string(b))[:3], " ")
	}
	measure := func(n int) (cpu, wall float64, parts map[string]float64) {
		before := childrenCPU()
		s := startSampler()
		wall = batch(n)
		parts = s.stop()
		reapAll(60 * time.Second)
		return childrenCPU() - before, wall, parts
	}
	fmt.Printf("Machine: %s, %d cores; load average before: %s\n\n", cpuModel(), numCPU(), load())
	cb, wb, _ := measure(base)
	cn, wn, parts := measure(n)
	fmt.Println("| batch | inputs | CPU (user+sys, all processes) | wall | inputs/s |")
	fmt.Println("|---|---|---|---|---|")
	fmt.Printf("| small | %d | %.2f s | %.2f s | %.0f/s |\n", base, cb, wb, float64(base)/wb)
	fmt.Printf("| large | %d | %.2f s | %.2f s | %.0f/s |\n", n, cn, wn, float64(n)/wn)
	per := (cn - cb) / float64(n-base)
	fmt.Printf("\nCPU per input (difference): **%.2f ms** → ceiling on %d cores: %.0f inputs/s. Load average after: %s\n",
		per*1e3, numCPU(), float64(numCPU())/per, load())
	fmt.Println("\nCPU of the large batch by process (sampled every 100 ms; approximate):")
	keys := make([]string, 0, len(parts))
	for k := range parts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(a, b int) bool { return parts[keys[a]] > parts[keys[b]] })
	for _, k := range keys {
		fmt.Printf("  %-40s %8.2f s  %6.2f ms/input\n", k, parts[k], parts[k]/float64(n)*1e3)
	}
}

func numCPU() int {
	var set unix.CPUSet
	if unix.SchedGetaffinity(0, &set) == nil {
		return set.Count()
	}
	return 1
}

func childrenCPU() float64 {
	var ru unix.Rusage
	check(unix.Getrusage(unix.RUSAGE_CHILDREN, &ru))
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// reapAll waits for every descendant (adopted orphans included) to exit.
func reapAll(limit time.Duration) {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		if err == unix.ECHILD {
			return
		}
		if pid <= 0 {
			time.Sleep(20 * time.Millisecond)
		}
	}
	fmt.Fprintln(os.Stderr, "bench: descendants still running after", limit)
}

type procSample struct {
	name                   string
	ppid                   int
	user, sys, cuser, csys float64
	alive                  bool
}

type sampler struct {
	mu   sync.Mutex
	last map[int]procSample
	done chan struct{}
	wg   sync.WaitGroup
}

func startSampler() *sampler {
	s := &sampler{last: map[int]procSample{}, done: make(chan struct{})}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			s.sample()
			select {
			case <-s.done:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return s
}

// stop returns the CPU by kind of process, user and system time apart: "NAME" for its
// own time, "NAME (reaped children)" for that of the children it reaped that were not
// sampled themselves (a warm server's forked calls).
func (s *sampler) stop() map[string]float64 {
	close(s.done)
	s.wg.Wait()
	s.sample()
	seen := map[int][2]float64{} // CPU of sampled processes that ended, by parent
	for _, p := range s.last {
		if !p.alive {
			c := seen[p.ppid]
			seen[p.ppid] = [2]float64{c[0] + p.user + p.cuser, c[1] + p.sys + p.csys}
		}
	}
	out := map[string]float64{}
	for pid, p := range s.last {
		out[p.name+" user"] += p.user
		out[p.name+" sys"] += p.sys
		if u := p.cuser - seen[pid][0]; u > 0.05 {
			out[p.name+" (reaped children) user"] += u
		}
		if y := p.csys - seen[pid][1]; y > 0.05 {
			out[p.name+" (reaped children) sys"] += y
		}
	}
	return out
}

func (s *sampler) sample() {
	me := os.Getpid()
	ppid, stats := readProcStats()
	s.mu.Lock()
	defer s.mu.Unlock()
	for pid, p := range s.last {
		if _, ok := stats[pid]; !ok {
			p.alive = false
			s.last[pid] = p
		}
	}
	for pid, f := range stats {
		if !descendant(ppid, pid, me) {
			continue
		}
		name := procName(pid)
		if name == "" {
			old, ok := s.last[pid]
			if !ok {
				continue
			}
			name = old.name
		}
		const tick = 100.0 // USER_HZ
		num := func(i int) float64 { v, _ := strconv.ParseFloat(f[i], 64); return v / tick }
		s.last[pid] = procSample{name: name, ppid: ppid[pid], alive: true, user: num(11), sys: num(12), cuser: num(13), csys: num(14)}
	}
}

// readProcStats reads every process's parent and the fields of its /proc/PID/stat from
// field 3 (state) on.
func readProcStats() (ppid map[int]int, stats map[int][]string) {
	ents, _ := os.ReadDir("/proc")
	ppid, stats = map[int]int{}, map[int][]string{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if f := procStat(e.Name()); f != nil {
			pp, _ := strconv.Atoi(f[1])
			ppid[pid] = pp
			stats[pid] = f
		}
	}
	return ppid, stats
}

// procStat is the fields of /proc/PID/stat from field 3 (state) on; nil when it cannot
// be read.
func procStat(pid string) []string {
	b, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
	if err != nil {
		return nil
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return nil
	}
	f := strings.Fields(string(b[i+2:]))
	if len(f) < 15 {
		return nil
	}
	return f
}

// descendant says pid descends from me (at most 64 generations up).
func descendant(ppid map[int]int, pid, me int) bool {
	for p, n := ppid[pid], 0; p > 1 && n < 64; p, n = ppid[p], n+1 {
		if p == me {
			return true
		}
	}
	return false
}

// procName names a process by its role: the kinetic subcommand, or the Python script.
func procName(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || len(b) == 0 {
		return ""
	}
	args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
	base := filepath.Base(args[0])
	switch {
	case strings.HasPrefix(base, "kinetic") && len(args) > 1:
		name := "kinetic " + args[1]
		for _, a := range args {
			if a == "--queue" {
				name += " --queue (worker)"
			}
		}
		return name
	case strings.HasPrefix(base, "python") && len(args) > 1:
		return "python " + filepath.Base(args[1])
	}
	return base
}
