// Command bench measures Kinetic against the physical limits of this machine and prints
// a Markdown table (docs/benchmarks.md keeps the results, with the machine and the
// command).
//
//	go run ./bench -bin bin/kinetic [-n 30] [-python /usr/bin/python3]
//
// With -cpu it measures instead the CPU time the batch costs: every process of the run
// (the SDK, the engine, the workers, the warm servers and their forked children) is a
// descendant of this one, which becomes their child subreaper and reaps them all, so
// getrusage(RUSAGE_CHILDREN) is the whole tree's user+system time. Two batches (-map
// inputs and -cpu-base inputs) give the CPU per input without the fixed start-up cost.
//
// sync-call: the overhead of a sync call of a no-op function through the Python SDK on
// the local backend, against the same function run by a bare `python3 -c` in the same
// run, and by a bare `python3 -c` that imports cloudpickle first (the floor issue 29
// measures against: what a job's interpreter needs before it can run a pickled call).
package main

import (
	"syscall"

	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"github.com/kinetic-run/kinetic/testkit/testproc"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
)

const syncScript = `
import json, subprocess, sys, time
import kinetic

@kinetic.run(accelerator="cpu")
def noop():
    return None

n = int(sys.argv[1])
noop()  # starts the engine; the first call is not what a user repeats
sdk, bare, barecp = [], [], []
for _ in range(n):
    t = time.perf_counter(); noop(); sdk.append(time.perf_counter() - t)
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", "def noop():\n    return None\nnoop()"], check=True)
    bare.append(time.perf_counter() - t)
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import cloudpickle\ndef noop():\n    return None\nnoop()"], check=True)
    barecp.append(time.perf_counter() - t)
print(json.dumps({"sdk": sdk, "bare": bare, "bare_cloudpickle": barecp}))
`

const batchScript = `
import json, os, subprocess, sys, time
import kinetic

@kinetic.run(accelerator="cpu")
def noop(x):
    return x

n = int(sys.argv[1])
rounds = int(os.environ.get("BENCH_MAP_ROUNDS", "1"))
noop(0)  # starts the engine and the warm workers
from kinetic._engine import mark
# The bare runs: n of them, none ("nobare"), or the number given (scaled to n); and as
# many bare interpreters that import cloudpickle (what a job's Python needs), a tenth of
# n. They are run in turns with the maps, so that all see the same machine.
k = 0 if sys.argv[2:] == ["nobare"] else int(sys.argv[2]) if sys.argv[2:] else n
m = max(1, n // 10) if sys.argv[2:] != ["nobare"] else 0
maps, bare_t, barecp_t = [], 0.0, 0.0
for r in range(rounds):
    time.sleep(0.5)  # the last map's cleanup, done after its results() returned
    mark("bench.map")
    t = time.perf_counter()
    b = noop.run_async_map(range(n))
    mark("bench.map.returned")
    res = b.results()
    maps.append(time.perf_counter() - t)
    mark("bench.map.results")
    assert res == list(range(n))
    t = time.perf_counter()
    for i in range(k * r // rounds, k * (r + 1) // rounds):
        subprocess.run([sys.executable, "-c", "def noop(x):\n    return x\nnoop(%d)" % i], check=True)
    bare_t += time.perf_counter() - t
    t = time.perf_counter()
    for i in range(m * r // rounds, m * (r + 1) // rounds):
        subprocess.run([sys.executable, "-c", "import cloudpickle\ndef noop(x):\n    return x\nnoop(%d)" % i], check=True)
    barecp_t += time.perf_counter() - t
batch = sorted(maps)[len(maps) // 2]
bare = bare_t / k * n if k else 0.0
barecp = barecp_t / m * n if m else 0.0
import resource
from kinetic import _engine
hwm = 0.0
for l in open("/proc/%d/status" % _engine.engine()._proc.pid):
    if l.startswith("VmHWM:"):
        hwm = int(l.split()[1]) / 1024.0
sdk = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
print(json.dumps({"batch": batch, "batches": maps, "bare": bare, "bare_cloudpickle": barecp, "sdk_rss": sdk, "engine_rss": hwm}))
`

// benchFlags are the command's flags.
type benchFlags struct {
	bin, python, compare              string
	n, mapN, cpuBase, rounds, bareMap int
	mapRounds                         int
	cpu, trace                        bool
}

