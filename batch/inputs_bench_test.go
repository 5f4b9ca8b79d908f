package batch

import (
	"context"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/kinetic-run/kinetic/batch/layout"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
)

// BenchmarkMapInputs: the engine's memory for a map's inputs, from the SDK's file to the
// store's inputs.bin (file:// store), for 10, 1 000 and 100 000 inputs of 200 bytes: the
// file as the SDK writes it now (sdk), and as SDKs before issue 48 wrote it (legacy, read
// whole as every file was before). docs/benchmarks.md has the numbers.
func BenchmarkMapInputs(b *testing.B) {
	for _, legacy := range []bool{false, true} {
		for _, n := range []int{10, 1000, 100000} {
			name := "sdk/" + strconv.Itoa(n)
			if legacy {
				name = "legacy/" + strconv.Itoa(n)
			}
			b.Run(name, func(b *testing.B) { benchMapInputs(b, n, legacy) })
		}
	}
}

func benchMapInputs(b *testing.B, n int, legacy bool) {
	dir := b.TempDir()
	path := filepath.Join(dir, "inputs.bin")
	if legacy {
		writeLegacyInputs(b, path, n, 200)
	} else {
		writeSDKInputs(b, path, n, 200)
	}
	st, err := store.Open(context.Background(), "file://"+filepath.Join(dir, "store"))
	if err != nil {
		b.Fatal(err)
	}
	tmpl := &layout.Template{Handle: &job.Handle{JobID: "x"}, Spec: &job.Spec{}}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		in, err := openInputs(&MapRequest{InputsPath: path})
		if err != nil {
			b.Fatal(err)
		}
		if err := layout.WriteDerivedFrom(context.Background(), st, job.NewGroupID(), tmpl, nil, in.Encoded()); err != nil {
			b.Fatal(err)
		}
		in.close()
	}
}

// writeSDKInputs writes n inputs of size bytes as the SDK writes them (the store's
// encoding).
func writeSDKInputs(tb testing.TB, path string, n, size int) {
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	in := make([]byte, size)
	ins := make([][]byte, n)
	for i := range ins {
		ins[i] = in
	}
	if _, err := io.Copy(f, layout.EncodeInputs(ins)); err != nil {
		tb.Fatal(err)
	}
}

// writeLegacyInputs writes n inputs of size bytes as the SDK wrote them before issue 48.
func writeLegacyInputs(tb testing.TB, path string, n, size int) {
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	in := make([]byte, 8+size)
	binary.BigEndian.PutUint64(in, uint64(size))
	for i := 0; i < n; i++ {
		if _, err := f.Write(in); err != nil {
			tb.Fatal(err)
		}
	}
}
