package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"sort"
	"strings"
	"time"

	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/engine/listindex"
	"github.com/kinetic-run/kinetic/errs"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/jobview"
	"github.com/kinetic-run/kinetic/store"
)

// CleanedUpError is what becomes of a job whose result was collected and which was then
// cleaned up (result(cleanup=True), the default): its tombstone says when. It is an
// ErrNotFound (the API's status() of such a job is NOT_FOUND), with a message that says
// what happened instead of "no job".
type CleanedUpError struct {
	Tombstone *job.Tombstone
	// What is what was asked for ("logs", "result"), "" for the job itself.
	What string
}

func (e *CleanedUpError) Error() string {
	t := e.Tombstone
	if e.What != "" {
		return fmt.Sprintf("the %s of job %s were removed by cleanup: it succeeded and its result was %s, then cleaned up (result(cleanup=False) or `kinetic jobs result --no-cleanup` keeps a job's objects)", e.What, t.JobID, t.CollectedBySummary())
	}
	return fmt.Sprintf("job %s %s: its logs and result were removed by cleanup (result(cleanup=False) keeps them)", t.JobID, t.Summary())
}

func (e *CleanedUpError) Is(target error) bool { return target == ErrNotFound }

// Code is errs.NotFound, as ErrNotFound's.
func (e *CleanedUpError) Code() errs.Code { return errs.NotFound }

// Tombstone returns the tombstone of job id in storeURL ("" = the configured store),
// nil if it has none.
func (e *Engine) Tombstone(ctx context.Context, id, storeURL string) (*job.Tombstone, error) {
	st, err := e.storeOrDefault(ctx, storeURL)
	if err != nil {
		return nil, err
	}
	return readTombstone(ctx, st, e.unwritten, id)
}

func readTombstone(ctx context.Context, st *store.Store, u Unwritten, id string) (*job.Tombstone, error) {
	raw, err := st.Get(ctx, store.TombstoneKey(id))
	if store.IsNotFound(err) {
		if u == nil {
			return nil, nil
		}
		return u.Tombstone(ctx, st, id)
	}
	if err != nil {
		return nil, err
	}
	return job.DecodeTombstone(id, raw)
}

// RemoveTombstone deletes the tombstone of job id (an explicit cleanup or prune).
func (e *Engine) RemoveTombstone(ctx context.Context, id, storeURL string) error {
	st, err := e.storeOrDefault(ctx, storeURL)
	if err != nil {
		return err
	}
	return st.Delete(ctx, store.TombstoneKey(id))
}

// Tombstones returns every tombstone in storeURL ("" = the configured store), newest
// job first. A tombstone that cannot be read is skipped: it stands for a job already
// gone.
func (e *Engine) Tombstones(ctx context.Context, storeURL string) ([]*job.Tombstone, error) {
	_, ts, err := e.listing(ctx, e.cfg, storeURL, false, true)
	return ts, err
}

// listTombstones lists tombstones/ (listindex.Tombstones, the index's entries where they
// stand) and makes a row for each damaged one (ListError, naming it: listing (jobs list)
// shows it).
func listTombstones(ctx context.Context, st *store.Store, idx *listindex.Index) ([]*job.Tombstone, map[string]*job.Tombstone, map[string]int64, []Listed, error) {
	read := func(ctx context.Context, id string) (*job.Tombstone, error) { return readTombstone(ctx, st, nil, id) }
	ts, index, sizes, bad, err := listindex.Tombstones(ctx, st, idx, read)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	var damaged []Listed
	for id, err := range bad {
		damaged = append(damaged, Listed{Handle: &job.Handle{JobID: id}, State: ListError, Reason: err.Error()})
	}
	sort.Slice(damaged, func(a, b int) bool { return damaged[a].Handle.JobID > damaged[b].Handle.JobID })
	return ts, index, sizes, damaged, nil
}

func (e *Engine) storeOrDefault(ctx context.Context, storeURL string) (*store.Store, error) {
	if storeURL == "" {
		storeURL = e.cfg.Get(config.Store)
	}
	return e.Store(ctx, storeURL)
}

