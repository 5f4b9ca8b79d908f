package store

import (
	"context"
	"fmt"
	"sync"
	"testing"
)

// TestListWhileWriting: listing a file store's directory while others write into it
// (each write a temporary file renamed into place: a batch's children/ while its inputs
// are submitted) never fails and never shows a temporary file. fileblob's own listing
// failed here ("lstat …/.tmp-…: no such file or directory") when a 10,000-input batch
// was watched while submitted.
func TestListWhileWriting(t *testing.T) {
	ctx := context.Background()
	st, err := Open(ctx, "file://"+t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const writers, each = 4, 400
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if err := st.Put(ctx, fmt.Sprintf("groups/g/children/%02d-%05d.json", w, i), []byte(`{"index": 1}`)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	last := 0
	for lists := 0; ; lists++ {
		select {
		case <-done:
			objs, err := st.List(ctx, "groups/g/children/")
			if err != nil || len(objs) != writers*each {
				t.Fatalf("after the writes: %d objects, %v", len(objs), err)
			}
			if lists < 3 {
				t.Logf("only %d listings ran during the writes", lists)
			}
			return
		default:
		}
		objs, err := st.List(ctx, "groups/g/children/")
		fail := func(f string, a ...any) { <-done; t.Fatalf(f, a...) } // (writers first, then the temp dir goes)
		if err != nil {
			fail("listing %d during the writes: %v", lists, err)
		}
		if len(objs) < last {
			fail("listing %d: %d objects after %d", lists, len(objs), last)
		}
		last = len(objs)
		for _, o := range objs {
			if tempKey(o.Key) {
				fail("a temporary file listed: %s", o.Key)
			}
		}
	}
}
