package batch

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/kinetic-run/kinetic/batch/layout"
	"github.com/kinetic-run/kinetic/engine"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/jobview"
	"github.com/kinetic-run/kinetic/store"
)

// TestDerivedBatch: a batch its backend runs as one unit writes O(1) objects, whatever
// its size (issue: "O(1) store writes at submission"), and every reader still sees
// every child: its handle made from the template until its pod writes it, the job a pod
// writes carrying its own input, and a removed child staying removed.
func TestDerivedBatch(t *testing.T) {
	ctx := context.Background()
	fake := newFakeBackend(func(int, int) outcome { return outcome{reads: -1} }) // running until cancelled
	e := newTestEngine(t, fakeGrouper{fake})
	const n = 1000
	req := mapRequest(n)
	big := bytes.Repeat([]byte("x"), job.InlineArgs+1)
	req.Inputs[n-1] = big
	b, err := Map(ctx, e, req)
	if err != nil {
		t.Fatal(err)
	}
	<-b.Done()
	gid := b.GroupID()
	st, err := e.Store(ctx, "mem://")
	if err != nil {
		t.Fatal(err)
	}
	all, err := st.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range all {
		keys = append(keys, o.Key)
	}
	// The manifest, the template, the inputs and the function's blob: nothing per input.
	if len(keys) != 4 {
		t.Fatalf("a %d-input batch wrote %d objects, want 4: %v", n, len(keys), keys)
	}

	v, err := Read(ctx, e, gid, "mem://", true)
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Children) != n || !v.SubmissionComplete {
		t.Fatalf("read %d children (complete %v), want %d", len(v.Children), v.SubmissionComplete, n)
	}
	for i, c := range v.Statuses {
		if c.Handle == nil || c.Handle.JobID != job.ChildID(gid, i) || c.Handle.GroupIndex != strconv.Itoa(i) || c.Status != job.Running {
			t.Fatalf("child %d: %+v, want its derived job, RUNNING", i, c)
		}
	}
	// Nothing of them is in the store: their statuses came from the unit alone.
	if fake.unwrittenReads != n {
		t.Errorf("%d statuses read from the unit alone, want %d", fake.unwrittenReads, n)
	}
	j, err := e.Attach(ctx, job.ChildID(gid, 5), "mem://")
	if err != nil || j.Handle.K8sName != gid || j.Handle.FuncName != "f" {
		t.Fatalf("attach a derived child: %+v, %v", j, err)
	}

	// Its pod writes its job: its own input, inline or as its own object.
	for _, i := range []int{7, n - 1} {
		id, err := layout.ResolveMember(ctx, st, gid, i, time.Second)
		if err != nil || id != job.ChildID(gid, i) {
			t.Fatalf("member %d resolves to %q, %v", i, id, err)
		}
		raw, err := st.Get(ctx, store.SpecKey(id))
		if err != nil {
			t.Fatal(err)
		}
		spec, err := job.DecodeSpec(raw)
		if err != nil {
			t.Fatal(err)
		}
		args := spec.ArgsInline
		if spec.Args != nil {
			if args, err = st.GetVerified(ctx, spec.Args.Key, spec.Args.SHA256); err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(args, req.Inputs[i]) || spec.Payload == nil || spec.JobID != id {
			t.Errorf("input %d's spec: args %d bytes (want %d), payload %v, id %s", i, len(args), len(req.Inputs[i]), spec.Payload, spec.JobID)
		}
		if again, err := layout.Materialize(ctx, st, gid, i); err != nil || again != id {
			t.Errorf("materialized twice: %q, %v", again, err)
		}
	}

	// A child removed before its pod started stays removed.
	j, err = e.Attach(ctx, job.ChildID(gid, 9), "mem://")
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Cleanup(ctx, true, true); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Attach(ctx, j.Handle.JobID, "mem://"); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("attach after cleanup: %v, want not found", err)
	}
	if s, _, _, err := jobview.Recorded(ctx, st, j.Handle.JobID); err != nil || s != job.NotFound {
		t.Errorf("recorded after cleanup: %s, %v", s, err)
	}
	if _, err := layout.Materialize(ctx, st, gid, 9); !errors.Is(err, layout.ErrNotSubmitted) {
		t.Errorf("materialize after cleanup: %v, want ErrNotSubmitted", err)
	}
	if s, _, _, err := jobview.Recorded(ctx, st, job.ChildID(gid, 10)); err != nil || s != job.Pending {
		t.Errorf("recorded of a child not started: %s, %v; want PENDING", s, err)
	}
}

// TestDerivedBatchWatch: watching a batch run as one unit looks at the unit once per
// round and at a child only once its member ended: O(1) backend requests per round,
// not one per input (a watch that looked at every running child would read 2n statuses
// here: one sweep while they run, one when they end).
func TestDerivedBatchWatch(t *testing.T) {
	ctx := context.Background()
	const n = 500
	fake := newFakeBackend(func(int, int) outcome { return outcome{reads: -1} }) // running
	e := newTestEngine(t, fakeGrouper{fake})
	b, err := Map(ctx, e, mapRequest(n))
	if err != nil {
		t.Fatal(err)
	}
	<-b.Done()
	go func() {
		time.Sleep(500 * time.Millisecond) // a few rounds while every member runs
		fake.mu.Lock()
		defer fake.mu.Unlock()
		for _, j := range fake.jobs {
			j.o.reads = 0 // ends at its next look
			if j.name == "3/0" {
				j.o.reason = "input 3 failed"
			}
		}
	}()
	seen := map[int]job.State{}
	if err := Watch(ctx, e, b.GroupID(), "mem://", func(c ChildStatus) { seen[c.Index] = c.Status }); err != nil {
		t.Fatal(err)
	}
	if len(seen) != n || seen[3] != job.Failed || seen[0] != job.Succeeded {
		t.Fatalf("watch reported %d children (3: %s, 0: %s), want %d", len(seen), seen[3], seen[0], n)
	}
	fake.mu.Lock()
	reads, looks := fake.statusReads, fake.groupLooks
	fake.mu.Unlock()
	if reads > n+10 || looks < 2 {
		t.Errorf("the watch read %d statuses for %d children and looked at the unit %d times: want about one each, and the unit looked at every round", reads, n, looks)
	}
}
