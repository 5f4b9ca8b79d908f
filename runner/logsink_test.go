package runner

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kinetic-run/kinetic/pack"
	"github.com/kinetic-run/kinetic/store"
	"github.com/kinetic-run/kinetic/testkit/faultfs"
)

// TestLogSinkKeepsTheHeadOnAFullDisk: output whose first chunk a full disk refuses is
// not lost whole (e2e's output-fills-disk once printed no log at all when the disk
// filled before the sink's first flush): the chunk's head is written once the job has
// stopped and space is back (the disk guard's reserve, here the filler removed), with a
// line that says how much was lost after it.
func TestLogSinkKeepsTheHeadOnAFullDisk(t *testing.T) {
	ctx := context.Background()
	mnt := faultfs.Tmpfs(t, 1024)
	st, err := store.Open(ctx, "file://"+mnt+"/store")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	filler := faultfs.Fill(t, mnt)
	sink := NewLogSink(ctx, st, "job-0000000000logsinkfull1", 0)
	var reported int
	sink.onError = func(err error, lost int) { reported += lost }
	var finals int
	sink.writeFinal = func(write func() error) error {
		finals++
		if err := write(); err == nil {
			return nil
		}
		os.Remove(filler) // the reserve given back
		return write()
	}
	sink.Write([]byte("first-line\n"))
	// Past the first chunk: what follows is dropped, and counted.
	sink.Write([]byte(strings.Repeat("a", maxChunk)))
	deadline := time.Now().Add(10 * time.Second)
	for {
		sink.mu.Lock()
		dropping := sink.dropping
		sink.mu.Unlock()
		if dropping {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the sink never found the disk full")
		}
		time.Sleep(10 * time.Millisecond)
	}
	sink.Write([]byte("after the disk filled\n"))
	if err := sink.Close(); err == nil {
		t.Error("Close: no error, want the full disk's")
	}
	if finals != 1 {
		t.Errorf("the kept head was written through writeFinal %d times, want 1", finals)
	}
	got, err := st.Get(ctx, store.LogChunkKey("job-0000000000logsinkfull1", 0))
	if err != nil {
		t.Fatalf("chunk 0: %v", err)
	}
	lines := strings.SplitN(string(got), "\n", 2)
	if lines[0] != "first-line" {
		t.Errorf("the log starts %q, want first-line", lines[0])
	}
	head, _, _ := strings.Cut(string(got), "\n[kinetic: ")
	total := len("first-line\n") + maxChunk + len("after the disk filled\n")
	if lost := pack.HumanBytes(int64(total - len(head))); !strings.HasSuffix(string(got), "\n[kinetic: the job's output after this point ("+lost+") was lost: no space left on device in the store]\n") {
		t.Errorf("the log ends %q: want the loss said, with its size", string(got)[max(0, len(got)-120):])
	}
	if len(got) > keepOnFull+200 {
		t.Errorf("the kept head is %d bytes, want at most %d and the notice", len(got), keepOnFull)
	}
	if reported == 0 {
		t.Error("the lost output was never reported to the disk guard")
	}
}
