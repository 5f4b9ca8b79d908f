package batch

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/kinetic-run/kinetic/engine"
	"github.com/kinetic-run/kinetic/job"
)

// TestConcurrentCollectorsClaimOnce: four collectors acknowledge the same children of a
// derived batch at once; each child is claimed by exactly one of them, and the others
// are told who took it (issue 25: "exactly one cleans up").
func TestConcurrentCollectorsClaimOnce(t *testing.T) {
	ctx := context.Background()
	fake := newFakeBackend(func(int, int) outcome { return outcome{reads: -1} })
	e := newTestEngine(t, fakeGrouper{fake})
	const n, collectors = 40, 4
	b, err := Map(ctx, e, mapRequest(n))
	if err != nil {
		t.Fatal(err)
	}
	<-b.Done()
	gid := b.GroupID()
	var wg sync.WaitGroup
	mine := make([][]*engine.Job, collectors)
	taken := make([][]*job.Tombstone, collectors)
	all := make([][]*engine.Job, collectors) // each attached before anyone collects
	for c := range collectors {
		all[c] = make([]*engine.Job, n)
		for i := range n {
			if all[c][i], err = e.Attach(ctx, job.ChildID(gid, i), "mem://"); err != nil {
				t.Fatal(err)
			}
		}
	}
	for c, jobs := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mine[c], taken[c] = Collect(ctx, jobs, fmt.Sprintf("collector %d", c))
		}()
	}
	wg.Wait()
	claims := map[string]string{}
	for c := range collectors {
		if len(mine[c])+len(taken[c]) != n {
			t.Errorf("collector %d: %d claimed + %d taken, want %d in all", c, len(mine[c]), len(taken[c]), n)
		}
		for _, j := range mine[c] {
			if other, dup := claims[j.Handle.JobID]; dup {
				t.Fatalf("%s claimed by %s and collector %d", j.Handle.JobID, other, c)
			}
			claims[j.Handle.JobID] = fmt.Sprintf("collector %d", c)
		}
	}
	if len(claims) != n {
		t.Fatalf("%d children claimed, want %d", len(claims), n)
	}
	for c := range collectors {
		for _, tb := range taken[c] {
			if tb.CollectedBy != claims[tb.JobID] {
				t.Errorf("collector %d told %s was taken by %q, but %q claimed it", c, tb.JobID, tb.CollectedBy, claims[tb.JobID])
			}
		}
	}
	// A later collection (of children attached before, as a collector that read them
	// earlier acknowledges late) claims nothing and is told of each.
	m, tk := Collect(ctx, all[0], "late")
	if len(m) != 0 || len(tk) != n {
		t.Fatalf("a late collector claimed %d and was told of %d, want 0 and %d", len(m), len(tk), n)
	}
}
