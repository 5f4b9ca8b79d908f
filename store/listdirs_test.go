package store_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kinetic-run/kinetic/store"
)

// A file store lists directories from the directory itself; what it lists must be what
// a bucket would: prefixes that hold an object, not empty directories, nor ones that
// hold only a temporary file left by a killed writer or an attributes sidecar.
func TestFileListDirsSkipsDirsWithoutObjects(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := store.Open(ctx, "file://"+dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, k := range []string{"jobs/a/handle.json", "jobs/nested/logs/00000001.log"} {
		if err := st.Put(ctx, k, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{"jobs/empty", "jobs/emptier/logs", "jobs/tmp", "jobs/attrs", "jobs/.hidden"} {
		if err := os.MkdirAll(filepath.Join(dir, p), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"jobs/tmp/.tmp-123", "jobs/tmp/status.json.0123abcd.tmp", "jobs/attrs/x.attrs", "jobs/.hidden/handle.json", "jobs/file.json"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	got, err := st.ListDirs(ctx, "jobs/")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"a", "nested"}, got); d != "" {
		t.Errorf("ListDirs (-want +got):\n%s", d)
	}
}
