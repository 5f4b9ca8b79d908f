package engine

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kinetic-run/kinetic/engine/listindex"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
	"github.com/kinetic-run/kinetic/testkit/storefill"
)

// The listing index caches final jobs and tombstones; the store stays the truth. Each
// step below fails if the index were trusted where it must not be, or never used.
func TestListingIndex(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	url := "file://" + filepath.Join(dir, "store")
	e := newTestEngine(t, map[string]string{"KINETIC_STORE": url, "KINETIC_BACKEND": "local", "KINETIC_HOME": filepath.Join(dir, "home")}, "")
	st, err := e.Store(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := storefill.Jobs(ctx, st, 20)
	if err != nil {
		t.Fatal(err)
	}
	list := func() map[string]Listed { t.Helper(); return listedByID(t, e) }
	index := func() *listindex.Index { t.Helper(); return readIndex(t, st) }

	// The first listing reads every job and indexes the final ones, with when they ended.
	rows := list()
	if len(rows) != 20 || rows[ids[0]].State != job.Failed || rows[ids[1]].State != job.Succeeded || rows[ids[1]].FinishedAt.IsZero() {
		t.Fatalf("first listing: %d rows, %v", len(rows), rows[ids[0]])
	}
	if n := len(index().Jobs); n != 20 {
		t.Fatalf("index holds %d jobs, want 20", n)
	}

	// A listing takes final rows from the index: a handle changed under it is not read.
	h := rows[ids[2]].Handle
	changed := *h
	changed.DisplayName = "changed-behind-the-index"
	if err := st.Put(ctx, store.HandleKey(ids[2]), changed.Encode()); err != nil {
		t.Fatal(err)
	}
	if got := list()[ids[2]].Handle.DisplayName; got != h.DisplayName {
		t.Errorf("a final job's row was read from the store (%q), not from the index", got)
	}

	// A job that is gone is gone from the listing and, after it, from the index.
	if err := st.DeletePrefix(ctx, store.JobPrefix(ids[3])); err != nil {
		t.Fatal(err)
	}
	if _, ok := list()[ids[3]]; ok {
		t.Error("a deleted job is still listed (from the index)")
	}
	if _, ok := index().Jobs[ids[3]]; ok {
		t.Error("the index still holds a deleted job")
	}

	// A final job whose status.json is damaged after it was indexed is listed as damaged,
	// naming the file, as `jobs status` names it (its old row was listed), and leaves the
	// index until it is whole again; one whose status.json is rewritten whole is read
	// again and indexed anew.
	whole, err := st.Get(ctx, store.StatusKey(ids[10]))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Put(ctx, store.StatusKey(ids[10]), []byte(`{"state": "SUCC`)); err != nil {
		t.Fatal(err)
	}
	if got := list()[ids[10]]; got.State != ListError || !strings.Contains(got.Reason, "status.json") {
		t.Errorf("a job with a damaged status.json listed as %s %q, want %s naming status.json", got.State, got.Reason, ListError)
	}
	if _, ok := index().Jobs[ids[10]]; ok {
		t.Error("the index still holds the job whose status.json is damaged")
	}
	if err := st.Put(ctx, store.StatusKey(ids[10]), whole); err != nil {
		t.Fatal(err)
	}
	if got := list()[ids[10]]; got.State != rows[ids[10]].State {
		t.Errorf("the job whose status.json is whole again listed as %s, want %s", got.State, rows[ids[10]].State)
	}
	rewritten, _ := json.Marshal(&job.Status{State: job.Failed, Reason: "rewritten", UpdatedAt: time.Now()})
	if err := st.Put(ctx, store.StatusKey(ids[11]), rewritten); err != nil {
		t.Fatal(err)
	}
	if got := list()[ids[11]]; got.State != job.Failed || got.Reason != "rewritten" {
		t.Errorf("a job whose status.json was rewritten listed as %s %q (its old row)", got.State, got.Reason)
	}
	if r, ok := index().Jobs[ids[11]]; !ok || r.Reason != "rewritten" {
		t.Errorf("the rewritten job's row in the index: %+v, %v", r, ok)
	}

	// A job that is not final is read every time and never indexed.
	run := job.NewID()
	rh := &job.Handle{JobID: run, Backend: "local", Accelerator: "cpu", FuncName: "f", CreatedAt: time.Now().UTC().Format(time.RFC3339Nano), Store: url}
	putStatus := func(s job.State) {
		b, _ := json.Marshal(&job.Status{State: s, UpdatedAt: time.Now()})
		if err := st.Put(ctx, store.StatusKey(run), b); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Put(ctx, store.HandleKey(run), rh.Encode()); err != nil {
		t.Fatal(err)
	}
	putStatus(job.Running)
	// (No supervisor records this job, so the local backend reports what status.json says.)
	if got := list()[run].State; got != job.Running {
		t.Fatalf("a running job listed as %s", got)
	}
	if _, ok := index().Jobs[run]; ok {
		t.Error("a running job was indexed")
	}
	putStatus(job.Succeeded)
	if got := list()[run]; got.State != job.Succeeded || got.FinishedAt.IsZero() {
		t.Errorf("the job, now final, listed as %s (finished %v): its RUNNING row was cached", got.State, got.FinishedAt)
	}
	if _, ok := index().Jobs[run]; !ok {
		t.Error("the job, now final, was not indexed")
	}
	if err := st.DeletePrefix(ctx, store.JobPrefix(run)); err != nil {
		t.Fatal(err)
	}

	// A damaged index is ignored and rewritten; the listing is whole.
	if err := st.Put(ctx, store.ListIndexKey, []byte("{not json")); err != nil {
		t.Fatal(err)
	}
	if got := list(); len(got) != 19 || got[ids[2]].Handle.DisplayName != "changed-behind-the-index" {
		t.Errorf("after a damaged index: %d rows, job 2 named %q (want the store's name)", len(got), got[ids[2]].Handle.DisplayName)
	}
	if n := len(index().Jobs); n < 19 {
		t.Errorf("the damaged index was not rewritten: %d jobs", n)
	}

	// Tombstones: indexed beside the jobs, dropped when removed.
	tomb := job.NewTombstone(rows[ids[5]].Handle, time.Now(), time.Now())
	if err := st.Put(ctx, store.TombstoneKey(ids[5]), tomb.Encode()); err != nil {
		t.Fatal(err)
	}
	_, ts, err := e.Listing(ctx, "")
	if err != nil || len(ts) != 1 || ts[0].JobID != ids[5] {
		t.Fatalf("Listing tombstones: %v, %v", ts, err)
	}
	if _, ok := index().Tombstones[ids[5]]; !ok {
		t.Error("the tombstone was not indexed")
	}
	if n := len(index().Jobs); n < 19 {
		t.Errorf("listing tombstones dropped the indexed jobs: %d left", n)
	}
	// Rows (a batch's children): final rows from the index, a job gone from the store
	// NOT_FOUND even while the index still has it, a collected one with its tombstone.
	if err := st.Put(ctx, store.HandleKey(ids[6]), changed.Encode()); err != nil {
		t.Fatal(err)
	}
	if err := st.DeletePrefix(ctx, store.JobPrefix(ids[5])); err != nil {
		t.Fatal(err)
	}
	if _, ok := index().Jobs[ids[5]]; !ok {
		t.Fatal("test setup: job 5 should still be indexed")
	}
	got, err := e.Rows(ctx, "", []string{ids[6], ids[5], ids[3], "job-doesnotexist00000000000"}, true)
	if err != nil {
		t.Fatal(err)
	}
	var gone *CleanedUpError
	if got[0].Handle == nil || got[0].Handle.DisplayName != rows[ids[6]].Handle.DisplayName || got[0].State != job.Succeeded {
		t.Errorf("Rows: job 6 = %+v, want its indexed row", got[0])
	}
	if got[1].Handle != nil || got[1].State != job.NotFound || !errors.As(got[1].Err, &gone) || gone.Tombstone.JobID != ids[5] {
		t.Errorf("Rows: a collected job = %+v, want NOT_FOUND with its tombstone", got[1])
	}
	if got[2].Handle != nil || got[2].State != job.NotFound || got[3].Handle != nil || got[3].State != job.NotFound {
		t.Errorf("Rows: jobs not in the store = %+v, %+v", got[2], got[3])
	}
	if _, ok := index().Jobs[ids[5]]; ok {
		t.Error("Rows left a job that is gone in the index")
	}
	if err := e.RemoveTombstone(ctx, ids[5], ""); err != nil {
		t.Fatal(err)
	}
	if ts, err := e.Tombstones(ctx, ""); err != nil || len(ts) != 0 {
		t.Errorf("a removed tombstone is still listed: %v, %v", ts, err)
	}

	// A store nobody can write to still lists (the index is only a cache).
	if err := st.Delete(ctx, store.ListIndexKey); err != nil {
		t.Fatal(err)
	}
	idxDir := filepath.Join(dir, "store", "index")
	if err := os.Chmod(idxDir, 0o500); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(idxDir, 0o700)
	if os.Geteuid() != 0 { // root writes anyway
		if got := list(); len(got) != 19 {
			t.Errorf("listing with an unwritable index: %d rows", len(got))
		}
	}
}

// listedByID is e's listing of its default store, by job ID.
func listedByID(t *testing.T, e *Engine) map[string]Listed {
	t.Helper()
	rows, err := e.List(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]Listed{}
	for _, r := range rows {
		m[r.Handle.JobID] = r
	}
	return m
}

// readIndex is the listing index as st holds it.
func readIndex(t *testing.T, st *store.Store) *listindex.Index {
	t.Helper()
	raw, err := st.Get(context.Background(), store.ListIndexKey)
	if err != nil {
		t.Fatalf("the listing index: %v", err)
	}
	var idx listindex.Index
	if err := json.Unmarshal(raw, &idx); err != nil {
		t.Fatal(err)
	}
	return &idx
}
