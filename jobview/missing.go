package jobview

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
)

// writtenAfterHandle are the objects of a job that only exist once its handle.json was
// written (the engine writes the handle last; the backend, the runner and cancel write
// these later): a job that has one of them and no handle lost its handle.
var writtenAfterHandle = []string{"status.json", "result.json", "result.pkl", "debug.json", "logs/", "hosts/"}

// MissingHandle returns a damaged-job error (job.Missing) when job id has no
// handle.json but objects written after it, nil otherwise (never written, being
// submitted, or removed). A cleanup removing the job at this moment deletes its objects
// in no particular order, so the job's objects are looked at again a moment later
// before it is called damaged.
func MissingHandle(ctx context.Context, st *store.Store, id string) error {
	later := func() (string, error) {
		objs, err := st.List(ctx, store.JobPrefix(id))
		if err != nil {
			return "", err
		}
		for _, o := range objs {
			name := strings.TrimPrefix(o.Key, store.JobPrefix(id))
			if name == "handle.json" {
				return "", nil // written meanwhile
			}
			for _, w := range writtenAfterHandle {
				if name == w || (strings.HasSuffix(w, "/") && strings.HasPrefix(name, w)) {
					return strings.TrimSuffix(w, "/"), nil
				}
			}
		}
		return "", nil
	}
	found, err := later()
	if err != nil || found == "" {
		return err
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(200 * time.Millisecond):
	}
	if found, err = later(); err != nil || found == "" {
		return err
	}
	return job.Missing(id, "handle.json", "its "+found+" is there, and that is written after it")
}

// IncompleteReason is why a job prefix without handle.json is listed as an error.
func IncompleteReason(id string) string {
	return fmt.Sprintf("job %s has objects in the store but no handle.json: a submission that stopped half-way, or output written after the job was cleaned up; `kinetic jobs cleanup %s` removes them", id, id)
}

// RemoveUnreadable deletes the store objects of job id unless its handle.json reads:
// those of a job that cannot be attached. It reports whether it removed anything.
func RemoveUnreadable(ctx context.Context, st *store.Store, id string) (bool, error) {
	objs, err := st.List(ctx, store.JobPrefix(id))
	if err != nil || len(objs) == 0 {
		return false, err
	}
	if raw, err := st.Get(ctx, store.HandleKey(id)); err == nil {
		if _, err := job.DecodeHandle(raw); err == nil {
			return false, nil // readable: clean it up the ordinary way
		}
	}
	return true, st.DeleteJob(ctx, id)
}

// MissingEnvelope returns a damaged-job error (job.Missing) when job id has a result.pkl
// but no result.json, which is written after it (nil otherwise): for a job whose backend
// knows nothing more of it (a batch child whose batch's state is gone), which would
// otherwise read as cleaned up.
//
// For a batch child whose envelope would be a line of its batch's envelope logs (a local
// batch in a file store), a damaged log is named instead: the envelope was likely in it.
func MissingEnvelope(ctx context.Context, st *store.Store, id string) error {
	if ok, err := st.Exists(ctx, store.EnvelopeKey(id)); err != nil || ok {
		return err
	}
	if ok, err := st.Exists(ctx, store.ResultKey(id)); err != nil {
		return err
	} else if ok {
		return job.Missing(id, store.ObjectName(id, store.EnvelopeKey(id)), "its "+store.ObjectName(id, store.ResultKey(id))+" is there, and that is written just before it")
	}
	if gid, i, ok := job.ParseChildID(id); ok {
		damage, err := st.EndsDamage(gid, i)
		if err != nil {
			return err
		}
		if damage != "" {
			return job.DamagedError(fmt.Sprintf("job %s (input %d of batch %s) is damaged: its result envelope is in none of its batch's envelope logs, and %s: it was likely there, and is lost (the inputs whose envelopes can still be read keep them); `kinetic batch cleanup %s` removes the batch", id, i, gid, damage, gid))
		}
	}
	return nil
}