// MarkCollected claims the collection of the job's result for the process by names:
// it writes the job's tombstone, only if there is none yet. Call it once the collector
// holds the value (it acknowledged it), and before anything of the job is deleted, so
// that anything read next (logs(), `jobs status`) finds it. Of concurrent collectors
// exactly one claims it (mine); the others get the winner's tombstone, to say who
// collected the result and when.
func (j *Job) MarkCollected(ctx context.Context, by string) (t *job.Tombstone, mine bool, err error) {
	finished := time.Now()
	if s, err := jobview.ReadStatus(ctx, j.Store, j.Handle.JobID); err == nil && s.State.Terminal() && !s.UpdatedAt.IsZero() {
		finished = s.UpdatedAt
	}
	t = job.NewTombstone(j.Handle, finished, time.Now())
	t.CollectedBy = by
	err = j.Store.Create(ctx, store.TombstoneKey(j.Handle.JobID), t.Encode())
	if errors.Is(err, store.ErrExists) {
		won, rerr := readTombstone(ctx, j.Store, j.Unwritten, j.Handle.JobID)
		if rerr != nil || won == nil {
			return nil, false, fmt.Errorf("record that job %s was collected: another collector did, and its record cannot be read: %w", j.Handle.JobID, rerr)
		}
		return won, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("record that job %s was collected: %w", j.Handle.JobID, err)
	}
	return t, true, nil
}

// Collected returns the job's tombstone if its result was collected (it is then being
// cleaned up, or the caller attached just before), nil otherwise.
func (j *Job) Collected(ctx context.Context) (*job.Tombstone, error) {
	return readTombstone(ctx, j.Store, j.Unwritten, j.Handle.JobID)
}

// CleanupCollected removes a collected job's backend resources and store objects and
// keeps its tombstone (MarkCollected).
func (j *Job) CleanupCollected(ctx context.Context) error {
	if err := backend.CleanupEnded(ctx, j.Backend, j.Handle); err != nil { // it has ended
		return err
	}
	if _, _, ok := job.ParseChildID(j.Handle.JobID); ok {
		// A batch child made from its batch's template (Unwritten): its batch's
		// collection record is its tombstone and keeps it from being made again.
		return j.Store.DeleteJob(ctx, j.Handle.JobID)
	}
	return j.view().Delete(ctx)
}

// cleanedUp turns a read of the job's objects into a CleanedUpError when the job was
// collected meanwhile: the tombstone is written before any object is deleted, so a read
// that ends with no tombstone in the store read whole objects, and one that ends with a
// tombstone may not have.
func (j *Job) cleanedUp(ctx context.Context, what string, err error) error {
	t, terr := readTombstone(ctx, j.Store, j.Unwritten, j.Handle.JobID)
	if terr != nil || t == nil {
		return err
	}
	return &CleanedUpError{Tombstone: t, What: what}
}

// logsChecked is Logs into w, whole or not at all: buffered, and checked against a
// cleanup that ran meanwhile.
func (j *Job) logsChecked(ctx context.Context, w io.Writer) error {
	var b strings.Builder
	if err := j.cleanedUp(ctx, "logs", j.view().Logs(ctx, &b, false)); err != nil {
		return err
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// FinishedAt returns when job id reached its final state as status.json records it
// (zero if it has not, or the record cannot be read): the end of a listing's DURATION.
func (e *Engine) FinishedAt(ctx context.Context, id, storeURL string) time.Time {
	st, err := e.storeOrDefault(ctx, storeURL)
	if err != nil {
		return time.Time{}
	}
	s, err := jobview.ReadStatus(ctx, st, id)
	if err != nil || !s.State.Terminal() {
		return time.Time{}
	}
	return s.UpdatedAt
}

// ProcessName names this process for a collection record: "pid 4242 on host-a (alice)".
func ProcessName() string {
	host, _ := os.Hostname()
	name := fmt.Sprintf("pid %d on %s", os.Getpid(), orUnknown(host))
	if u, err := user.Current(); err == nil && u.Username != "" {
		name += " (" + u.Username + ")"
	}
	return name
}

func orUnknown(s string) string {
	if s == "" {
		return "an unknown host"
	}
	return s
}
