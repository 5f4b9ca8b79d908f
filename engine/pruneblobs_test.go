package engine

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/data"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
)

// TestPruneContentData: uploaded Data no job references goes (marker and files), Data a
// job's spec names stays, and a spec that cannot be read stops the prune of content
// with nothing removed.
func TestPruneContentData(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := store.Open(ctx, "file://"+dir)
	if err != nil {
		t.Fatal(err)
	}
	used, unused := strings.Repeat("1", 64), strings.Repeat("2", 64)
	for _, h := range []string{used, unused} {
		st.Put(ctx, data.FilesPrefix(h)+"x.csv", []byte("a,b\n"))
		st.Put(ctx, data.MarkerKey(h), []byte("{}"))
	}
	id := "job-01k8j9aaaaaaaaaaaaaaaaa"
	spec := &job.Spec{Version: 1, JobID: id, Kind: job.KindCommand, Command: []string{"true"},
		Data: []job.DataRef{{Kind: job.DataLocalDir, Source: "d", Path: "/d", Hash: used, Prefix: data.Prefix(used)}}}
	st.Put(ctx, store.SpecKey(id), spec.Encode())
	old := time.Now().Add(-2 * BlobGrace)
	filepath.WalkDir(filepath.Join(dir, "data"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			os.Chtimes(p, old, old)
		}
		return nil
	})

	bad := "job-01k8j9bbbbbbbbbbbbbbbbb"
	st.Put(ctx, store.SpecKey(bad), []byte("{not json"))
	noTemplates := func(context.Context, *store.Store) ([]*job.Spec, error) { return nil, nil }
	if f, err := pruneContent(ctx, st, backend.PruneOptions{}, noTemplates); err == nil || len(f) > 0 || !strings.Contains(err.Error(), "no content blob was removed") {
		t.Fatalf("a damaged spec: freed %v, err %v", f, err)
	}
	st.Remove(ctx, store.SpecKey(bad))

	// Without a reader of batch templates, what batches use is unknown: nothing goes.
	if f, err := pruneContent(ctx, st, backend.PruneOptions{}, nil); err == nil || len(f) > 0 || !strings.Contains(err.Error(), "no content blob was removed") {
		t.Fatalf("no template reader: freed %v, err %v", f, err)
	}
	f, err := pruneContent(ctx, st, backend.PruneOptions{}, noTemplates)
	if err != nil || len(f) != 1 || f[0].Kind != "data" || !strings.Contains(f[0].Path, unused) || f[0].Bytes == 0 {
		t.Fatalf("prune: freed %+v, err %v", f, err)
	}
	if ok, _ := st.Exists(ctx, data.MarkerKey(unused)); ok {
		t.Error("the unused Data's marker is still there")
	}
	if ok, _ := st.Exists(ctx, data.FilesPrefix(unused)+"x.csv"); ok {
		t.Error("the unused Data's file is still there")
	}
	if ok, _ := st.Exists(ctx, data.MarkerKey(used)); !ok {
		t.Error("the Data a job uses was removed")
	}
}
