package batch

import (
	"context"
	"errors"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/batch/layout"
	"github.com/kinetic-run/kinetic/engine"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/jobview"
	"github.com/kinetic-run/kinetic/store"
)

// TestScheduler runs whole batches against fake backends (plain, a driver with a queue,
// a driver that runs units) over a mem:// store, and checks the calls the backend saw and what
// the store records: the manifest, each child's attempts and status, the child entries,
// and what a member of a group unit resolves to.
func TestScheduler(t *testing.T) {
	fail := func(reason string) outcome { return outcome{reason: reason} }
	never := outcome{reads: -1}
	type ctl struct{ batch <-chan *Batch }
	for name, tc := range map[string]struct {
		kind          string // "", "queuer", "grouper"
		n             int
		maxConcurrent int
		retries       int
		failFast      bool
		cancelRunning bool
		outcome       func(index, attempt int) outcome
		// onSubmit runs in the backend's submission call of (index, attempt).
		onSubmit func(c ctl, index, attempt int) error
		// unordered: the children's calls after the first call may come in any order.
		unordered bool

		wantCalls       []string
		wantCancels     []string // the children still running when cancelled
		wantMaxInFlight int
		wantAttempts    []int // per input
		wantStates      []job.State
		wantErrors      []string // per input: a prefix of the submission error ("" none)
		wantStopped     string
	}{
		"in order, at most max_concurrent unfinished": {
			n: 5, maxConcurrent: 2,
			outcome:         func(int, int) outcome { return outcome{reads: 2} },
			wantCalls:       []string{"submit 0/0", "submit 1/0", "submit 2/0", "submit 3/0", "submit 4/0"},
			wantMaxInFlight: 2,
			wantAttempts:    []int{1, 1, 1, 1, 1},
		},
		"queuer: every child enqueued at once, bounded by the workers": {
			kind: "queuer", n: 4, maxConcurrent: 2,
			outcome:         func(int, int) outcome { return never },
			wantCalls:       []string{"enqueue 0/0 p=2", "enqueue 1/0 p=2", "enqueue 2/0 p=2", "enqueue 3/0 p=2"},
			wantMaxInFlight: 4,
			wantAttempts:    []int{1, 1, 1, 1},
			wantStates:      []job.State{job.Running, job.Running, job.Running, job.Running},
		},
		"grouper: the unit first, then every first attempt joins it": {
			kind: "grouper", n: 4, maxConcurrent: 3, unordered: true,
			wantCalls:       []string{"start size=4 p=3", "join 0/0", "join 1/0", "join 2/0", "join 3/0"},
			wantMaxInFlight: 4,
			wantAttempts:    []int{1, 1, 1, 1},
			wantStates:      []job.State{job.Succeeded, job.Succeeded, job.Succeeded, job.Succeeded},
		},
		"grouper: a retry is submitted alone": {
			// Every index of the unit starts at once (its pods), the retry afterwards.
			kind: "grouper", n: 3, maxConcurrent: 3, retries: 1,
			outcome: func(i, a int) outcome {
				if i == 1 && a == 0 {
					return fail("preempted: the spot node was reclaimed")
				}
				return outcome{}
			},
			wantCalls:       []string{"start size=3 p=3", "join 0/0", "join 1/0", "join 2/0", "submit 1/1"},
			wantMaxInFlight: 3,
			wantAttempts:    []int{1, 2, 1},
			wantStates:      []job.State{job.Succeeded, job.Succeeded, job.Succeeded},
		},
		"retries until they run out": {
			n: 3, maxConcurrent: 8, retries: 2,
			outcome: func(i, a int) outcome {
				if i == 1 {
					return fail("preempted: the spot node was reclaimed")
				}
				return outcome{}
			},
			wantCalls:       []string{"submit 0/0", "submit 1/0", "submit 2/0", "submit 1/1", "submit 1/2"},
			wantMaxInFlight: 2,
			wantAttempts:    []int{1, 3, 1},
			wantStates:      []job.State{job.Succeeded, job.Failed, job.Succeeded},
		},
		"no retries: a failure is final": {
			n: 3, maxConcurrent: 8,
			outcome: func(i, a int) outcome {
				if i == 1 {
					return fail("preempted: the spot node was reclaimed")
				}
				return outcome{}
			},
			wantCalls:       []string{"submit 0/0", "submit 1/0", "submit 2/0"},
			wantMaxInFlight: 3,
			wantAttempts:    []int{1, 1, 1},
			wantStates:      []job.State{job.Succeeded, job.Failed, job.Succeeded},
		},
		"fail_fast: submission stops and running children are cancelled": {
			n: 5, maxConcurrent: 3, failFast: true, cancelRunning: true,
			outcome: func(i, a int) outcome {
				if i == 1 {
					return fail("boom")
				}
				return never
			},
			wantCalls:       []string{"submit 0/0", "submit 1/0", "submit 2/0"},
			wantCancels:     []string{"0/0", "2/0"},
			wantMaxInFlight: 3,
			wantAttempts:    []int{1, 1, 1, 0, 0},
			wantStates:      []job.State{job.Failed, job.Failed, job.Failed, "", ""},
			wantErrors:      []string{"", "", "", "not submitted: the batch was stopped (fail_fast)", "not submitted: the batch was stopped (fail_fast)"},
			wantStopped:     "fail_fast",
		},
		"fail_fast without cancel_running_on_fail: running children finish": {
			n: 3, maxConcurrent: 8, failFast: true,
			outcome: func(i, a int) outcome {
				if i == 2 {
					return outcome{reads: 1, reason: "boom"}
				}
				return outcome{reads: 3}
			},
			wantCalls:       []string{"submit 0/0", "submit 1/0", "submit 2/0"},
			wantMaxInFlight: 3,
			wantAttempts:    []int{1, 1, 1},
			wantStates:      []job.State{job.Succeeded, job.Succeeded, job.Failed},
		},
		"fail_fast after submission: what still runs is cancelled": {
			n: 3, maxConcurrent: 8, failFast: true, cancelRunning: true,
			outcome: func(i, a int) outcome {
				if i == 2 {
					return outcome{reads: 1, reason: "boom"}
				}
				return never
			},
			wantCalls:       []string{"submit 0/0", "submit 1/0", "submit 2/0"},
			wantCancels:     []string{"0/0", "1/0"},
			wantMaxInFlight: 3,
			wantAttempts:    []int{1, 1, 1},
			wantStates:      []job.State{job.Failed, job.Failed, job.Failed},
		},
		"cancelled between two submissions": {
			n: 5, maxConcurrent: 8,
			onSubmit: func(c ctl, i, a int) error {
				if i == 2 {
					(<-c.batch).Stop()
				}
				return nil
			},
			wantCalls:       []string{"submit 0/0", "submit 1/0", "submit 2/0"},
			wantMaxInFlight: 3,
			wantAttempts:    []int{1, 1, 1, 0, 0},
			wantStates:      []job.State{job.Succeeded, job.Succeeded, job.Succeeded, "", ""},
			wantErrors:      []string{"", "", "", "not submitted: the batch was stopped (cancelled)", "not submitted: the batch was stopped (cancelled)"},
			wantStopped:     "cancelled",
		},
		"the submitter's context dies during a submission": {
			n: 4, maxConcurrent: 8, retries: 3,
			onSubmit: func(c ctl, i, a int) error {
				if i == 1 {
					(<-c.batch).Stop()
					return context.Canceled
				}
				return nil
			},
			wantCalls:       []string{"submit 0/0"},
			wantMaxInFlight: 1,
			wantAttempts:    []int{1, 0, 0, 0},
			wantStates:      []job.State{job.Succeeded, "", "", ""},
			wantErrors:      []string{"", "submit job-", "not submitted: the batch was stopped (cancelled)", "not submitted: the batch was stopped (cancelled)"},
			wantStopped:     "cancelled",
		},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			fake := newFakeBackend(tc.outcome)
			var be backend.Backend = fake
			switch tc.kind {
			case "queuer":
				be = fakeQueuer{fake}
			case "grouper":
				be = fakeGrouper{fake}
			}
			batches := make(chan *Batch, 1)
			if tc.onSubmit != nil {
				fake.onSubmit = func(i, a int) error { return tc.onSubmit(ctl{batches}, i, a) }
			}
			e := newTestEngine(t, be)
			req := mapRequest(tc.n)
			req.MaxConcurrent, req.Retries, req.FailFast, req.CancelRunningOnFail = tc.maxConcurrent, tc.retries, tc.failFast, tc.cancelRunning
			b, err := Map(ctx, e, req)
			if err != nil {
				t.Fatal(err)
			}
			batches <- b
			select {
			case <-b.Done():
			case <-time.After(30 * time.Second):
				t.Fatal("the batch did not settle")
			}

			calls, cancels := fake.log()
			if tc.unordered && len(calls) > 1 {
				sort.Strings(calls[1:])
			}
			if d := cmp.Diff(tc.wantCalls, calls); d != "" {
				t.Errorf("backend calls (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.wantCancels, cancels); d != "" {
				t.Errorf("cancelled (-want +got):\n%s", d)
			}
			if fake.maxInFlight != tc.wantMaxInFlight {
				t.Errorf("at most %d children unfinished at once, want %d", fake.maxInFlight, tc.wantMaxInFlight)
			}

			v, err := Read(ctx, e, b.GroupID(), "mem://", true)
			if err != nil {
				t.Fatal(err)
			}
			if !v.SubmissionComplete || !v.Settled || v.Stopped != tc.wantStopped {
				t.Errorf("manifest: complete %v settled %v stopped %q, want complete, settled, stopped %q", v.SubmissionComplete, v.Settled, v.Stopped, tc.wantStopped)
			}
			var attempts []int
			var states []job.State
			var errs []string
			for i, c := range v.Children {
				attempts = append(attempts, len(c.Attempts))
				states = append(states, v.Statuses[i].Status)
				errs = append(errs, c.SubmissionError)
			}
			if d := cmp.Diff(tc.wantAttempts, attempts); d != "" {
				t.Errorf("attempts per input (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.wantStates, states); tc.wantStates != nil && d != "" {
				t.Errorf("states per input (-want +got):\n%s", d)
			}
			for i := range errs {
				want := ""
				if tc.wantErrors != nil {
					want = tc.wantErrors[i]
				}
				if (want == "") != (errs[i] == "") || !strings.HasPrefix(errs[i], want) {
					t.Errorf("input %d: submission error %q, want %q...", i, errs[i], want)
				}
			}
			for i, c := range v.Children {
				if c.JobID != "" && (v.Statuses[i].Handle == nil || v.Statuses[i].Handle.GroupIndex != strconv.Itoa(i) || v.Statuses[i].Handle.GroupID != b.GroupID()) {
					t.Errorf("input %d: handle %+v does not name its batch and index", i, v.Statuses[i].Handle)
				}
			}

			// Every submitted child's entry is in the store, naming its last attempt, and
			// a member of a group unit finds the first attempt or learns the input was
			// never submitted.
			st, err := e.Store(ctx, "mem://")
			if err != nil {
				t.Fatal(err)
			}
			for i, c := range v.Children {
				if c.JobID != "" && len(c.Attempts) > 1 || c.JobID != "" && !v.Derived {
					// (A derived first attempt has no entry: it is made from the template.)
					raw, err := st.Get(ctx, layout.ChildKey(b.GroupID(), i))
					if err != nil || !strings.Contains(string(raw), c.JobID) {
						t.Errorf("input %d: child entry %s (%v), want one naming %s", i, raw, err, c.JobID)
					}
				}
				id, err := layout.ResolveMember(ctx, st, b.GroupID(), i, time.Second)
				switch {
				case len(c.Attempts) > 0 && (err != nil || id != c.Attempts[0]):
					t.Errorf("input %d: member resolves to %q, %v; want %s", i, id, err, c.Attempts[0])
				case len(c.Attempts) == 0 && !errors.Is(err, layout.ErrNotSubmitted):
					t.Errorf("input %d: member resolves to %q, %v; want ErrNotSubmitted", i, id, err)
				}
			}
		})
	}
}

