package batch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/kinetic-run/kinetic/batch/driver"
	"github.com/kinetic-run/kinetic/batch/layout"
	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/engine"
	"github.com/kinetic-run/kinetic/internal/calltrace"
	"github.com/kinetic-run/kinetic/internal/parallel"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/jobview"
	"github.com/kinetic-run/kinetic/store"
)

// View is a batch as read from the store: the manifest with the children submitted so
// far and each child's status.
type View struct {
	Manifest
	Statuses []ChildStatus `json:"statuses"`
}

// ChildStatus is one child's current state.
type ChildStatus struct {
	Index int `json:"index"`
	// JobID is the child's job (its last attempt), also once its handle is gone.
	JobID  string      `json:"job_id,omitempty"`
	Handle *job.Handle `json:"handle,omitempty"`
	Status job.State   `json:"status,omitempty"`
	Reason string      `json:"reason,omitempty"`
	Error  string      `json:"submission_error,omitempty"`
	// CollectedAt is set for a child whose result was collected and which was then
	// cleaned up (results(cleanup=True)): its Status is NOT_FOUND, as the API says, and
	// it succeeded.
	CollectedAt *time.Time `json:"collected_at,omitempty"`
	// Result is the child's result with its value inline, when the watch was asked for
	// values (WatchOptions.InlineMax) and the value is that small.
	Result *jobview.Result `json:"-"`
}

// Succeeded reports whether the child succeeded, collected or not.
func (c ChildStatus) Succeeded() bool { return c.Status == job.Succeeded || c.CollectedAt != nil }

// collectedAt says whether the error of attaching a child's job means it was collected
// and cleaned up, and when: its tombstone, else the batch's collection record.
func collectedAt(err error, id string, records map[string]layout.Collected) *time.Time {
	var gone *engine.CleanedUpError
	if errors.As(err, &gone) {
		t := gone.Tombstone.CleanedAt
		return &t
	}
	if c, ok := records[id]; ok {
		t := c.CollectedAt
		return &t
	}
	return nil
}

// firstDerived reports whether c is still at its derived first attempt.
func firstDerived(m *Manifest, c Child) bool {
	return m.Derived && len(c.Attempts) == 1 && c.JobID == job.ChildID(m.GroupID, c.Index)
}

