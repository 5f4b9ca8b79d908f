package data

import (
	"bufio"
	"crypto/sha256"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// genTree writes files files totalling total bytes (sizes vary ±50% around the mean)
// into 100 directories of a two-level tree under root, with pseudo-random contents.
func genTree(tb testing.TB, root string, files int, total int64) {
	tb.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	sizes := make([]int64, files)
	mean := total / int64(files)
	var sum int64
	for i := range sizes {
		sizes[i] = mean/2 + rng.Int64N(mean+1)
		sum += sizes[i]
	}
	sizes[files-1] += total - sum // exact total
	if sizes[files-1] < 0 {
		sizes[files-1] = 0
	}
	buf := make([]byte, 4<<20)
	for i := range buf {
		buf[i] = byte(rng.Uint32())
	}
	for i, n := range sizes {
		dir := filepath.Join(root, fmt.Sprintf("d%02d", i%10), fmt.Sprintf("s%02d", (i/10)%10))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			tb.Fatal(err)
		}
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("f%06d.bin", i)))
		if err != nil {
			tb.Fatal(err)
		}
		off := int(rng.Int64N(int64(len(buf) / 2)))
		for n > 0 {
			k := min(n, int64(len(buf)-off))
			f.Write(buf[off : off+int(k)])
			n -= k
			off = 0
		}
		f.Close()
	}
}

func BenchmarkContentHash(b *testing.B) {
	const files, total = 1000, 128 << 20
	root := b.TempDir()
	genTree(b, root, files, total)
	if _, err := ContentHash(root); err != nil { // warm the page cache
		b.Fatal(err)
	}
	b.SetBytes(total)
	b.ResetTimer()
	for b.Loop() {
		if _, err := ContentHash(root); err != nil {
			b.Fatal(err)
		}
	}
}

// TestContentHashThroughput is the benchmark of record: content_hash of a 1 GiB,
// 10,000-file tree with a warm page cache, against the machine's SHA-256 limit measured
// in the same run with `openssl speed -evp sha256 -multi N` (N = GOMAXPROCS), rounds
// interleaved so both see the same machine. Run it with
//
//	KINETIC_DATA_BENCH=1 go test -run TestContentHashThroughput -v -timeout 30m ./data/
//
// KINETIC_DATA_BENCH_DIR keeps the generated tree there between runs.
func TestContentHashThroughput(t *testing.T) {
	if os.Getenv("KINETIC_DATA_BENCH") == "" {
		t.Skip("set KINETIC_DATA_BENCH=1 to run the 1 GiB content-hash benchmark")
	}
	const files, total = 10000, 1 << 30
	root := os.Getenv("KINETIC_DATA_BENCH_DIR")
	if root == "" {
		root = t.TempDir()
	}
	if _, err := os.Stat(filepath.Join(root, "d09")); err != nil {
		start := time.Now()
		genTree(t, root, files, total)
		t.Logf("generated %d files, %d bytes in %v", files, total, time.Since(start))
	}
	if _, err := ContentHash(root); err != nil { // warm the page cache
		t.Fatal(err)
	}
	n := runtime.GOMAXPROCS(0)
	var wall, perCPU, sslCPU, sslWall []float64
	for round := 0; round < 5; round++ {
		cpuRate, err := opensslSpeed(n, false)
		if err != nil {
			t.Skipf("openssl: %v", err)
		}
		wallRate, err := opensslSpeed(n, true)
		if err != nil {
			t.Skipf("openssl: %v", err)
		}
		c0, start := cpuSeconds(), time.Now()
		if _, err := ContentHash(root); err != nil {
			t.Fatal(err)
		}
		secs, cpu := time.Since(start).Seconds(), cpuSeconds()-c0
		wall = append(wall, total/secs)
		perCPU = append(perCPU, total/cpu)
		sslCPU = append(sslCPU, cpuRate)
		sslWall = append(sslWall, wallRate)
		t.Logf("round %d: content_hash %.0f MB/s wall (%.2f CPU-s, %.0f MB per CPU-s); openssl -multi %d: %.0f MB/s (CPU-time divisor), %.0f MB/s (-elapsed)",
			round, total/secs/1e6, cpu, total/cpu/1e6, n, cpuRate/1e6, wallRate/1e6)
	}
	g, gc, s, se := median(wall), median(perCPU), median(sslCPU), median(sslWall)
	t.Logf("machine: %d cores, %s, load average %s", runtime.NumCPU(), cpuModel(), loadAvg())
	t.Logf("median wall-clock: content_hash %.0f MB/s vs openssl speed -elapsed -evp sha256 -multi %d %.0f MB/s: %.0f%%", g/1e6, n, se/1e6, 100*g/se)
	t.Logf("median per CPU-second: content_hash %.0f MB/s x %d cores = %.0f MB/s vs openssl speed -evp sha256 -multi %d %.0f MB/s: %.0f%%", gc/1e6, n, float64(n)*gc/1e6, n, s/1e6, 100*float64(n)*gc/s)
}

