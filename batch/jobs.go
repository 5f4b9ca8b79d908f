package batch

import (
	"context"
	"fmt"

	"github.com/kinetic-run/kinetic/batch/layout"
	"github.com/kinetic-run/kinetic/engine"
	"github.com/kinetic-run/kinetic/internal/parallel"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
)

// Found is one job as Jobs finds it: the job, or why there is none (an error that
// wraps engine.ErrNotFound; a *engine.CleanedUpError when its result was collected).
type Found struct {
	Job *engine.Job
	Err error
}

// Jobs finds the jobs ids the way a batch reads its results (results(), and the
// collection that follows): the derived children of a batch are made from its
// template, its gone markers and its collection records, each read once per batch, with
// no read per child; any other job (a retry, a child written one by one, a job of no
// batch) is attached (engine.Attach), 8 at a time. The answer is in the order of ids.
func Jobs(ctx context.Context, e Engine, storeURL string, ids []string) []Found {
	out := make([]Found, len(ids))
	var rest []int
	st, storeURL, err := openStore(ctx, e, storeURL)
	if err != nil {
		st = nil // every job is attached, and says what is wrong with the store
	}
	groups := map[string]*derivedGroup{}
	for k, id := range ids {
		gid, i, ok := job.ParseChildID(id)
		if !ok || st == nil {
			rest = append(rest, k)
			continue
		}
		g, seen := groups[gid]
		if !seen {
			g = readDerivedGroup(ctx, e, st, gid)
			groups[gid] = g
		}
		if g == nil {
			rest = append(rest, k)
			continue
		}
		out[k] = g.find(id, i, storeURL)
	}
	parallel.ForEach(ctx, len(rest), 8, func(ctx context.Context, r int) error {
		k := rest[r]
		out[k].Job, out[k].Err = e.Attach(ctx, ids[k], storeURL)
		return nil
	})
	return out
}

// derivedGroup is what Jobs reads once of a batch whose children are derived.
type derivedGroup struct {
	gid       string
	st        *store.Store
	t         *layout.Template
	gone      map[int]bool
	collected map[string]layout.Collected
	be        engineBackend
}

// readDerivedGroup reads batch gid's template, gone markers and collection records (nil
// when its children are not derived, or any of it cannot be read: its children are
// then attached one by one, which says what is wrong).
func readDerivedGroup(ctx context.Context, e Engine, st *store.Store, gid string) *derivedGroup {
	t, err := template(ctx, st, gid)
	if t == nil || err != nil {
		return nil
	}
	gone, err := layout.GoneSet(ctx, st, gid)
	if err != nil {
		return nil
	}
	collected, err := layout.ReadCollected(ctx, st, gid)
	if err != nil {
		return nil
	}
	be, err := e.BackendFor(t.ChildHandle(gid, 0), st)
	if err != nil {
		return nil
	}
	return &derivedGroup{gid: gid, st: st, t: t, gone: gone, collected: collected, be: be}
}

// find is derived child id (input i) as Attach finds it: removed, collected (its
// batch's record is its tombstone), or its handle made from the template, which is
// the handle its pod writes (layout.Materialize).
func (g *derivedGroup) find(id string, i int, storeURL string) Found {
	if c, ok := g.collected[id]; ok {
		ts := job.NewTombstone(g.t.ChildHandle(g.gid, i), c.CollectedAt, c.CollectedAt)
		ts.CollectedBy = c.CollectedBy
		return Found{Err: &engine.CleanedUpError{Tombstone: ts}}
	}
	if g.gone[i] {
		return Found{Err: fmt.Errorf("no job %s in the store %s (check the ID, or use --store / the profile the job was submitted with; `kinetic jobs list` shows the jobs there): %w", id, storeURL, engine.ErrNotFound)}
	}
	return Found{Job: &engine.Job{Handle: g.t.ChildHandle(g.gid, i), Store: g.st, Backend: g.be, Unwritten: Unwritten{}}}
}