// lookEnded reads, 16 at a time, the status of each child at its derived first attempt
// whose unit member ended (done) and that is not final yet, and returns the final ones.
func lookEnded(ctx context.Context, e Engine, st *store.Store, m *Manifest, storeURL string, done, final map[int]bool, o WatchOptions) ([]ChildStatus, error) {
	var ended []Child
	for _, c := range m.Children {
		if !final[c.Index] && done[c.Index] && firstDerived(m, c) {
			ended = append(ended, c)
		}
	}
	if len(ended) == 0 {
		return nil, nil
	}
	derived := endedDerived(ctx, e, st, m.GroupID)
	out := make([]ChildStatus, len(ended))
	err := parallel.ForEach(ctx, len(ended), 16, func(gctx context.Context, k int) error {
		c := ended[k]
		if !retriesLeft(m, c) {
			// Its end (and its result, as results() will want the value) in one read
			// of the store (ResultRecorded); without one, the backend is asked.
			if cs, ok := endedWithResult(gctx, st, derived, c, o.InlineMax); ok {
				out[k] = cs
				return nil
			}
		}
		// Most ended children have written nothing but their result: derived.
		j, err := derived(gctx, c)
		if j == nil && err == nil {
			j, err = e.Attach(gctx, c.JobID, storeURL)
		}
		if err != nil {
			var gone *engine.CleanedUpError
			if errors.As(err, &gone) { // collected and cleaned up: final
				t := gone.Tombstone.CleanedAt
				out[k] = ChildStatus{Index: c.Index, Status: job.NotFound, CollectedAt: &t}
			} else if cs, ok := removedChild(gctx, st, m, c, err); ok {
				out[k] = cs
			}
			return nil
		}
		state, reason, err := j.Status(gctx)
		if errors.Is(err, job.ErrDamaged) {
			// Nothing will mend it: final, with why (its result says so too).
			out[k] = ChildStatus{Index: c.Index, JobID: c.JobID, Handle: j.Handle, Status: job.NotFound, Reason: err.Error()}
			return nil
		}
		if err != nil {
			return err
		}
		if state.Terminal() && !(state == job.Failed && retriesLeft(m, c)) {
			out[k] = ChildStatus{Index: c.Index, Handle: j.Handle, Status: state, Reason: reason}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	kept := out[:0]
	for _, cs := range out {
		if cs.Status != "" {
			kept = append(kept, cs)
		}
	}
	return kept, nil
}

// endedWithResult is the final status of child c, which its unit says ended, with its
// result when its value is at most inlineMax bytes (none when inlineMax is 0), read as
// jobview.ResultRecorded reads it: while the batch runs, so that results() asks for
// nothing more. ok is false when
// the store records no readable end (the backend is asked then, and results() says why
// a result cannot be read). It is used only for a child with no retry left to it.
func endedWithResult(ctx context.Context, st *store.Store, derived func(context.Context, Child) (*engine.Job, error), c Child, inlineMax int) (ChildStatus, bool) {
	j, err := derived(ctx, c)
	if j == nil || err != nil {
		return ChildStatus{}, false // gone, collected, or not derived: as before
	}
	res, ok, err := jobview.New(st, c.JobID).ResultRecorded(ctx, jobview.ValueTo{InlineMax: inlineMax, InlineOnly: inlineMax > 0})
	if errors.Is(err, jobview.ErrNothingRecorded) {
		// Its pod wrote nothing of its end (it was lost, or wrote nothing at all: a kwok
		// pod): its unit's view, without the store reads Status would repeat (this round
		// knows the child is derived, not removed, not collected).
		if d, isDriver := j.Backend.(driver.Driver); isDriver {
			if state, reason, err := d.UnwrittenStatus(ctx, j.Handle); err == nil && state.Terminal() {
				return ChildStatus{Index: c.Index, Handle: j.Handle, Status: state, Reason: reason}, true
			}
		}
		return ChildStatus{}, false
	}
	if !ok || err != nil {
		return ChildStatus{}, false
	}
	cs := ChildStatus{Index: c.Index, Handle: j.Handle, Status: res.State, Reason: res.Reason}
	if inlineMax > 0 && !res.Skipped {
		cs.Result = res
	}
	return cs, true
}

// retriesLeft says whether child c, if it failed, would be tried again.
func retriesLeft(m *Manifest, c Child) bool { return len(c.Attempts) <= m.Retries && !m.Settled }

// removedChild is the final status of child c, whose job is not in the store (err from
// Attach), when it was removed (`kinetic jobs cleanup` of it, without collecting its
// result: no tombstone) and not written a moment ago: a derived child with its gone
// marker, or any child of a batch whose submission is over and which tries nothing again
// (every job of it was written before). A watch waited for it for ever.
func removedChild(ctx context.Context, st *store.Store, m *Manifest, c Child, err error) (ChildStatus, bool) {
	if !errors.Is(err, engine.ErrNotFound) {
		return ChildStatus{}, false
	}
	if firstDerived(m, c) {
		if gone, gerr := layout.Gone(ctx, st, m.GroupID, c.Index); gerr != nil || !gone {
			return ChildStatus{}, false
		}
	} else if !m.SubmissionComplete || (m.Retries > 0 && !m.Settled) {
		return ChildStatus{}, false
	}
	return ChildStatus{Index: c.Index, JobID: c.JobID, Status: job.NotFound,
		Reason: fmt.Sprintf("job %s was cleaned up before its result was collected: nothing of it is left", c.JobID)}, true
}

// endedDerived returns what finds the derived job of an ended child of batch gid (nil,
// nil when it is not one, or when it was removed or collected). The batch's template, gone
// markers and collection records are read once for the round (two listings), not per
// child: a round may find thousands of children ended, and a listing per child, one at a
// time, was what the watch of a large map spent most of its time on. When the batch
// cannot be read that way, each child is looked up by itself (derivedJob).
func endedDerived(ctx context.Context, e Engine, st *store.Store, gid string) func(context.Context, Child) (*engine.Job, error) {
	each := func(ctx context.Context, c Child) (*engine.Job, error) { return derivedJob(ctx, e, st, c.JobID) }
	t, err := template(ctx, st, gid)
	if t == nil || err != nil {
		return each
	}
	gone, err := layout.GoneSet(ctx, st, gid)
	if err != nil {
		return each
	}
	collected, err := collectedIDs(ctx, st, gid)
	if err != nil {
		return each
	}
	be, err := e.BackendFor(t.ChildHandle(gid, 0), st)
	if err != nil {
		return each
	}
	return func(ctx context.Context, c Child) (*engine.Job, error) {
		if gone[c.Index] || collected[c.JobID] {
			return nil, nil
		}
		return &engine.Job{Handle: t.ChildHandle(gid, c.Index), Store: st, Backend: be, Unwritten: Unwritten{}}, nil
	}
}

// groupDone returns the members of a derived batch's unit that ended, nil when the batch
// is not derived, its backend runs no units, or the unit cannot be seen (then every
// child is looked at by itself).
func groupDone(ctx context.Context, e Engine, m *Manifest, storeURL string, jobs map[int]*engine.Job) map[int]bool {
	if !m.Derived || m.TotalExpected == 0 {
		return nil
	}
	j := jobs[-1] // the first child, kept for its backend
	if j == nil {
		var err error
		if j, err = e.Attach(ctx, job.ChildID(m.GroupID, 0), storeURL); err != nil {
			return nil
		}
		jobs[-1] = j
	}
	gr, ok := j.Backend.(driver.Driver)
	if !ok {
		return nil
	}
	done, err := gr.GroupDone(ctx, m.GroupID)
	if err != nil {
		return nil
	}
	return done
}

// unavailable says why a child's job cannot be read (BatchHandle.unavailable_children).
func unavailable(collected *time.Time, err error) string {
	switch {
	case collected != nil:
		return "its result was collected and the job cleaned up at " + collected.UTC().Format(time.RFC3339)
	case err != nil && !store.IsNotFound(err) && !errors.Is(err, engine.ErrNotFound):
		return "its job cannot be read: " + err.Error()
	default:
		return "its job is no longer in the store (cleaned up or removed)"
	}
}

// openStore opens storeURL, or the engine's configured store when it is "".
func openStore(ctx context.Context, e Engine, storeURL string) (*store.Store, string, error) {
	if storeURL == "" {
		storeURL = e.Config().Get(config.Store)
	}
	st, err := e.Store(ctx, storeURL)
	return st, storeURL, err
}

// Read reads a batch's manifest, merges the children recorded since its last write,
// and (withStatus) reads every child's status.
func Read(ctx context.Context, e Engine, gid, storeURL string, withStatus bool) (*View, error) {
	if !job.ValidName(gid) {
		return nil, fmt.Errorf("%q is not a group ID (IDs look like grp-0123456789abcdefghijklm): %w", gid, engine.ErrNotFound)
	}
	st, storeURL, err := openStore(ctx, e, storeURL)
	if errors.Is(err, store.ErrNoStore) {
		return nil, fmt.Errorf("no batch %s in the store %s, which does not exist yet (check the ID and the store; `kinetic batch list` shows the batches there): %w", gid, storeURL, engine.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	var v View
	if err := readManifest(ctx, st, gid, &v.Manifest, map[int]Child{}); err != nil {
		return nil, err
	}
	records, err := layout.ReadCollected(ctx, st, gid)
	if err != nil {
		return nil, err
	}
	v.Statuses = make([]ChildStatus, len(v.Children))
	var ids []string
	var at []int
	for i, c := range v.Children {
		v.Statuses[i] = ChildStatus{Index: c.Index, JobID: c.JobID, Error: c.SubmissionError}
		if c.JobID != "" {
			ids, at = append(ids, c.JobID), append(at, i)
		}
	}
	rows, err := readRows(ctx, e, st, storeURL, ids, withStatus)
	if err != nil {
		return nil, err
	}
	for k, r := range rows {
		s := &v.Statuses[at[k]]
		if r.Handle == nil {
			s.Status, s.CollectedAt = job.NotFound, collectedAt(r.Err, ids[k], records)
			s.Reason = unavailable(s.CollectedAt, r.Err)
			continue
		}
		s.Handle = r.Handle
		if withStatus {
			s.Status, s.Reason = r.State, r.Reason
			if c, ok := records[r.Handle.JobID]; ok && r.State == job.Succeeded {
				// Collected, its cleanup under way: NOT_FOUND already.
				t := c.CollectedAt
				s.Status, s.CollectedAt = job.NotFound, &t
			}
		}
	}
	return &v, nil
}

// presentByResult marks present the children of ids whose result is in their batch's
// results/.
func presentByResult(ctx context.Context, st *store.Store, ids []string, present map[string]bool) error {
	listed := map[string]bool{}
	for _, id := range ids {
		gid, _, ok := job.ParseChildID(id)
		if !ok || listed[gid] {
			continue
		}
		listed[gid] = true
		children, err := st.ResultChildren(ctx, gid)
		if err != nil {
			return err
		}
		for _, c := range children {
			present[c] = true
		}
	}
	return nil
}

// readRows reads the rows of the children ids as a listing does (engine.Rows: one
// listing of jobs/ and the listing index), except the derived children whose pods have
// written nothing yet: their batch's unit says where they stand (driver.UnwrittenStatus),
// from the template, the gone markers and the collection records read once per batch.
func readRows(ctx context.Context, e Engine, st *store.Store, storeURL string, ids []string, withStatus bool) ([]engine.Row, error) {
	unwritten := map[string]*engine.Job{}
	if slices.ContainsFunc(ids, func(id string) bool { _, _, ok := job.ParseChildID(id); return ok }) {
		// Derived children, perhaps: which have written nothing yet (engine.Rows lists
		// jobs/ again; a batch without them costs no listing here).
		listed, err := st.ListDirs(ctx, "jobs/")
		if err != nil {
			return nil, err
		}
		present := make(map[string]bool, len(listed))
		for _, id := range listed {
			present[id] = true
		}
		// A child that ended may have nothing under jobs/: its result is in its batch's
		// results/ (store.EnvelopeKey). One listing per batch.
		if err := presentByResult(ctx, st, ids, present); err != nil {
			return nil, err
		}
		unwritten = unwrittenChildren(ctx, e, st, ids, present)
	}
	var rest []string
	var at []int
	out := make([]engine.Row, len(ids))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for i, id := range ids {
		j := unwritten[id]
		if j == nil {
			rest, at = append(rest, id), append(at, i)
			continue
		}
		out[i].Handle = j.Handle
		if withStatus {
			g.Go(func() error {
				state, reason, err := j.Backend.(driver.Driver).UnwrittenStatus(gctx, j.Handle)
				out[i].Listed = engine.Listed{Handle: j.Handle, State: state, Reason: reason}
				if errors.Is(err, job.ErrDamaged) {
					// Nothing will mend it: final, with why, as in a watch; the other
					// children are listed.
					out[i].Listed = engine.Listed{Handle: j.Handle, State: job.NotFound, Reason: err.Error()}
					return nil
				}
				return err
			})
		}
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	rows, err := e.Rows(ctx, storeURL, rest, withStatus)
	if err != nil {
		return nil, err
	}
	for k, r := range rows {
		out[at[k]] = r
	}
	return out, nil
}

// missingTemplate is the error for derived batch gid, whose manifest was read, found
// without its template.json: the template is written before the manifest, so the batch
// is damaged, not absent, unless a cleanup (which removes both in no order) took the
// manifest too a moment later.
func missingTemplate(ctx context.Context, st *store.Store, gid string) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(200 * time.Millisecond):
	}
	if ok, err := st.Exists(ctx, layout.ManifestKey(gid)); err != nil {
		return err
	} else if !ok {
		return fmt.Errorf("no batch %s in the store %s: %w", gid, st.URL(), engine.ErrNotFound)
	}
	return layout.Missing(gid, "template.json", "its manifest says every input's job is made from it, and the manifest is written after it")
}

// readManifest reads a batch's manifest into m and, while submission is still going
// on, adds the children recorded one by one since it was saved (cache holds the entries
// already read, so each is read once).
func readManifest(ctx context.Context, st *store.Store, gid string, m *Manifest, cache map[int]Child) error {
	got, err := layout.ReadManifest(ctx, st, gid)
	if store.IsNotFound(err) {
		if err := layout.MissingManifest(ctx, st, gid); err != nil {
			return err
		}
		return fmt.Errorf("no batch %s in the store %s: %w", gid, st.URL(), engine.ErrNotFound)
	}
	if err != nil {
		return err
	}
	if got.Derived {
		// Every child is made from the template: one that cannot be read leaves the
		// batch with no job to wait for, so say so now rather than wait.
		t, err := template(ctx, st, gid)
		if err != nil {
			return err
		}
		if t == nil {
			return missingTemplate(ctx, st, gid)
		}
	}
	*m = *got
	if m.SubmissionComplete {
		return nil
	}
	if err := layout.MergeChildren(ctx, st, m, cache); err != nil {
		return err
	}
	if m.SubmitterLost(time.Now()) {
		m.MarkLost()
	}
	return nil
}

// Cancel cancels every unfinished child of a batch.
func Cancel(ctx context.Context, e Engine, gid, storeURL string) error {
	v, err := Read(ctx, e, gid, storeURL, true)
	if err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for _, c := range v.Statuses {
		if c.Handle == nil || c.Status.Terminal() {
			continue
		}
		g.Go(func() error {
			j, err := e.Attach(gctx, c.Handle.JobID, v.Store)
			if err != nil {
				return nil
			}
			return j.Cancel(gctx)
		})
	}
	return g.Wait()
}

// Cleanup cleans up the children (backend resources and/or store objects); with
// storeObjs the manifest goes too. Outputs stay.
func Cleanup(ctx context.Context, e Engine, gid, storeURL string, backendRes, storeObjs bool) error {
	v, err := Read(ctx, e, gid, storeURL, false)
	if errors.Is(err, job.ErrDamaged) {
		return cleanupDamaged(ctx, e, gid, storeURL, backendRes, storeObjs)
	}
	if err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for _, c := range v.Children {
		for _, id := range c.Attempts {
			g.Go(func() error {
				j, err := e.Attach(gctx, id, v.Store)
				if err != nil {
					if storeObjs && errors.Is(err, engine.ErrNotFound) {
						return removeNeverAJob(gctx, e, v.Store, id)
					}
					return nil // already gone
				}
				return j.Cleanup(gctx, backendRes, storeObjs)
			})
		}
	}
	if err := g.Wait(); err != nil {
		return err
	}
	if backendRes {
		if err := cleanupGroupUnit(ctx, e, v); err != nil {
			return err
		}
	}
	if storeObjs {
		st, err := e.Store(ctx, v.Store)
		if err != nil {
			return err
		}
		return st.DeletePrefix(ctx, layout.Prefix(gid))
	}
	return nil
}

// removeNeverAJob removes what the store holds of child id that Attach does not find:
// its tombstone (collected before), or the objects a submitter that died between the
// child's spec and its handle (written last) left of a job that never was.
func removeNeverAJob(ctx context.Context, e Engine, storeURL, id string) error {
	if err := e.RemoveTombstone(ctx, id, storeURL); err != nil {
		return err
	}
	st, err := e.Store(ctx, storeURL)
	if err != nil {
		return err
	}
	return st.DeletePrefix(ctx, store.JobPrefix(id))
}

// cleanupGroupUnit removes the unit a driver ran the batch's first attempts in.
func cleanupGroupUnit(ctx context.Context, e Engine, v *View) error {
	d, err := groupDriver(ctx, e, v)
	if d == nil || err != nil {
		return err
	}
	return d.CleanupGroup(ctx, v.GroupID)
}

// Withdraw removes batch gid as Cleanup does, backend and store, unless its unit had
// started (started true: nothing is removed and the batch runs on). It is for a
// submitter that died after recording the batch, before it was told the batch started:
// what it says next depends on which. A batch whose children were submitted one by
// one has no unit: it is removed, and what was submitted of it is cancelled.
func Withdraw(ctx context.Context, e Engine, gid, storeURL string) (started bool, err error) {
	v, err := Read(ctx, e, gid, storeURL, false)
	if err == nil && v.Derived {
		d, err := groupDriver(ctx, e, v)
		if err != nil {
			return false, err
		}
		if w, ok := d.(driver.Withdrawer); ok {
			if started, err := w.WithdrawGroup(ctx, gid); err != nil || started {
				return started, err
			}
		}
	}
	return false, Cleanup(ctx, e, gid, storeURL, true, true)
}

// groupDriver is the driver of batch v's backend (nil if it has none).
func groupDriver(ctx context.Context, e Engine, v *View) (driver.Driver, error) {
	st, err := e.Store(ctx, v.Store)
	if err != nil {
		return nil, err
	}
	ns := ""
	for _, c := range v.Children {
		if c.JobID != "" {
			if j, err := e.Attach(ctx, c.JobID, v.Store); err == nil {
				ns = j.Handle.Namespace
				break
			}
		}
	}
	be, err := e.BackendFor(&job.Handle{Backend: v.Backend, Namespace: ns}, st)
	if err != nil {
		return nil, err
	}
	d, _ := be.(driver.Driver)
	return d, nil
}

// Listed is one batch of List: its manifest (without its children), or, when the
// manifest cannot be read, the group ID alone and why (Error).
type Listed struct {
	Manifest
	// Error says why the batch's manifest cannot be read (a damaged batch); the
	// manifest's other fields are then empty.
	Error string `json:"error,omitempty"`
}

// List returns the batches in the store (their manifests without children), newest
// first; a batch whose manifest is damaged or missing is listed with Error set.
func List(ctx context.Context, e Engine, storeURL string) ([]Listed, error) {
	st, _, err := openStore(ctx, e, storeURL)
	if errors.Is(err, store.ErrNoStore) {
		return nil, nil // a store never written to holds no batches
	}
	if err != nil {
		return nil, err
	}
	ids, err := st.ListDirs(ctx, "groups/")
	if err != nil {
		return nil, err
	}
	out := make([]Listed, len(ids))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for i, id := range ids {
		g.Go(func() error {
			m, err := layout.ReadManifest(gctx, st, id)
			if store.IsNotFound(err) {
				err = layout.MissingManifest(gctx, st, id) // nil: being written, or removed
			}
			switch {
			case err == nil && m != nil:
				m.Children = nil
				out[i] = Listed{Manifest: *m}
				// Its collection records say which children were collected: one that
				// cannot be read fails every read of the batch, so list it as damaged.
				if _, cerr := layout.ReadCollected(gctx, st, id); errors.Is(cerr, job.ErrDamaged) {
					out[i].Error = cerr.Error()
				}
			case errors.Is(err, job.ErrDamaged):
				out[i] = Listed{Manifest: Manifest{GroupID: id}, Error: err.Error()}
			case err != nil && gctx.Err() == nil:
				out[i] = Listed{Manifest: Manifest{GroupID: id}, Error: fmt.Sprintf("batch %s cannot be read: %v", id, err)}
			}
			return nil
		})
	}
	g.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	kept := out[:0]
	for _, l := range out {
		if l.GroupID != "" {
			kept = append(kept, l)
		}
	}
	sort.Slice(kept, func(a, b int) bool { return kept[a].GroupID > kept[b].GroupID })
	return kept, nil
}

// Watch reports each child once, as soon as it is final (or failed to be submitted), in
// completion order, while submission may still be going on. It returns when every input
// is accounted for. Only unfinished children are looked at again, so a large batch
// costs little to watch.
func Watch(ctx context.Context, e Engine, gid, storeURL string, emit func(ChildStatus)) error {
	return WatchWith(ctx, e, gid, storeURL, WatchOptions{}, emit)
}

// minRound is the shortest time between two rounds of a watch woken by its unit.
const minRound = 10 * time.Millisecond

// WatchOptions are Watch's options.
type WatchOptions struct {
	// InlineMax > 0 asks for the results of the children whose ends the batch's unit
	// reports, with values of at most this many bytes (ChildStatus.Result): read while
	// the batch runs, instead of all at its end.
	InlineMax int
	// EndRound, if set, is called after each round's ChildStatus were emitted: a caller
	// that sends them on in one message per round (the server's batched batch_watch).
	EndRound func()
}

// WatchWith is Watch with options.
func WatchWith(ctx context.Context, e Engine, gid, storeURL string, o WatchOptions, emit func(ChildStatus)) error {
	st, storeURL, err := openStore(ctx, e, storeURL)
	if err != nil {
		return err
	}
	w := &watcher{e: e, st: st, gid: gid, storeURL: storeURL, o: o, emit: emit,
		final: map[int]bool{}, jobs: map[int]*engine.Job{}, seen: map[int]Child{}, p: jobview.NewPollerFrom(10 * time.Millisecond)}
	defer w.close()
	for {
		if over, err := w.round(ctx); err != nil || over {
			return err
		}
		if err := w.sleep(ctx); err != nil {
			return err
		}
	}
}

// watcher is one watch of a batch, from round to round: each round rereads the manifest
// when it is due, looks at the batch's unit (one look for every member) and at the
// children one by one (the oldest unfinished first, a few per round), and emits each
// child once, when it is final; then it sleeps until the next round.
type watcher struct {
	e             Engine
	st            *store.Store
	gid, storeURL string
	o             WatchOptions
	emit          func(ChildStatus)

	final map[int]bool        // emitted
	jobs  map[int]*engine.Job // attached, by index (-1: the unit's first member)
	seen  map[int]Child       // the children's entries read so far
	p     *jobview.Poller     // paces the rounds
	// wake: a unit whose driver says when its members end (driver.Waker) wakes the
	// watch then: the last input's result is not left waiting for the next poll.
	wake    driver.GroupWatch
	watched bool // GroupWatch was asked

	m                  Manifest
	lastRead, lastFull time.Time
	roundAt            time.Time
	progressed         bool // this round emitted something
	budget             int  // children still to look at one by one this round
	full               bool // this round looks at every child
}

func (w *watcher) close() {
	if w.wake != nil {
		w.wake.Close()
	}
}

// round is one look at the batch; over once every child was emitted.
func (w *watcher) round(ctx context.Context) (over bool, err error) {
	if err := w.reread(ctx); err != nil {
		return false, err
	}
	// Children finish roughly in submission order: look at the oldest unfinished
	// ones each round, until a few are found still unfinished or one still waiting
	// (the ones after it are most likely waiting too), and at all of them every few
	// seconds.
	w.budget, w.full = 4, false
	if time.Since(w.lastFull) > 3*time.Second {
		w.budget, w.full, w.lastFull = 1<<30, true, time.Now()
	}
	calltrace.Mark("batch.watch.round", w.gid)
	w.roundAt, w.progressed = time.Now(), false
	done, err := w.lookUnit(ctx)
	if err != nil {
		return false, err
	}
	for _, c := range w.m.Children {
		if err := w.lookChild(ctx, c, done); err != nil {
			return false, err
		}
	}
	if w.o.EndRound != nil && w.progressed {
		w.o.EndRound()
	}
	return w.m.SubmissionComplete && len(w.final) >= len(w.m.Children), nil
}

// reread reads the manifest when it is due: it changes at most every half second while
// submitting and the children's entries only grow, so a few times a second, not every
// round.
func (w *watcher) reread(ctx context.Context) error {
	m := &w.m
	due := w.lastRead.IsZero() || (!m.SubmissionComplete && time.Since(w.lastRead) > 200*time.Millisecond) ||
		(m.Retries > 0 && !m.Settled && time.Since(w.lastRead) > 500*time.Millisecond)
	if !due {
		return nil
	}
	w.m = Manifest{}
	if err := readManifest(ctx, w.st, w.gid, &w.m, w.seen); err != nil {
		return err
	}
	w.lastRead = time.Now()
	return nil
}

// end emits cs, final.
func (w *watcher) end(cs ChildStatus) {
	w.final[cs.Index], w.progressed = true, true
	w.emit(cs)
}

// lookUnit looks at the batch's unit, if it runs as one: which of its members ended, in
// one look (O(1) requests per round, not O(inputs)); it emits those and returns them
// (nil when there is no unit to look at).
func (w *watcher) lookUnit(ctx context.Context) (map[int]bool, error) {
	done := groupDone(ctx, w.e, &w.m, w.storeURL, w.jobs)
	if j := w.jobs[-1]; j != nil && !w.watched {
		w.watched = true
		if wk, ok := j.Backend.(driver.Waker); ok {
			w.wake = wk.GroupWatch(w.gid)
		}
	}
	if done == nil {
		return nil, nil
	}
	ended, err := lookEnded(ctx, w.e, w.st, &w.m, w.storeURL, done, w.final, w.o)
	if err != nil {
		return nil, err
	}
	calltrace.Mark("batch.watch.ended", strconv.Itoa(len(ended)))
	for _, cs := range ended {
		w.end(cs)
	}
	calltrace.Mark("batch.watch.emitted", "")
	return done, nil
}

// lookChild looks at child c on its own, while the round's budget lasts, and emits it
// once it is final.
func (w *watcher) lookChild(ctx context.Context, c Child, done map[int]bool) error {
	switch {
	case w.final[c.Index]:
		return nil
	case done != nil && firstDerived(&w.m, c):
		return nil // its unit's member still runs (or waits); lookUnit takes it when it ends
	case c.JobID == "":
		if c.SubmissionError != "" {
			w.end(ChildStatus{Index: c.Index, Error: c.SubmissionError})
		}
		return nil
	case w.budget <= 0:
		return nil
	}
	j := w.attach(ctx, c)
	if j == nil {
		return nil
	}
	state, reason, err := j.Status(ctx)
	if errors.Is(err, job.ErrDamaged) {
		w.end(ChildStatus{Index: c.Index, JobID: c.JobID, Handle: j.Handle, Status: job.NotFound, Reason: err.Error()})
		return nil
	}
	if err != nil {
		return err
	}
	if !state.Terminal() {
		if w.budget--; state == job.Pending && !w.full {
			w.budget = 0
		}
		return nil
	}
	if state == job.Failed && retriesLeft(&w.m, c) {
		return nil // a retry may still come: the submitter decides
	}
	w.end(ChildStatus{Index: c.Index, Handle: j.Handle, Status: state, Reason: reason})
	return nil
}

// attach is child c's current attempt (a new attempt replaces the old), nil when it
// cannot be attached: then it is emitted if that is final (collected, damaged,
// removed), else looked at next round (written a moment ago).
func (w *watcher) attach(ctx context.Context, c Child) *engine.Job {
	if j := w.jobs[c.Index]; j != nil && j.Handle.JobID == c.JobID {
		return j
	}
	j, err := w.e.Attach(ctx, c.JobID, w.storeURL)
	if err == nil {
		w.jobs[c.Index] = j
		return j
	}
	var gone *engine.CleanedUpError
	if errors.As(err, &gone) { // collected and cleaned up: final
		t := gone.Tombstone.CleanedAt
		w.end(ChildStatus{Index: c.Index, Status: job.NotFound, CollectedAt: &t})
	}
	if errors.Is(err, job.ErrDamaged) {
		// Nothing will mend it: final, with why (its result says so too).
		w.end(ChildStatus{Index: c.Index, JobID: c.JobID, Status: job.NotFound, Reason: err.Error()})
	} else if cs, ok := removedChild(ctx, w.st, &w.m, c, err); ok {
		w.end(cs)
	}
	return nil
}

// sleep waits for the next round: soon after one that found children finished (but not
// at once: a look finds more of them per status read), woken by the unit as members
// end where it can (but a round at most every minRound: each looks at every member that
// ended since the last).
func (w *watcher) sleep(ctx context.Context) error {
	if w.progressed {
		w.p = jobview.NewPollerFrom(20 * time.Millisecond)
	}
	if w.wake == nil {
		return w.p.Wait(ctx)
	}
	if d := time.Until(w.roundAt.Add(minRound)); d > 0 {
		if err := jobview.NewPollerFrom(d).Wait(ctx); err != nil {
			return err
		}
	}
	return w.p.WaitWatched(ctx, w.wake)
}
