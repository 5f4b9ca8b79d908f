package e2e

import (
	"crypto/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A damaged content blob (issue 45, item 8): submission trusted any blobs/sha256/X that
// existed, so a blob cut short or overwritten broke every later job that shipped the
// same file, each failing on a SHA-256 mismatch with no hint. Now a blob of the wrong
// size is uploaded again by the next submission, and one of the right size but the
// wrong content is removed by the runner that finds it, whose error says to submit
// again, after which the job runs.
func TestDamagedBlobRepaired(t *testing.T) {
	e := newEnv(t)
	big := make([]byte, 2<<20) // a file of its own blob (pack.DefaultLargeFileSize)
	rand.Read(big)
	os.WriteFile(filepath.Join(e.dir, "big.bin"), big, 0o644)
	os.WriteFile(filepath.Join(e.dir, "size.py"), []byte("import os\ndef main():\n    return os.path.getsize('big.bin')\n"), 0o644)
	// Each run in an environment of its own gets supervisors of its own (the queue is
	// chosen by the environment), which keep no tree of an earlier run to start from.
	n := 0
	run := func() result {
		n++
		return e.runTimed(t, 60*time.Second, []string{"BLOB_TEST_RUN=" + strconv.Itoa(n)}, "run", "size.py::main")
	}
	if r := run(); r.code != 0 || strings.TrimSpace(r.stdout) != "2097152" {
		t.Fatalf("first run: %d %q %q", r.code, r.stdout, r.stderr)
	}
	// The largest blob is big.bin's.
	blobs, _ := filepath.Glob(filepath.Join(e.store, "blobs", "sha256", "*"))
	var blob string
	var size int64
	for _, b := range blobs {
		if fi, err := os.Stat(b); err == nil && fi.Size() > size {
			blob, size = b, fi.Size()
		}
	}
	if size != int64(len(big)) {
		t.Fatalf("no blob of big.bin's size among %v", blobs)
	}
	key := "blobs/sha256/" + filepath.Base(blob)

	// Cut short: the next submission sees its size and uploads it again.
	os.WriteFile(blob, big[:1000], 0o600)
	if r := run(); r.code != 0 || strings.TrimSpace(r.stdout) != "2097152" {
		t.Errorf("run after the blob was cut short: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if fi, err := os.Stat(blob); err != nil || fi.Size() != int64(len(big)) {
		t.Errorf("the submission did not upload the blob cut short again: %v", err)
	}

	// Overwritten with as many other bytes: the runner finds it, names it, removes it.
	garbage := make([]byte, len(big))
	rand.Read(garbage)
	os.WriteFile(blob, garbage, 0o600)
	r := run()
	t.Logf("run on an overwritten blob: exit %d\n%s", r.code, r.stderr)
	if r.code == 0 {
		t.Fatalf("a job ran from an overwritten blob: %q", r.stdout)
	}
	for _, want := range []string{key, "big.bin", "damaged", "submit the job again"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("the error does not say %q", want)
		}
	}
	if r := run(); r.code != 0 || strings.TrimSpace(r.stdout) != "2097152" {
		t.Errorf("the run after it: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if b, err := os.ReadFile(blob); err != nil || string(b) != string(big) {
		t.Errorf("the blob is not whole again: %v, %d bytes", err, len(b))
	}
}
