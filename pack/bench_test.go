package pack

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// benchTree writes a tree of about mib MiB in files files (sizes vary around the mean,
// a few files are large) and returns the paths of its files.
func benchTree(b *testing.B, root string, mib, files int) []string {
	b.Helper()
	r := rand.New(rand.NewPCG(7, 8))
	mean := (mib << 20) / files
	buf := make([]byte, 8*mean+(4<<20))
	for i := range buf {
		buf[i] = byte(r.Uint32())
	}
	var paths []string
	for i := range files {
		size := mean/2 + r.IntN(mean+1)
		if i%100 == 99 { // one file in 100 is big enough to be a blob of its own
			size = 4 * mean
		}
		p := filepath.Join(root, fmt.Sprintf("pkg%02d/sub%d/file%04d.py", i%37, i%5, i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		off := r.IntN(len(buf) - size)
		if err := os.WriteFile(p, buf[off:off+size], 0o644); err != nil {
			b.Fatal(err)
		}
		paths = append(paths, p)
	}
	return paths
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// BenchmarkResubmit measures what a resubmission costs after one file changed: Scan (with
// the hash cache) plus Upload (with the pack index) to a file:// store. The tree is 64 MiB
// in 1,000 files by default; KINETIC_PACK_BENCH_MB and KINETIC_PACK_BENCH_FILES change it
// (docs/packaging.md has the 1 GiB command).
func BenchmarkResubmit(b *testing.B) {
	mib, files := envInt("KINETIC_PACK_BENCH_MB", 64), envInt("KINETIC_PACK_BENCH_FILES", 1000)
	for _, change := range []string{"small", "large", "none"} {
		b.Run(change, func(b *testing.B) {
			ctx := context.Background()
			src, cache := b.TempDir(), b.TempDir()
			paths := benchTree(b, src, mib, files)
			st := openStore(b, "file://"+b.TempDir())
			m, err := Scan(ctx, src, Options{CacheDir: cache})
			if err != nil {
				b.Fatal(err)
			}
			if _, _, err := Upload(ctx, st, m, UploadOptions{CacheDir: cache}); err != nil {
				b.Fatal(err)
			}
			time.Sleep(150 * time.Millisecond) // let the files' mtimes age past the racy window
			if _, err := Scan(ctx, src, Options{CacheDir: cache}); err != nil {
				b.Fatal(err)
			}
			victim := paths[len(paths)/2] // a small file
			if change == "large" {
				victim = paths[99]
			}
			body, err := os.ReadFile(victim)
			if err != nil {
				b.Fatal(err)
			}
			var uploaded, objects, hashed int64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if change != "none" {
					b.StopTimer()
					body[i%len(body)]++
					if err := os.WriteFile(victim, body, 0o644); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				m, err := Scan(ctx, src, Options{CacheDir: cache})
				if err != nil {
					b.Fatal(err)
				}
				_, stats, err := Upload(ctx, st, m, UploadOptions{CacheDir: cache})
				if err != nil {
					b.Fatal(err)
				}
				uploaded += stats.UploadedBytes
				objects += int64(stats.UploadedObjects)
				hashed += int64(m.Scan.HashedFiles)
			}
			b.ReportMetric(float64(uploaded)/float64(b.N), "uploaded-B/op")
			b.ReportMetric(float64(objects)/float64(b.N), "objects/op")
			b.ReportMetric(float64(hashed)/float64(b.N), "hashed-files/op")
		})
	}
}

// BenchmarkFirstSubmit measures a cold Scan plus Upload of the same tree to an empty store
// (no hash cache, no pack index) and Materialize of it.
func BenchmarkFirstSubmit(b *testing.B) {
	mib, files := envInt("KINETIC_PACK_BENCH_MB", 64), envInt("KINETIC_PACK_BENCH_FILES", 1000)
	ctx := context.Background()
	src := b.TempDir()
	benchTree(b, src, mib, files)
	b.SetBytes(int64(mib) << 20)
	for i := 0; i < b.N; i++ {
		st := openStore(b, "file://"+b.TempDir())
		m, err := Scan(ctx, src, Options{})
		if err != nil {
			b.Fatal(err)
		}
		ref, _, err := Upload(ctx, st, m, UploadOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if err := Materialize(ctx, st, ref, b.TempDir()); err != nil {
			b.Fatal(err)
		}
	}
}
