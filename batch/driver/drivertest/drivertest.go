// Package drivertest is the conformance suite of the batch driver (batch/driver.Driver),
// in the manner of backend/backendtest and gocloud.dev/blob/drivertest: the same batch,
// the same statuses, the same guarantees on every backend that runs batches. It drives
// the driver the way package batch does, by the modes the driver declares: a unit
// (StartGroup, GroupDone, CleanupGroup) for the first attempts, a queue (Enqueue), or one
// job per child (Submit); retries are submitted alone.
//
// The children are command jobs (sh -c SCRIPT sh [INDEX]): a child knows its index from
// its argument when its job is written for it, or from its derived job's ID (ChildID:
// "-INDEX" ends it) when a unit runs it.
package drivertest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/backend/backendtest"
	"github.com/kinetic-run/kinetic/batch/driver"
	"github.com/kinetic-run/kinetic/batch/layout"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
)

// Job is a child as the suite observes it (its logs): *engine.Job satisfies it.
type Job = backendtest.Job

// Harness is what a backend's test provides.
type Harness struct {
	// New returns a backend that implements driver.Driver and the store it uses, fresh
	// for each subtest.
	New func(t *testing.T) (backend.Backend, *store.Store)
	// Observe binds a job to what observes it (required): the engine's engine.Job.
	Observe backendtest.Observe
	// KillMember kills whatever runs child h (its process, its pod, its task) without
	// letting it report; nil skips MemberDies. The child must then become FAILED with a
	// reason within Deadline.
	KillMember func(t *testing.T, b backend.Backend, st *store.Store, h *job.Handle)
	// Deadline bounds every wait (default 90 s).
	Deadline time.Duration
}

// index is the script's first line: the child's index, from its argument or its ID.
const index = `i=${1:-${KINETIC_JOB_ID##*-}}; echo task $i; `

// batch is a batch the suite started: its group, template and how it runs.
type batch struct {
	h     *Harness
	b     backend.Backend
	d     driver.Driver
	st    *store.Store
	g     driver.Group
	tmpl  *layout.Template
	modes driver.Modes
	kids  []*job.Handle // the first attempts' handles
}

// start writes a batch of n children running script and starts it as package batch
// does, by the driver's modes.
func (h *Harness) start(t *testing.T, n int, script string) *batch {
	t.Helper()
	b, st := h.New(t)
	d, ok := b.(driver.Driver)
	if !ok {
		t.Fatalf("backend %s does not implement driver.Driver", b.Name())
	}
	ctx := context.Background()
	gid := job.NewGroupID()
	argv := []string{"sh", "-c", index + script, "sh"}
	spec := &job.Spec{Version: job.SpecVersion, JobID: job.ChildID(gid, 0), Kind: job.KindCommand, Command: argv}
	th := &job.Handle{JobID: job.ChildID(gid, 0), Backend: b.Name(), K8sName: gid, GroupID: gid, GroupKind: "map", GroupIndex: "0",
		Accelerator: "cpu", FuncName: "sh", DisplayName: "sh", Store: st.URL(), CreatedAt: time.Now().UTC().Format(time.RFC3339Nano)}
	bt := &batch{h: h, b: b, d: d, st: st, g: driver.Group{ID: gid, Size: n, Parallelism: n},
		tmpl: &layout.Template{Handle: th, Spec: spec}, modes: d.Modes(th, spec)}
	if bt.modes.Unit {
		bt.startUnit(ctx, t)
		return bt
	}
	for i := range n {
		bt.kids = append(bt.kids, bt.submitAlone(t, i, argv))
	}
	return bt
}

// startUnit writes the template and the inputs and starts the unit, twice (StartGroup
// is idempotent).
func (bt *batch) startUnit(ctx context.Context, t *testing.T) {
	t.Helper()
	gid := bt.g.ID
	inputs := make([][]byte, bt.g.Size)
	for i := range inputs {
		inputs[i] = []byte(strconv.Itoa(i))
	}
	if err := layout.WriteDerived(ctx, bt.st, gid, bt.tmpl, nil, inputs); err != nil {
		t.Fatal(err)
	}
	m := layout.Manifest{GroupID: gid, Backend: bt.b.Name(), Store: bt.st.URL(), CreatedAt: bt.tmpl.Handle.CreatedAt,
		TotalExpected: bt.g.Size, MaxConcurrent: bt.g.Parallelism, Derived: true, SubmissionComplete: true}
	raw, _ := json.Marshal(m)
	if err := bt.st.Put(ctx, layout.ManifestKey(gid), raw); err != nil {
		t.Fatal(err)
	}
	for n := range 2 {
		if err := bt.d.StartGroup(ctx, bt.g, bt.tmpl.Handle); err != nil {
			t.Fatalf("StartGroup #%d: %v", n+1, err)
		}
	}
	for i := range bt.g.Size {
		bt.kids = append(bt.kids, bt.tmpl.ChildHandle(gid, i))
	}
}