func parseFlags() benchFlags {
	var f benchFlags
	flag.StringVar(&f.bin, "bin", "bin/kinetic", "kinetic binary")
	flag.IntVar(&f.n, "n", 30, "samples per measurement")
	flag.IntVar(&f.mapN, "map", 1000, "inputs of the batch measurement (0 = skip)")
	flag.StringVar(&f.python, "python", defaultPython(), "Python with cloudpickle")
	flag.BoolVar(&f.cpu, "cpu", false, "measure the CPU time per batch input (all processes) instead")
	flag.IntVar(&f.cpuBase, "cpu-base", 20, "with -cpu, the small batch whose cost is taken as fixed")
	flag.StringVar(&f.compare, "compare", "", "another kinetic binary (say, the build before a change): both are measured, interleaved in rounds")
	flag.IntVar(&f.rounds, "rounds", 3, "with -compare, how many rounds alternate the two binaries")
	flag.IntVar(&f.bareMap, "bare-map", 0, "how many bare interpreters time the map's anchor (scaled to -map; 0: -map)")
	flag.IntVar(&f.mapRounds, "map-rounds", 5, "maps measured (the median is reported), in turns with the bare interpreters")
	flag.BoolVar(&f.trace, "trace", false, "also print where the sync calls' time goes, phase by phase (KINETIC_TRACE marks of every process)")
	flag.Parse()
	return f
}

// benchRun is one run of the command: its flags, and the home and project its
// measurements run in.
type benchRun struct {
	f                     benchFlags
	abs, repo, home, proj string
	tracePath             string
}

func main() {
	b := newBenchRun(parseFlags())
	defer b.cleanup()
	f := b.f
	switch {
	case f.compare != "":
		other, err := filepath.Abs(f.compare)
		check(err)
		compareBench(b.runWith, other, b.abs, f.n, f.mapN, f.rounds, f.bareMap, f.python)
	case f.cpu:
		cpuBench(func(n int) float64 {
			var batch struct{ Batch, Bare float64 }
			b.run("bench_batch.py", n, &batch, "nobare")
			return batch.Batch
		}, f.mapN, f.cpuBase)
	default:
		b.syncAndMap()
	}
}

// newBenchRun makes the home and the project with the scripts.
func newBenchRun(f benchFlags) *benchRun {
	b := &benchRun{f: f}
	var err error
	b.abs, err = filepath.Abs(f.bin)
	check(err)
	b.repo, err = os.Getwd()
	check(err)
	b.home, err = os.MkdirTemp("", "kinetic-bench-")
	check(err)
	b.proj = filepath.Join(b.home, "proj")
	check(os.MkdirAll(b.proj, 0o755))
	check(os.WriteFile(filepath.Join(b.proj, "bench_sync.py"), []byte(syncScript), 0o644))
	check(os.WriteFile(filepath.Join(b.proj, "bench_batch.py"), []byte(batchScript), 0o644))
	check(os.WriteFile(filepath.Join(b.proj, "requirements.txt"), nil, 0o644))
	if f.trace {
		b.tracePath = filepath.Join(b.home, "trace")
	}
	return b
}

// cleanup stops the home's long-lived supervisors and warm servers, which stay idle for
// a while after the last call (or they run beside the next bench run), and removes it.
func (b *benchRun) cleanup() {
	for _, pid := range testproc.Under(b.home) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	os.RemoveAll(b.home)
}

