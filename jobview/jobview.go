// Package jobview is a job seen from the store alone: its status as the store records it
// (status.json, the result envelope), waiting for it, its logs (the chunks the runner
// mirrors, followed while it runs), their tail, and its result (the envelope and the
// value). It needs no backend, so the worker side (runner, cmd/kinetic-runner) and the
// conformance suite (backend/backendtest) use it without the engine; the engine composes
// it with a backend (liveness, logs at the source, cancel, cleanup).
package jobview

import (
	"context"
	"path"
	"path/filepath"
	"time"

	"github.com/kinetic-run/kinetic/errs"
	"github.com/kinetic-run/kinetic/internal/dirwatch"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
)

// ErrNotFound means a job ID names no job in the store (errs.NotFound).
var ErrNotFound = errs.New(errs.NotFound, "job not found")

// StatusFunc reports a job's state and, when FAILED, the reason.
type StatusFunc func(ctx context.Context) (job.State, string, error)

// Job is one job in a store.
type Job struct {
	Store *store.Store
	ID    string
	// Live, if set, is where the job's state comes from instead of the store's record:
	// the backend that runs it (its liveness check turns a worker that died without a
	// word into FAILED). nil reads the store alone (Recorded).
	Live StatusFunc
}

// New returns job id of st, its state read from the store alone.
func New(st *store.Store, id string) *Job { return &Job{Store: st, ID: id} }

// Status returns the job's state and, when FAILED, the reason: from Live if set, else
// as the store records it.
func (j *Job) Status(ctx context.Context) (job.State, string, error) {
	if j.Live != nil {
		return j.Live(ctx)
	}
	state, reason, _, err := Recorded(ctx, j.Store, j.ID)
	return state, reason, err
}

// Wait blocks until the job is terminal and returns its final state and reason.
// onChange, if set, is called with every state first seen, the final one included.
func (j *Job) Wait(ctx context.Context, onChange func(job.State)) (job.State, string, error) {
	var last job.State
	p := NewPoller()
	// On a file:// store, a new object of the job (its status, its envelope) ends a
	// wait at once; the polls remain for what writes nothing (a worker that died).
	// The watch is made only for a job found still running (most reads are of ended
	// jobs: a batch's results), and the state is read again once it watches.
	var wake *dirwatch.Watcher
	dir := j.Store.LocalDir()
	defer func() {
		if wake != nil {
			wake.Close()
		}
	}()
	for {
		state, reason, err := j.Status(ctx)
		if err != nil {
			return "", "", err
		}
		if state != last && onChange != nil {
			onChange(state)
		}
		last = state
		if state.Terminal() {
			return state, reason, nil
		}
		if wake == nil && dir != "" {
			// Woken by what says the job ended (Recorded), not by every object written
			// beside it: temporary files, its value, or a sibling's end.
			watched, names := store.JobPrefix(j.ID), []string{store.StatusName, path.Base(store.EnvelopeKey(j.ID))}
			if gid, _, ok := job.ParseChildID(j.ID); ok {
				watched, names = store.GroupResultsPrefix(gid), names[1:] // where its end is written
				// A batch whose workers log its envelopes (store.OpenEndsLog) has ends/
				// from its start: woken by each line added there.
				if ends := filepath.Join(dir, filepath.FromSlash(store.GroupEndsPrefix(gid))); dirwatch.Exists(ends) {
					wake = dirwatch.NewWrites(ends)
					continue
				}
			}
			wake = dirwatch.NewFor(filepath.Join(dir, filepath.FromSlash(watched)), names...)
			continue
		}
		if err := p.wait(ctx, wake); err != nil {
			return state, reason, err
		}
	}
}

// Delete removes the job's store objects (jobs/ID/). Outputs are never removed. A job
// that still runs must be stopped first (its backend's Cleanup), or its process is
// stranded.
func (j *Job) Delete(ctx context.Context) error {
	if gid, i, ok := job.ParseChildID(j.ID); ok {
		// A derived batch child is not made again once removed: its gone marker (what
		// store/layout.MarkGone writes; written here so that the engine, which reads
		// jobs through this package, links nothing of batch).
		if t, err := j.Store.Exists(ctx, store.GroupTemplateKey(gid)); err != nil {
			return err
		} else if t {
			if err := j.Store.Put(ctx, store.GroupGoneKey(gid, i), []byte(time.Now().UTC().Format(time.RFC3339Nano))); err != nil {
				return err
			}
		}
	}
	return j.Store.DeleteJob(ctx, j.ID)
}

