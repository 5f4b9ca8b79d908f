package store_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/kinetic-run/kinetic/store"
	"github.com/kinetic-run/kinetic/testkit/faultfs"
)

// TestPutOnFullDiskKeepsOldObject: a write that fails for lack of space leaves the old
// object whole (it used to replace status.json with a 0-byte file), leaves no temporary
// file in listings, and works again once space is freed.
func TestPutOnFullDiskKeepsOldObject(t *testing.T) {
	dir := faultfs.Tmpfs(t, 1024)
	ctx := context.Background()
	st, err := store.Open(ctx, "file://"+filepath.Join(dir, "store"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	old := []byte(`{"state":"RUNNING"}`)
	key := store.StatusKey("job-0123456789abcdefghijklm")
	if err := st.Put(ctx, key, old); err != nil {
		t.Fatal(err)
	}
	filler := faultfs.Fill(t, dir)
	big := bytes.Repeat([]byte("x"), 256<<10) // more than any last free page
	for _, k := range []string{key, store.EnvelopeKey("job-0123456789abcdefghijklm")} {
		if err := st.Put(ctx, k, big); err == nil {
			t.Fatalf("Put %s on a full disk succeeded", k)
		}
		if _, err := st.PutFrom(ctx, k+".stream", bytes.NewReader(big)); err == nil {
			t.Fatalf("PutFrom %s on a full disk succeeded", k)
		}
	}
	got, err := st.Get(ctx, key)
	if err != nil || !bytes.Equal(got, old) {
		t.Fatalf("after a failed write: %q, %v; want the old object %q", got, err, old)
	}
	if ok, _ := st.Exists(ctx, store.EnvelopeKey("job-0123456789abcdefghijklm")); ok {
		t.Fatal("a failed first write left an object")
	}
	objs, err := st.List(ctx, "jobs/")
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 1 {
		t.Fatalf("listing after failed writes: %v, want only %s", objs, key)
	}
	os.Remove(filler)
	if err := st.Put(ctx, key, []byte(`{"state":"SUCCEEDED"}`)); err != nil {
		t.Fatalf("Put after freeing space: %v", err)
	}
}

// TestFileStorePermissions: a file store's objects and directories are the owner's
// alone (captured secrets live in env.json).
func TestFileStorePermissions(t *testing.T) {
	root := filepath.Join(t.TempDir(), "store")
	ctx := context.Background()
	st, err := store.Open(ctx, "file://"+root)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	id := "job-0123456789abcdefghijklm"
	if err := st.Put(ctx, store.EnvKey(id), []byte(`{"AWS_SECRET_ACCESS_KEY":"x"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := st.PutFrom(ctx, store.PayloadKey(id), bytes.NewReader([]byte("p"))); err != nil {
		t.Fatal(err)
	}
	if _, err := st.PutFrom(ctx, "odd key/with space", bytes.NewReader([]byte("p"))); err != nil {
		t.Fatal(err)
	}
	err = filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if fi.IsDir() && fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("directory %s is %v, want no group/other access", p, fi.Mode().Perm())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(root, "jobs", id, "env.json"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("env.json is %v, want 0600", fi.Mode().Perm())
	}
}