func cpuSeconds() float64 {
	var r syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &r)
	return float64(r.Utime.Nano()+r.Stime.Nano()) / 1e9
}

func loadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}

// opensslSpeed returns the aggregate SHA-256 rate in bytes/s of n processes on 16 KiB
// blocks, divided by CPU user time (openssl's default) or by wall-clock time (elapsed).
func opensslSpeed(n int, elapsed bool) (float64, error) {
	args := []string{"speed", "-evp", "sha256", "-multi", strconv.Itoa(n), "-bytes", "16384", "-seconds", "3"}
	if elapsed {
		args = append(args, "-elapsed")
	}
	cmd := exec.Command("openssl", args...)
	if godebugOff("sha") && os.Getenv("OPENSSL_ia32cap") == "" {
		// Go's SHA extensions are off (GODEBUG=cpu.sha=off, a CPU without them as far as
		// this process goes): turn off OpenSSL's too (CPUID leaf 7 EBX bit 29).
		cmd.Env = append(os.Environ(), "OPENSSL_ia32cap=:~0x20000000")
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("%v: %s", err, out)
	}
	// The -multi summary line: "sha256   12345.67k" (1000s of bytes per second).
	re := regexp.MustCompile(`(?m)^sha256\s+([0-9.]+)k\s*$`)
	m := re.FindAllStringSubmatch(string(out), -1)
	if m == nil {
		return 0, fmt.Errorf("no rate in output:\n%s", out)
	}
	v, err := strconv.ParseFloat(m[len(m)-1][1], 64)
	return v * 1000, err
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sha := "no sha_ni"
	model := ""
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "model name") && model == "" {
			_, model, _ = strings.Cut(line, ": ")
		}
		if strings.HasPrefix(line, "flags") && strings.Contains(line, " sha_ni") {
			sha = "sha_ni"
			if godebugOff("sha") {
				sha = "sha_ni turned off (GODEBUG=cpu.sha=off, OPENSSL_ia32cap)"
			}
		}
	}
	return model + ", " + sha
}

