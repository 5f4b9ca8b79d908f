package store_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/kinetic-run/kinetic/store"
)

// TestGetOnAFileStore: Get of a file store's plain key (raw system calls, getPlain)
// reads objects of every size whole, and a key that is missing or names a directory is
// not found, as the bucket says.
func TestGetOnAFileStore(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, "file://"+t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, n := range []int{0, 1, 4095, 4096, 70000, 1 << 20} {
		want := bytes.Repeat([]byte{byte(n)}, n)
		if err := st.Put(ctx, "jobs/a/obj", want); err != nil {
			t.Fatal(err)
		}
		got, err := st.Get(ctx, "jobs/a/obj")
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("Get of %d bytes: %d bytes, %v", n, len(got), err)
		}
	}
	for _, key := range []string{"jobs/a", "jobs/missing", "jobs/a/obj/under"} {
		if _, err := st.Get(ctx, key); !store.IsNotFound(err) {
			t.Errorf("Get(%s): %v, want not found", key, err)
		}
	}
	ctx2, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := st.Get(ctx2, "jobs/a/obj"); err == nil {
		t.Error("Get with an ended context read the object")
	}
}