// submitAlone writes child i's job (a new ID, argv with its index) and submits it alone,
// to the driver's queue when its modes say so: a first attempt on a driver without
// units, or a retry.
func (bt *batch) submitAlone(t *testing.T, i int, argv []string) *job.Handle {
	t.Helper()
	ctx := context.Background()
	id := job.NewID()
	h := *bt.tmpl.Handle
	h.JobID, h.K8sName, h.GroupIndex = id, id, strconv.Itoa(i)
	spec := *bt.tmpl.Spec
	spec.JobID, spec.Command = id, append(append([]string{}, argv...), strconv.Itoa(i))
	if err := bt.st.Put(ctx, store.SpecKey(id), spec.Encode()); err != nil {
		t.Fatal(err)
	}
	if err := bt.st.Put(ctx, store.HandleKey(id), h.Encode()); err != nil {
		t.Fatal(err)
	}
	var err error
	if bt.modes.Queue {
		err = bt.d.Enqueue(ctx, &h, bt.g.Parallelism)
	} else {
		err = bt.b.Submit(ctx, &h)
	}
	if err != nil {
		t.Fatalf("submit child %d: %v", i, err)
	}
	return &h
}

// status is child h's status as package batch reads it: a unit's member whose job is
// not in the store yet from the unit alone.
func (bt *batch) status(ctx context.Context, h *job.Handle) (job.State, string, error) {
	if bt.modes.Unit && h.JobID == job.ChildID(bt.g.ID, mustIndex(h)) {
		if ok, _ := bt.st.Exists(ctx, store.HandleKey(h.JobID)); !ok {
			return bt.d.UnwrittenStatus(ctx, h)
		}
	}
	return bt.b.Status(ctx, h)
}

func mustIndex(h *job.Handle) int {
	i, _ := strconv.Atoi(h.GroupIndex)
	return i
}

