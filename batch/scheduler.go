package batch

import (
	"context"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/batch/driver"
	"github.com/kinetic-run/kinetic/batch/layout"
	"github.com/kinetic-run/kinetic/engine"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/jobview"
)

// scheduler submits the inputs of one batch: at most maxConcurrent children unfinished
// (unless the backend queues or groups them), failed children resubmitted while they
// have retries left, and with failFast a stop at the first final failure. Its steps are
// submit (one attempt of one input), reap (look at the running children), and save (the
// manifest); run strings them together.
type scheduler struct {
	b             *Batch
	tmpl          *engine.Template
	inputs        inputs
	release       func() // lets go of the inputs once run returns
	maxConcurrent int
	retries       int
	failFast      bool
	cancelRunning bool // with failFast: cancel running children too, not only waiting ones
	// driver is the backend's batch driver (nil: it runs each child as a job of its
	// own). queued: it queues children and bounds their concurrency with its workers.
	// grouped: it runs first attempts as one unit started by Map (driver.Modes).
	driver          driver.Driver
	queued, grouped bool

	active   []attempt       // submitted and not yet final, oldest first
	failed   bool            // a child failed for good
	stopped  string          // why submission stopped early ("fail_fast", "cancelled")
	poll     *jobview.Poller // paces the looks at running children, for the whole run
	saveMu   sync.Mutex
	lastSave time.Time
}

// attempt is one submission of one input.
type attempt struct {
	index, n int // the input, and which attempt (0 first)
	j        *engine.Job
}

// saveEvery bounds how often the manifest is rewritten while submitting.
const saveEvery = 500 * time.Millisecond

// save rewrites the manifest if it was not saved for a while (always with force).
// The children written one by one since are found by readers anyway
// (layout.MergeChildren). It is safe for concurrent use.
func (s *scheduler) save(ctx context.Context, force bool) {
	s.saveMu.Lock()
	defer s.saveMu.Unlock()
	if force || time.Since(s.lastSave) > saveEvery {
		s.b.writeManifest(context.WithoutCancel(ctx))
		s.lastSave = time.Now()
	}
}

