package batch

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kinetic-run/kinetic/batch/layout"
	"github.com/kinetic-run/kinetic/engine"
	"github.com/kinetic-run/kinetic/job"
)

// TestJobsAgreesWithAttach: Jobs, which reads a batch's derived children from its
// template, gone markers and collection records once, finds what Attach finds one by
// one: the same handle for a child, a CleanedUpError for a collected one, not found
// for a removed one and for an ID of no job, and a job written by its pod as written.
func TestJobsAgreesWithAttach(t *testing.T) {
	ctx := context.Background()
	fake := newFakeBackend(func(int, int) outcome { return outcome{reads: -1} })
	e := newTestEngine(t, fakeGrouper{fake})
	b, err := Map(ctx, e, mapRequest(6))
	if err != nil {
		t.Fatal(err)
	}
	<-b.Done()
	gid := b.GroupID()
	st, err := e.Store(ctx, "mem://")
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 26, 3, 0, 0, 0, time.UTC)
	if _, err := layout.RecordCollected(ctx, st, gid, []layout.Collected{{JobID: job.ChildID(gid, 1), Index: "1", CollectedAt: at, CollectedBy: "me"}}); err != nil {
		t.Fatal(err)
	}
	if err := layout.MarkGone(ctx, st, gid, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := layout.Materialize(ctx, st, gid, 3); err != nil { // its pod started
		t.Fatal(err)
	}
	ids := []string{job.ChildID(gid, 0), job.ChildID(gid, 1), job.ChildID(gid, 2), job.ChildID(gid, 3), job.ChildID(gid, 5), job.NewID()}
	found := Jobs(ctx, e, "mem://", ids)
	if len(found) != len(ids) {
		t.Fatalf("%d found for %d IDs", len(found), len(ids))
	}
	for k, id := range ids {
		j, err := e.Attach(ctx, id, "mem://")
		f := found[k]
		var want, got *engine.CleanedUpError
		switch {
		case err == nil:
			if f.Err != nil {
				t.Errorf("%s: Jobs says %v, Attach found it", id, f.Err)
				continue
			}
			if d := cmp.Diff(j.Handle, f.Job.Handle); d != "" {
				t.Errorf("%s: handle differs from Attach's (-attach +jobs):\n%s", id, d)
			}
			if f.Job.Backend != j.Backend {
				t.Errorf("%s: backend %v, Attach's %v", id, f.Job.Backend, j.Backend)
			}
		case errors.As(err, &want):
			if !errors.As(f.Err, &got) || got.Tombstone.JobID != id || !got.Tombstone.CleanedAt.Equal(want.Tombstone.CleanedAt) || got.Tombstone.CollectedBy != "me" {
				t.Errorf("%s: Jobs says %v, want the tombstone of %v", id, f.Err, err)
			}
		default:
			if !errors.Is(err, engine.ErrNotFound) || !errors.Is(f.Err, engine.ErrNotFound) {
				t.Errorf("%s: Jobs says %v, Attach %v: want both not found", id, f.Err, err)
			}
		}
	}
	if found[0].Err != nil || found[1].Err == nil || found[2].Err == nil || found[3].Err != nil || found[5].Err == nil {
		t.Errorf("found %+v: want children 0 and 3, not 1 (collected), 2 (removed) or a job of no batch", found)
	}
}
