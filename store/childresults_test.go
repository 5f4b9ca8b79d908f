package store_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
)

// TestChildResultsInTheirBatch: a batch child's result.pkl and result.json are in its
// batch's results/ (no directory per input), a listing finds the children that have
// one, and DeleteJob removes them with the child's own prefix; a single job's stay
// under jobs/ID/.
func TestChildResultsInTheirBatch(t *testing.T) {
	ctx := context.Background()
	for _, url := range []string{"file://" + t.TempDir(), "mem://"} {
		st, err := store.Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		gid := "grp-01k8crrbjm218q70ugcuspt"
		child, single := job.ChildID(gid, 7), "job-01k8crrbjm218q70ugcuspt"
		if got := store.EnvelopeKey(child); got != "groups/"+gid+"/results/7.json" {
			t.Fatalf("EnvelopeKey(%s) = %s", child, got)
		}
		if got := store.ResultKey(child); got != "groups/"+gid+"/results/7.pkl" {
			t.Fatalf("ResultKey(%s) = %s", child, got)
		}
		if got := store.EnvelopeKey(single); got != "jobs/"+single+"/result.json" {
			t.Fatalf("EnvelopeKey(%s) = %s", single, got)
		}
		for _, k := range []string{store.ResultKey(child), store.EnvelopeKey(child), store.LogChunkKey(child, 0), store.EnvelopeKey(job.ChildID(gid, 8))} {
			if err := st.Put(ctx, k, []byte("x")); err != nil {
				t.Fatal(err)
			}
		}
		ids, err := st.ListResultChildren(ctx)
		slices.Sort(ids)
		if err != nil || !slices.Equal(ids, []string{job.ChildID(gid, 7), job.ChildID(gid, 8)}) {
			t.Fatalf("%s: ListResultChildren = %v, %v", url, ids, err)
		}
		if err := st.Put(ctx, store.HandleKey(single), []byte("{}")); err != nil {
			t.Fatal(err)
		}
		// Input 7 has a log under jobs/ and a result in results/: listed once.
		all, err := st.ListJobIDs(ctx)
		slices.Sort(all)
		if err != nil || !slices.Equal(all, []string{single, job.ChildID(gid, 7), job.ChildID(gid, 8)}) {
			t.Fatalf("%s: ListJobIDs = %v, %v", url, all, err)
		}
		if err := st.DeleteJob(ctx, child); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{store.ResultKey(child), store.EnvelopeKey(child), store.LogChunkKey(child, 0)} {
			if ok, err := st.Exists(ctx, k); ok || err != nil {
				t.Errorf("%s: %s after DeleteJob: exists %v, %v", url, k, ok, err)
			}
		}
		if ok, _ := st.Exists(ctx, store.EnvelopeKey(job.ChildID(gid, 8))); !ok {
			t.Errorf("%s: DeleteJob of input 7 removed input 8's result", url)
		}
	}
}

// TestBatchesSpreadOnExt4: a file store's groups/ carries FS_TOPDIR_FL where the file
// system takes it (ext4), so that each batch's results land in a block group of their
// own (spreadBatches).
func TestBatchesSpreadOnExt4(t *testing.T) {
	dir := t.TempDir()
	st, err := store.Open(context.Background(), "file://"+dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := os.Stat(filepath.Join(dir, "groups")); err != nil {
		t.Fatalf("groups/ not made by Open: %v", err)
	}
	flags, ok := dirFlags(filepath.Join(dir, "groups"))
	if !ok {
		t.Skip("the file system of", dir, "has no inode flags")
	}
	if flags&0x00020000 == 0 {
		t.Fatalf("groups/ flags %#x: no FS_TOPDIR_FL", flags)
	}
}