// runWith runs script with arg (and extra) through bin, its data in the home's data
// directory, and decodes the last line it prints into v.
func (b *benchRun) runWith(bin, data, script string, arg int, v any, extra ...string) {
	cmd := exec.Command(b.f.python, append([]string{script, fmt.Sprint(arg)}, extra...)...)
	cmd.Dir = b.proj
	// The SDK of the binary's own tree (BIN/../../python), if it has one: a build
	// compared with -compare runs with its own SDK.
	sdk := filepath.Join(filepath.Dir(filepath.Dir(bin)), "python")
	if _, err := os.Stat(filepath.Join(sdk, "kinetic")); err != nil {
		sdk = filepath.Join(b.repo, "python")
	}
	cmd.Env = append(os.Environ(), "KINETIC_TRACE="+b.tracePath, "KINETIC_BIN="+bin, "KINETIC_HOME="+filepath.Join(b.home, data), "KINETIC_WARM_IDLE=5s",
		"PYTHONPATH="+sdk, "KINETIC_PROFILES_FILE="+filepath.Join(b.home, "profiles.json"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	check(cmd.Run())
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	check(json.Unmarshal([]byte(lines[len(lines)-1]), v))
}

func (b *benchRun) run(script string, arg int, v any, extra ...string) {
	b.runWith(b.abs, "data", script, arg, v, extra...)
}

// syncResult is what bench_sync.py prints.
type syncResult struct {
	SDK, Bare   []float64
	BareCPickle []float64 `json:"bare_cloudpickle"`
}

// mapResult is what bench_batch.py prints.
type mapResult struct {
	Batch, Bare float64
	Batches     []float64
	BareCPickle float64 `json:"bare_cloudpickle"`
	SDKRSS      float64 `json:"sdk_rss"`
	EngineRSS   float64 `json:"engine_rss"`
}

// syncAndMap measures the sync calls, then the map (unless -map 0), and prints them.
func (b *benchRun) syncAndMap() {
	f := b.f
	var res syncResult
	b.run("bench_sync.py", f.n, &res)
	if f.trace {
		defer phaseTable(b.tracePath)
	}
	var batch mapResult
	if f.mapN > 0 {
		var extra []string
		if f.bareMap > 0 {
			extra = []string{fmt.Sprint(f.bareMap)}
		}
		os.Setenv("BENCH_MAP_ROUNDS", strconv.Itoa(max(1, f.mapRounds)))
		b.run("bench_batch.py", f.mapN, &batch, extra...)
		if f.trace {
			defer mapTable(b.tracePath)
		}
	}
	printSync(f, res)
	if f.mapN > 0 {
		printMap(f.mapN, batch)
	}
}

func printSync(f benchFlags, res syncResult) {
	sdk, bare, barecp := stats(res.SDK), stats(res.Bare), stats(res.BareCPickle)
	fmt.Printf("Machine: %s, %d cores, %s, %s; load average %s\n\n", cpuModel(), runtime.NumCPU(), runtime.Version(), pythonVersion(f.python), loadAvg())
	fmt.Printf("Command: `go run ./bench -bin %s -n %d -map %d -map-rounds %d -python %s`\n\n", f.bin, f.n, f.mapN, f.mapRounds, f.python)
	fmt.Println("| measurement | median | p10 | p90 |")
	fmt.Println("|---|---|---|---|")
	row := func(name string, s [3]float64) {
		fmt.Printf("| %s | %.1f ms | %.1f ms | %.1f ms |\n", name, s[0]*1e3, s[1]*1e3, s[2]*1e3)
	}
	row("sync call of a no-op, Python SDK, local backend", sdk)
	row("bare `python3 -c` running the same no-op", bare)
	row("bare `python3 -c` that imports cloudpickle, then runs the no-op", barecp)
	fmt.Printf("| **overhead (median − median of bare)** | **%.1f ms** | | |\n", (sdk[0]-bare[0])*1e3)
	fmt.Printf("| **call ÷ bare with cloudpickle (medians)** | **%.2f×** | | |\n", sdk[0]/barecp[0])
	fmt.Printf("\nTargets: at most 150 ms of overhead at the median; the call at most 0.2× the bare interpreter that imports cloudpickle (issue 29). Samples: %d each, interleaved.\n", f.n)
}

func printMap(mapN int, batch mapResult) {
	rate, rateBare, rateCP := float64(mapN)/batch.Batch, float64(mapN)/batch.Bare, float64(mapN)/batch.BareCPickle
	fmt.Println()
	fmt.Println("| batch of no-op inputs | inputs | wall time | inputs per second |")
	fmt.Println("|---|---|---|---|")
	lo, hi := slices.Max(batch.Batches), slices.Min(batch.Batches)
	fmt.Printf("| `run_async_map(...).results()`, local backend (median of %d maps; %.0f–%.0f/s) | %d | %.2f s | **%.0f/s** |\n", len(batch.Batches), float64(mapN)/lo, float64(mapN)/hi, mapN, batch.Batch, rate)
	fmt.Printf("| the same calls as bare `python3 -c`, one after another | %d | %.2f s | %.1f/s |\n", mapN, batch.Bare, rateBare)
	fmt.Printf("| the same as bare `python3 -c` importing cloudpickle (a tenth of them, scaled) | %d | %.2f s | %.1f/s |\n", mapN, batch.BareCPickle, rateCP)
	fmt.Printf("\nRatios: the map runs at **%.0f×** the bare interpreter's rate and **%.0f×** the rate of one that imports cloudpickle.\n", rate/rateBare, rate/rateCP)
	fmt.Printf("\nPeak RSS while it ran: the SDK's process %.0f MB, the engine's %.0f MB (%d results held by results()).\n", batch.SDKRSS, batch.EngineRSS, mapN)
	fmt.Println("\nTargets: at least 100 inputs per second; at least 200× the bare interpreter's rate (issue 29).")
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

func stats(xs []float64) [3]float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	q := func(p float64) float64 { return s[int(p*float64(len(s)-1)+0.5)] }
	return [3]float64{q(0.5), q(0.1), q(0.9)}
}

func defaultPython() string {
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		return "/usr/bin/python3"
	}
	return "python3"
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "model name") {
			if _, v, ok := strings.Cut(l, ":"); ok {
				return strings.TrimSpace(v)
			}
		}
	}
	return runtime.GOARCH
}

