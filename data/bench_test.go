package data

import (
	"bufio"
	"fmt"
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
	out, err := exec.Command("openssl", args...).CombinedOutput()
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
		}
	}
	return model + ", " + sha
}
