package batch

import (
	"context"
	"testing"
	"time"

	"github.com/kinetic-run/kinetic/batch/layout"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
)

// TestDerivedTombstone: a derived child collected with its batch has a tombstone made
// from the batch's record and template, whichever child was looked up first; a child
// not collected has none, and a record written later is found.
func TestDerivedTombstone(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, "mem://")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	gid := job.NewGroupID()
	tmpl := &layout.Template{Handle: &job.Handle{JobID: job.ChildID(gid, 0), Backend: "local", FuncName: "f"},
		Spec: &job.Spec{Version: job.SpecVersion, Kind: job.KindPickle}}
	if err := layout.WriteDerived(ctx, st, gid, tmpl, nil, [][]byte{{1}, {2}, {3}}); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	c0, c1, c2 := job.ChildID(gid, 0), job.ChildID(gid, 1), job.ChildID(gid, 2)
	if _, err := layout.RecordCollected(ctx, st, gid, []layout.Collected{{JobID: c0, Index: "0", CollectedAt: at}}); err != nil {
		t.Fatal(err)
	}
	// A child not collected first: the records are read, the template is not needed.
	if ts, err := derivedTombstone(ctx, st, c1); ts != nil || err != nil {
		t.Fatalf("child 1, not collected: %+v, %v", ts, err)
	}
	ts, err := derivedTombstone(ctx, st, c0)
	if err != nil || ts == nil || ts.JobID != c0 || ts.State != job.Succeeded || !ts.CleanedAt.Equal(at) || ts.GroupIndex != "0" {
		t.Fatalf("child 0, collected: %+v, %v", ts, err)
	}
	if _, err := layout.RecordCollected(ctx, st, gid, []layout.Collected{{JobID: c2, Index: "2", CollectedAt: at}}); err != nil {
		t.Fatal(err)
	}
	if ts, err := derivedTombstone(ctx, st, c2); err != nil || ts == nil || ts.GroupIndex != "2" {
		t.Fatalf("child 2, collected later: %+v, %v", ts, err)
	}
	if ts, err := derivedTombstone(ctx, st, job.NewID()); ts != nil || err != nil {
		t.Fatalf("not a derived child: %+v, %v", ts, err)
	}
}