func pythonVersion(py string) string {
	out, err := exec.Command(py, "--version").CombinedOutput()
	if err != nil {
		return py
	}
	return strings.TrimSpace(string(out))
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// compareBench measures binary a ("before") and b ("after") in the same run: rounds of
// a then b (the sync calls with the bare interpreters interleaved, then the map), so
// both see the same machine; it prints the medians and the ratios of each.
func compareBench(runWith func(bin, data, script string, arg int, v any, extra ...string), a, b string, n, mapN, rounds, bareMap int, python string) {
	type syncRes struct {
		SDK, Bare   []float64
		BareCPickle []float64 `json:"bare_cloudpickle"`
	}
	type mapRes struct {
		Batch, Bare float64
		BareCPickle float64 `json:"bare_cloudpickle"`
	}
	per := max(1, n/rounds)
	var sync [2]syncRes
	var maps [2][]mapRes
	fmt.Fprintf(os.Stderr, "load average before: %s\n", loadAvg())
	for r := 0; r < rounds; r++ {
		for i, bin := range []string{a, b} {
			data := fmt.Sprintf("data%d", i)
			var s syncRes
			runWith(bin, data, "bench_sync.py", per, &s)
			sync[i].SDK = append(sync[i].SDK, s.SDK...)
			sync[i].Bare = append(sync[i].Bare, s.Bare...)
			sync[i].BareCPickle = append(sync[i].BareCPickle, s.BareCPickle...)
			if mapN > 0 {
				var m mapRes
				var extra []string
				if bareMap > 0 {
					extra = []string{fmt.Sprint(bareMap)}
				}
				runWith(bin, data, "bench_batch.py", mapN, &m, extra...)
				maps[i] = append(maps[i], m)
			}
		}
	}
	fmt.Printf("Machine: %s, %d cores, %s, %s; load average after: %s\n\n", cpuModel(), runtime.NumCPU(), runtime.Version(), pythonVersion(python), loadAvg())
	fmt.Printf("Command: `go run ./bench -compare %s -bin %s -n %d -map %d -rounds %d -bare-map %d` (%d rounds, each the first binary then the second)\n\n", a, b, n, mapN, rounds, bareMap, rounds)
	fmt.Println("| measurement (median) | before | after |")
	fmt.Println("|---|---|---|")
	var sdk, bare, barecp [2][3]float64
	for i := range 2 {
		sdk[i], bare[i], barecp[i] = stats(sync[i].SDK), stats(sync[i].Bare), stats(sync[i].BareCPickle)
	}
	fmt.Printf("| sync call of a no-op, Python SDK, local backend (p10–p90) | %.1f ms (%.1f–%.1f) | %.1f ms (%.1f–%.1f) |\n", sdk[0][0]*1e3, sdk[0][1]*1e3, sdk[0][2]*1e3, sdk[1][0]*1e3, sdk[1][1]*1e3, sdk[1][2]*1e3)
	fmt.Printf("| bare `python3 -c` running the no-op | %.1f ms | %.1f ms |\n", bare[0][0]*1e3, bare[1][0]*1e3)
	fmt.Printf("| bare `python3 -c` importing cloudpickle, then the no-op | %.1f ms | %.1f ms |\n", barecp[0][0]*1e3, barecp[1][0]*1e3)
	fmt.Printf("| **call ÷ bare with cloudpickle** (target ≤ 0.2×) | %.2f× | **%.2f×** |\n", sdk[0][0]/barecp[0][0], sdk[1][0]/barecp[1][0])
	if mapN > 0 {
		med := func(ms []mapRes, f func(mapRes) float64) float64 {
			xs := make([]float64, len(ms))
			for i, m := range ms {
				xs[i] = f(m)
			}
			return stats(xs)[0]
		}
		row := func(name, format string, f func(mapRes) float64) {
			fmt.Printf("| %s | "+format+" | "+format+" |\n", name, med(maps[0], f), med(maps[1], f))
		}
		row(fmt.Sprintf("%d-input `run_async_map(...).results()`, inputs/s", mapN), "%.0f/s", func(m mapRes) float64 { return float64(mapN) / m.Batch })
		row("the same as bare `python3 -c`, one after another", "%.1f/s", func(m mapRes) float64 { return float64(mapN) / m.Bare })
		row("**map ÷ bare rate** (target ≥ 200×)", "%.0f×", func(m mapRes) float64 { return m.Bare / m.Batch })
	}
	fmt.Printf("\nSamples: %d sync calls of each binary (%d per round), %d maps of each.\n", per*rounds, per, rounds)
}