// TestKilledSubmitter: a submitter killed after submitting some children, before it
// saved the manifest again, leaves them findable: readers merge their entries, a member
// of a later index waits for its child and gives up after its wait, without claiming
// the input was never submitted.
func TestKilledSubmitter(t *testing.T) {
	ctx := context.Background()
	e, gid := killedAfterTwo(t)
	v, err := Read(ctx, e, gid, "mem://", true)
	if err != nil {
		t.Fatal(err)
	}
	if v.SubmissionComplete || len(v.Children) != 2 {
		t.Fatalf("read %d children (complete %v), want the 2 submitted, incomplete", len(v.Children), v.SubmissionComplete)
	}
	for i, c := range v.Children {
		if c.JobID == "" || v.Statuses[i].Status != job.Succeeded {
			t.Errorf("child %d: job %q status %s, want its job found", i, c.JobID, v.Statuses[i].Status)
		}
	}
	st, err := e.Store(ctx, "mem://")
	if err != nil {
		t.Fatal(err)
	}
	if id, err := layout.ResolveMember(ctx, st, gid, 1, time.Second); err != nil || id != v.Children[1].JobID {
		t.Errorf("member 1 resolves to %q, %v; want %s", id, err, v.Children[1].JobID)
	}
	id, err := layout.ResolveMember(ctx, st, gid, 2, 50*time.Millisecond)
	if err == nil || errors.Is(err, layout.ErrNotSubmitted) || !strings.Contains(err.Error(), "not written to the store") {
		t.Errorf("member 2 resolves to %q, %v; want a timeout waiting for its child", id, err)
	}
}