// waitEnded waits until every child ended, as the driver sees it (GroupDone for a unit,
// which must then say so in one look), and returns their states and reasons.
func (bt *batch) waitEnded(t *testing.T, kids []*job.Handle) ([]job.State, []string) {
	t.Helper()
	ctx := context.Background()
	states, reasons := make([]job.State, len(kids)), make([]string, len(kids))
	deadline := time.Now().Add(bt.h.deadline())
	for {
		ended := 0
		for i, h := range kids {
			s, r, err := bt.status(ctx, h)
			if err != nil {
				t.Fatalf("status of child %d: %v", i, err)
			}
			states[i], reasons[i] = s, r
			if s.Terminal() {
				ended++
			}
		}
		if ended == len(kids) {
			return states, reasons
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s, children are %v (%q)", bt.h.deadline(), states, reasons)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// waitRunning waits until child h runs.
func (bt *batch) waitRunning(t *testing.T, h *job.Handle) {
	t.Helper()
	for deadline := time.Now().Add(bt.h.deadline()); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if s, _, err := bt.status(context.Background(), h); err == nil && s == job.Running {
			return
		}
	}
	t.Fatalf("child %s never ran within %s", h.JobID, bt.h.deadline())
}

// groupDone checks GroupDone of a unit once every child ended: every member.
func (bt *batch) groupDone(t *testing.T) {
	t.Helper()
	if !bt.modes.Unit {
		return
	}
	var done map[int]bool
	var err error
	for deadline := time.Now().Add(bt.h.deadline()); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if done, err = bt.d.GroupDone(context.Background(), bt.g.ID); err == nil && len(done) == bt.g.Size {
			return
		}
	}
	t.Fatalf("GroupDone = %v, %v; want all %d members ended", done, err, bt.g.Size)
}

// logs are child h's logs.
func (bt *batch) logs(h *job.Handle) string {
	var buf bytes.Buffer
	bt.h.Observe(h, bt.st, bt.b).Logs(context.Background(), &buf, false)
	return buf.String()
}

func (h *Harness) deadline() time.Duration {
	if h.Deadline > 0 {
		return h.Deadline
	}
	return 90 * time.Second
}

// Run runs the suite.
func Run(t *testing.T, h Harness) {
	if h.Observe == nil || h.New == nil {
		t.Fatal("drivertest: Harness.New and Harness.Observe are required")
	}
	t.Run("Array", h.testArray)
	t.Run("Cancel", h.testCancel)
	t.Run("Retry", h.testRetry)
	t.Run("MemberDies", h.testMemberDies)
	t.Run("Withdraw", h.testWithdraw)
}

// testArray: every child runs its own index; an odd one fails naming its exit code; each
// child's logs are its own; a unit's GroupDone sees every member end.
func (h *Harness) testArray(t *testing.T) {
	const n = 4
	bt := h.start(t, n, `exit $(( i % 2 * 3 ))`)
	states, reasons := bt.waitEnded(t, bt.kids)
	bt.groupDone(t)
	for i := range n {
		want := job.Succeeded
		if i%2 == 1 {
			want = job.Failed
		}
		if states[i] != want || (want == job.Failed && !strings.Contains(reasons[i], "exit code 3")) {
			t.Errorf("child %d: %s (%q), want %s (naming exit code 3 when it failed)", i, states[i], reasons[i], want)
		}
		if logs := bt.logs(bt.kids[i]); !strings.Contains(logs, fmt.Sprintf("task %d\n", i)) {
			t.Errorf("child %d's logs: %q, want its own task line", i, logs)
		}
	}
	bt.cleanup(t)
}

// testCancel: a running child cancelled ends FAILED and its sibling runs on; Release of
// a child that ended, and the unit's cleanup, are idempotent.
func (h *Harness) testCancel(t *testing.T) {
	bt := h.start(t, 2, `sleep 300`)
	ctx := context.Background()
	bt.waitRunning(t, bt.kids[0])
	if err := bt.b.Cancel(ctx, bt.kids[0]); err != nil {
		t.Fatalf("Cancel: %v", err)
	}
	states, _ := bt.waitEnded(t, bt.kids[:1])
	if states[0] != job.Failed {
		t.Errorf("cancelled child: %s, want FAILED", states[0])
	}
	if s, _, err := bt.status(ctx, bt.kids[1]); err != nil || s.Terminal() {
		t.Errorf("its sibling: %s, %v; want it still running", s, err)
	}
	for n := range 2 {
		if err := bt.d.Release(ctx, bt.kids[0]); err != nil {
			t.Errorf("Release #%d of an ended child: %v", n+1, err)
		}
	}
	if err := bt.b.Cancel(ctx, bt.kids[1]); err != nil {
		t.Fatalf("Cancel: %v", err)
	}
	bt.waitEnded(t, bt.kids)
	bt.cleanup(t)
}

// testRetry: a child that failed is retried alone, as its own job (a new ID), which
// succeeds; the first attempt stays failed.
func (h *Harness) testRetry(t *testing.T) {
	bt := h.start(t, 2, `exit $(( i == 1 ? 3 : 0 ))`)
	states, _ := bt.waitEnded(t, bt.kids)
	if states[0] != job.Succeeded || states[1] != job.Failed {
		t.Fatalf("first attempts: %v, want [SUCCEEDED FAILED]", states)
	}
	retry := bt.submitAlone(t, 1, []string{"sh", "-c", index + `echo retried; exit 0`, "sh"})
	if retry.JobID == bt.kids[1].JobID {
		t.Fatal("the retry has its first attempt's ID")
	}
	rs, reasons := bt.waitEnded(t, []*job.Handle{retry})
	if rs[0] != job.Succeeded {
		t.Errorf("retry: %s (%q), want SUCCEEDED", rs[0], reasons[0])
	}
	if s, _, err := bt.status(context.Background(), bt.kids[1]); err != nil || s != job.Failed {
		t.Errorf("the failed first attempt after its retry: %s, %v; want FAILED still", s, err)
	}
	if logs := bt.logs(retry); !strings.Contains(logs, "retried") {
		t.Errorf("retry's logs: %q", logs)
	}
	bt.cleanup(t)
}

// testMemberDies: a child whose process, pod or task is killed without reporting ends
// FAILED with a reason.
func (h *Harness) testMemberDies(t *testing.T) {
	if h.KillMember == nil {
		t.Skip("no KillMember in this harness")
	}
	bt := h.start(t, 1, `sleep 300`)
	bt.waitRunning(t, bt.kids[0])
	h.KillMember(t, bt.b, bt.st, bt.kids[0])
	states, reasons := bt.waitEnded(t, bt.kids)
	if states[0] != job.Failed || reasons[0] == "" {
		t.Errorf("after its worker was killed: %s (%q), want FAILED with a reason", states[0], reasons[0])
	}
	t.Logf("reason: %s", reasons[0])
	bt.cleanup(t)
}

// testWithdraw: a unit not started is withdrawn (started false); once started, it is not
// (started true) and runs on.
func (h *Harness) testWithdraw(t *testing.T) {
	b, _ := h.New(t)
	w, ok := b.(driver.Withdrawer)
	d, _ := b.(driver.Driver)
	if !ok || d == nil {
		t.Skip("the driver is no Withdrawer")
	}
	if started, err := w.WithdrawGroup(context.Background(), job.NewGroupID()); err != nil || started {
		t.Errorf("WithdrawGroup of a unit never started = %v, %v; want false, nil", started, err)
	}
	bt := h.start(t, 1, `exit 0`)
	if !bt.modes.Unit {
		return
	}
	if started, err := bt.d.(driver.Withdrawer).WithdrawGroup(context.Background(), bt.g.ID); err != nil || !started {
		t.Errorf("WithdrawGroup of a started unit = %v, %v; want true, nil", started, err)
	}
	if states, _ := bt.waitEnded(t, bt.kids); states[0] != job.Succeeded {
		t.Errorf("the started unit after WithdrawGroup: %s, want SUCCEEDED", states[0])
	}
	bt.cleanup(t)
}

// cleanup removes the unit, twice (CleanupGroup is idempotent).
func (bt *batch) cleanup(t *testing.T) {
	t.Helper()
	if !bt.modes.Unit {
		return
	}
	for n := range 2 {
		if err := bt.d.CleanupGroup(context.Background(), bt.g.ID); err != nil {
			t.Errorf("CleanupGroup #%d: %v", n+1, err)
		}
	}
}