// Derived reports whether id is a derived batch child (batch/layout) that exists
// without its own objects yet: its batch has a template and it was not removed.
func Derived(ctx context.Context, st *store.Store, id string) (bool, error) {
	gid, i, ok := job.ParseChildID(id)
	if !ok {
		return false, nil
	}
	if t, err := st.Exists(ctx, store.GroupTemplateKey(gid)); err != nil || !t {
		return false, err
	}
	gone, err := st.Exists(ctx, store.GroupGoneKey(gid, i)) // layout.Gone
	return !gone, err
}

// Recorded returns the job's state as the store records it. A final status.json (written
// by cancel, or by an earlier verdict) decides first, then the runner's envelope, then a
// missing handle (NOT_FOUND: never written, or cleaned up); final is then true.
// Otherwise the store knows of no end: state is what status.json says (PENDING without
// one) and final is false, for a backend to judge further.
func Recorded(ctx context.Context, st *store.Store, id string) (state job.State, reason string, final bool, err error) {
	state = job.Pending
	raw, err := st.Get(ctx, store.StatusKey(id))
	if err == nil {
		s, err := job.DecodeStatus(id, raw)
		if err != nil {
			return "", "", false, err
		}
		if s.State.Terminal() {
			return s.State, s.Reason, true, nil
		}
		state = s.State
	} else if !store.IsNotFound(err) {
		return "", "", false, err
	}
	raw, err = st.Get(ctx, store.EnvelopeKey(id))
	if store.IsNotFound(err) {
		if ok, err := st.Exists(ctx, store.HandleKey(id)); err != nil {
			return "", "", false, err
		} else if !ok {
			if ok, err := Derived(ctx, st, id); err != nil || ok {
				return state, "", false, err // its pod has not written it yet
			}
			return job.NotFound, "", true, nil
		}
		return state, "", false, nil
	}
	if err != nil {
		return "", "", false, err
	}
	env, err := job.DecodeEnvelope(raw)
	if err != nil || len(raw) == 0 {
		// How it ended cannot be told: damaged, as a status.json that cannot be read.
		return "", "", false, job.Damaged(id, store.ObjectName(id, store.EnvelopeKey(id)), raw, err)
	}
	state, reason = EnvelopeState(env)
	return state, reason, true, nil
}

// EnvelopeState is how a job whose envelope is env ended, by the envelope alone.
func EnvelopeState(env *job.Envelope) (job.State, string) {
	if env.Success {
		return job.Succeeded, ""
	}
	return job.Failed, env.FailureReason()
}

// FinishedAt is when job id ended in state (final): its status.json's time, or for a
// job with none (a batch input run by an executor) its envelope's; zero if neither says.
func FinishedAt(ctx context.Context, st *store.Store, id string, state job.State) time.Time {
	if s, err := ReadStatus(ctx, st, id); err == nil && s.State == state {
		return s.UpdatedAt
	}
	if raw, err := st.Get(ctx, store.EnvelopeKey(id)); err == nil {
		if env, err := job.DecodeEnvelope(raw); err == nil {
			return env.FinishedAt
		}
	}
	return time.Time{}
}

// ReadStatus reads status.json.
func ReadStatus(ctx context.Context, st *store.Store, id string) (*job.Status, error) {
	b, err := st.Get(ctx, store.StatusKey(id))
	if err != nil {
		return nil, err
	}
	return job.DecodeStatus(id, b)
}

// FinalStatus returns the job's status.json when it holds a final state (nil otherwise,
// or when it cannot be read): a job cancelled or judged before, or while, it ran.
func FinalStatus(ctx context.Context, st *store.Store, id string) *job.Status {
	s, err := ReadStatus(ctx, st, id)
	if err != nil || !s.State.Terminal() {
		return nil
	}
	return s
}