// submit submits attempt n of input i and records it in the manifest (its child entry
// is written to the store before the job). It returns nil if the submission failed; the
// error is recorded at the input's index. It is safe for concurrent use.
func (s *scheduler) submit(ctx context.Context, i, n int) *engine.Job {
	b := s.b
	gid := b.manifest.GroupID
	b.mu.Lock()
	var prev []string
	if i < len(b.manifest.Children) {
		prev = append(prev, b.manifest.Children[i].Attempts...)
	}
	if len(prev) == 0 && b.manifest.Derived {
		prev = []string{job.ChildID(gid, i)} // the first attempt, derived
	}
	b.mu.Unlock()
	args, err := s.inputs.At(i)
	if err != nil {
		s.failSubmission(i, prev, err)
		return nil
	}
	in := &engine.Instance{
		Args: args,
		Prepare: func(ctx context.Context, h *job.Handle) error {
			h.GroupID, h.GroupKind, h.GroupIndex = gid, "map", strconv.Itoa(i)
			// Before the job exists: a submitter killed now leaves a findable child.
			return layout.WriteChild(ctx, b.st, gid, Child{Index: i, JobID: h.JobID, Attempts: append(prev, h.JobID)})
		},
	}
	if s.queued {
		in.Start = s.enqueue
	}
	j, err := s.tmpl.Submit(ctx, in)
	if err != nil {
		s.failSubmission(i, prev, err)
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	c := b.child(i)
	c.JobID = j.Handle.JobID
	c.Attempts = append(prev, j.Handle.JobID)
	c.SubmissionError = ""
	return j
}

// failSubmission records at input i that its attempt after prev was not submitted.
func (s *scheduler) failSubmission(i int, prev []string, err error) {
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	c := s.b.child(i)
	c.SubmissionError = err.Error()
	if c.JobID == "" && len(prev) > 0 {
		c.JobID, c.Attempts = prev[len(prev)-1], prev // the derived attempt before it
	}
}

// child is the manifest's entry of input i, made (with those before it) if missing.
// The caller holds b.mu.
func (b *Batch) child(i int) *Child {
	for len(b.manifest.Children) <= i {
		b.manifest.Children = append(b.manifest.Children, Child{Index: len(b.manifest.Children)})
	}
	return &b.manifest.Children[i]
}

// enqueue starts a child in the driver's queue, bounding the batch's workers by
// maxConcurrent; a child that runs in a container is started alone.
func (s *scheduler) enqueue(ctx context.Context, be backend.Backend, h *job.Handle, spec *job.Spec) error {
	if spec.Container != "" {
		return be.Submit(ctx, h)
	}
	return s.driver.Enqueue(ctx, h, s.maxConcurrent)
}

// reap looks at up to limit of the oldest active children (they tend to finish first),
// resubmits the failed ones that have retries left, and drops the final ones.
func (s *scheduler) reap(ctx context.Context, limit int) {
	keep := s.active[:0]
	for k, a := range s.active {
		if k >= limit {
			keep = append(keep, a)
			continue
		}
		state, _, err := a.j.Status(ctx)
		if err != nil || !state.Terminal() {
			keep = append(keep, a)
			continue
		}
		if s.driver != nil {
			s.driver.Release(ctx, a.j.Handle) // best effort: cleanup removes it all anyway
		}
		if state == job.Failed && a.n < s.retries && s.stopped == "" {
			if j := s.submit(ctx, a.index, a.n+1); j != nil {
				keep = append(keep, attempt{a.index, a.n + 1, j})
				s.save(ctx, true)
			}
			continue
		}
		if state == job.Failed {
			s.failed = true
		}
	}
	s.active = keep
}

// watching: the submitter keeps looking at its children (to retry them, or to stop at
// the first failure).
func (s *scheduler) watching() bool { return s.retries > 0 || s.failFast }

// run submits every input, then (watching) supervises until every child is final, and
// records how it ended. Cancelling ctx stops it ("cancelled").
func (s *scheduler) run(ctx context.Context) {
	s.poll = jobview.NewPoller()
	// The heartbeat: while submission goes on (waiting for a free slot, say), the
	// manifest is saved at least every HeartbeatEvery, so readers can tell that its
	// submitter is alive.
	beat, stopBeat := context.WithCancel(context.WithoutCancel(ctx))
	defer stopBeat()
	go func() {
		t := time.NewTicker(layout.HeartbeatEvery)
		defer t.Stop()
		for {
			select {
			case <-beat.Done():
				return
			case <-t.C:
				s.save(beat, false)
			}
		}
	}()
	if s.grouped {
		// Every first attempt was submitted with the group: nothing is written per
		// input. Only a watching submitter keeps them, to retry or stop.
		for i := range s.inputs.Len() {
			if !s.watching() {
				break
			}
			if j, err := templateJob(ctx, s.b.e, s.b.st, s.b.manifest.GroupID, i); err == nil {
				s.active = append(s.active, attempt{i, 0, j})
			}
		}
	} else {
		s.submitEach(ctx, 0)
		s.finishSubmission(ctx)
	}
	if s.stopped == "fail_fast" {
		s.cancelChildren(context.WithoutCancel(ctx))
	}
	s.supervise(ctx)
	s.b.mu.Lock()
	s.b.manifest.Settled = true
	s.b.mu.Unlock()
	s.save(ctx, true)
}

// submitEach submits the inputs from the first-th on, one at a time, waiting while
// the gate is full, until all are submitted or submission stops.
func (s *scheduler) submitEach(ctx context.Context, first int) {
	// A queueing backend bounds the batch's concurrency itself: children wait at no
	// cost, so submission need not wait for them.
	gate := s.maxConcurrent
	if s.queued {
		gate = s.inputs.Len() + 1
	}
	for i := first; i < s.inputs.Len(); i++ {
		for len(s.active) >= gate && ctx.Err() == nil {
			s.reap(ctx, len(s.active))
			if len(s.active) >= gate {
				s.poll.Wait(ctx)
			}
		}
		if s.failFast && s.failed {
			s.stopped = "fail_fast"
		}
		if ctx.Err() != nil && s.stopped == "" {
			s.stopped = "cancelled"
		}
		if s.stopped != "" {
			return
		}
		if j := s.submit(ctx, i, 0); j != nil {
			s.active = append(s.active, attempt{i, 0, j})
		}
		s.save(ctx, false)
		if s.watching() && i%16 == 0 {
			s.reap(ctx, 32)
		}
	}
}

// finishSubmission marks submission complete, accounts for the inputs left unsubmitted
// (by fail_fast or cancel) so none is silent, and saves.
func (s *scheduler) finishSubmission(ctx context.Context) {
	b := s.b
	b.mu.Lock()
	b.manifest.SubmissionComplete = true
	b.manifest.Stopped = s.stopped
	why := "not submitted: the batch was stopped (" + s.stopped + ")"
	for i := range b.manifest.Children {
		if c := &b.manifest.Children[i]; c.JobID == "" && c.SubmissionError == "" {
			c.SubmissionError = why
		}
	}
	for i := len(b.manifest.Children); i < s.inputs.Len(); i++ {
		b.manifest.Children = append(b.manifest.Children, Child{Index: i, SubmissionError: why})
	}
	b.mu.Unlock()
	s.save(ctx, true)
}

// supervise, when watching, keeps reaping until every child is final, and with
// failFast cancels what runs at the first final failure.
func (s *scheduler) supervise(ctx context.Context) {
	for s.watching() && len(s.active) > 0 && ctx.Err() == nil {
		s.reap(ctx, len(s.active))
		if s.failFast && s.failed {
			s.cancelChildren(context.WithoutCancel(ctx))
			return
		}
		s.poll.Wait(ctx)
	}
}

// cancelChildren cancels every child that has not started (PENDING) and, with
// cancelRunning (cancel_running_on_fail=True), the running ones too: fail-fast stops
// what has not begun, and by default lets what runs finish.
func (s *scheduler) cancelChildren(ctx context.Context) {
	b := s.b
	b.mu.Lock()
	ids := make([]string, 0, len(b.manifest.Children))
	for _, c := range b.manifest.Children {
		if c.JobID != "" {
			ids = append(ids, c.JobID)
		}
	}
	if b.manifest.Derived {
		// The first attempts not retried are derived, not in the manifest.
		for i := len(b.manifest.Children); i < b.manifest.TotalExpected; i++ {
			ids = append(ids, job.ChildID(b.manifest.GroupID, i))
		}
		for _, c := range b.manifest.Children {
			if c.JobID == "" && c.SubmissionError == "" {
				ids = append(ids, job.ChildID(b.manifest.GroupID, c.Index))
			}
		}
	}
	b.mu.Unlock()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for _, id := range ids {
		g.Go(func() error {
			if j, err := b.e.Attach(gctx, id, b.st.URL()); err == nil {
				if !s.cancelRunning {
					if state, _, err := j.Status(gctx); err != nil || state != job.Pending {
						return nil
					}
				}
				j.Cancel(gctx)
			}
			return nil
		})
	}
	g.Wait()
}