// TestCleanupRemovesAHalfSubmittedChild: a submitter killed between a child's spec and
// its handle (the handle is written last) leaves objects of a job that never was; batch
// cleanup removes them with the rest of the batch (they stayed, and every `jobs list`
// warned of a job without handle.json).
func TestCleanupRemovesAHalfSubmittedChild(t *testing.T) {
	ctx := context.Background()
	e, gid := killedAfterTwo(t)
	v, err := Read(ctx, e, gid, "mem://", true)
	if err != nil || len(v.Children) != 2 {
		t.Fatalf("read: %v, %d children", err, len(v.Children))
	}
	st, err := e.Store(ctx, "mem://")
	if err != nil {
		t.Fatal(err)
	}
	half := v.Children[1].JobID
	objs, err := st.List(ctx, store.JobPrefix(half))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs { // all but its spec: the handle was never written
		if !strings.HasSuffix(o.Key, "/spec.json") {
			st.Remove(ctx, o.Key)
		}
	}
	if ok, _ := st.Exists(ctx, store.SpecKey(half)); !ok {
		t.Fatal("test setup: the child has no spec.json")
	}
	if err := Cleanup(ctx, e, gid, "mem://", true, true); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{v.Children[0].JobID, half} {
		if left, err := st.List(ctx, store.JobPrefix(id)); err != nil || len(left) != 0 {
			t.Errorf("after batch cleanup, job %s keeps %d objects (%v)", id, len(left), err)
		}
	}
}

// killedAfterTwo is a 4-input batch whose submitter submitted two children and was
// killed before it saved the manifest again: the steps run makes, cut short.
func killedAfterTwo(t *testing.T) (*engine.Engine, string) {
	t.Helper()
	ctx := context.Background()
	e := newTestEngine(t, fakeQueuer{newFakeBackend(nil)}) // (a grouped batch is submitted in one step)
	s, err := newScheduler(ctx, e, mapRequest(4))
	if err != nil {
		t.Fatal(err)
	}
	s.poll = jobview.NewPoller()
	for i := range 2 {
		if s.submit(ctx, i, 0) == nil {
			t.Fatalf("child %d not submitted", i)
		}
	}
	return e, s.b.GroupID()
}