// genFixed writes files files of size bytes each (pseudo-random contents) under root, in
// directories of 100.
func genFixed(tb testing.TB, root string, files int, size int64) {
	tb.Helper()
	rng := rand.New(rand.NewPCG(3, 4))
	buf := make([]byte, size)
	for i := 0; i < files; i++ {
		for j := range buf {
			if j%8 == 0 {
				v := rng.Uint64()
				for k := 0; k < 8 && j+k < len(buf); k++ {
					buf[j+k] = byte(v >> (8 * k))
				}
			}
		}
		dir := filepath.Join(root, fmt.Sprintf("d%03d", i/100))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%05d.bin", i)), buf, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}

// TestContentHashShapes measures content_hash against the 2-core SHA-256 limit of the
// same run (openssl speed -evp sha256 -multi N, wall clock) for the two shapes of issue
// 16: 4,000 files of 128 KiB and 10 files of 50 MiB, page cache warm.
//
//	KINETIC_DATA_BENCH=1 go test -run TestContentHashShapes -v ./data/
func TestContentHashShapes(t *testing.T) {
	if os.Getenv("KINETIC_DATA_BENCH") == "" {
		t.Skip("set KINETIC_DATA_BENCH=1 to run the content-hash shapes benchmark")
	}
	n := runtime.GOMAXPROCS(0)
	for _, shape := range []struct {
		name  string
		files int
		size  int64
	}{{"4000 x 128 KiB", 4000, 128 << 10}, {"10 x 50 MiB", 10, 50 << 20}} {
		root := t.TempDir()
		genFixed(t, root, shape.files, shape.size)
		total := float64(int64(shape.files) * shape.size)
		if _, err := ContentHash(root); err != nil { // warm the page cache
			t.Fatal(err)
		}
		var rates, limits []float64
		for round := 0; round < 5; round++ {
			limit, err := opensslSpeed(n, true)
			if err != nil {
				t.Skipf("openssl: %v", err)
			}
			start := time.Now()
			if _, err := ContentHash(root); err != nil {
				t.Fatal(err)
			}
			rates = append(rates, total/time.Since(start).Seconds())
			limits = append(limits, limit)
		}
		r, l := median(rates), median(limits)
		t.Logf("%s: content_hash %.0f MB/s, openssl speed -elapsed -evp sha256 -multi %d %.0f MB/s: %.0f%% (machine: %s, load %s)",
			shape.name, r/1e6, n, l/1e6, 100*r/l, cpuModel(), loadAvg())
		// The ceiling of any hash that reads the files: the kernel's copy of each from the
		// page cache (open, read, close; measured alone on one core) added to the SHA-256
		// of the same bytes from memory.
		copyNs, shaNs, lanesNs := copyAndSHACost(t, root, shape.size)
		t.Logf("%s: per file on one core: open+read+close %.1f µs, SHA-256 from memory %.1f µs: a hash that reads the files one at a time can reach at most %.0f%% of the SHA-256 limit",
			shape.name, copyNs/1e3, shaNs/1e3, 100*shaNs/(shaNs+copyNs))
		if lanesNs > 0 {
			t.Logf("%s: %s, from memory: %.1f µs a file, %.2f× one at a time: reading them can reach %.0f%% of the limit",
				shape.name, laneKernelInUse.name, lanesNs/1e3, shaNs/lanesNs, 100*shaNs/(lanesNs+copyNs))
		}
	}
}

// copyAndSHACost returns, per file of root (each of size bytes), the CPU time on one
// core of reading it (open, read into a buffer, close) and of hashing as many bytes from
// memory, one file at a time and (where the CPU has the SHA extensions, else 0) two at a
// time, each the best of three passes.
func copyAndSHACost(t *testing.T, root string, size int64) (copyNs, shaNs, lanesNs float64) {
	var files []string
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			files = append(files, p)
		}
		return nil
	})
	if len(files) == 0 {
		t.Fatalf("no files under %s", root)
	}
	buf := make([]byte, readBuf)
	best := func(f func()) float64 {
		b := math.Inf(1)
		for i := 0; i < 3; i++ {
			start := time.Now()
			f()
			b = math.Min(b, float64(time.Since(start).Nanoseconds()))
		}
		return b / float64(len(files))
	}
	copyNs = best(func() {
		for _, p := range files {
			fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				t.Fatal(err)
			}
			var n int64
			for {
				k, err := unix.Read(fd, buf)
				if err != nil {
					t.Fatal(err)
				}
				n += int64(k)
				if k < len(buf) {
					break
				}
			}
			unix.Close(fd)
			if n != size {
				t.Fatalf("%s: read %d bytes, want %d", p, n, size)
			}
		}
	})
	mem := make([]byte, size)
	h := sha256.New()
	shaNs = best(func() {
		for range files {
			h.Reset()
			h.Write(mem)
		}
	})
	if k := laneKernelInUse; k != nil {
		ss := make([]laneStream, k.lanes)
		open := make([]*laneStream, k.lanes)
		lanesNs = best(func() {
			for range len(files) / k.lanes {
				for i := range ss {
					ss[i].d.reset()
					ss[i].data = mem
					open[i] = &ss[i]
				}
				k.step(open, nil)
			}
		}) * float64(len(files)) / float64(len(files)/k.lanes*k.lanes)
	}
	return copyNs, shaNs, lanesNs
}
