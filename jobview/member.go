package jobview

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
)

// ErrNotSubmitted means a batch index was never submitted (the batch was stopped).
var ErrNotSubmitted = errors.New("batch input not submitted")

// The parts of a batch's layout a member reads (the submitter writes them: engine's
// Manifest and Child).
type (
	memberChild struct {
		JobID    string   `json:"job_id,omitempty"`
		Attempts []string `json:"attempts,omitempty"`
	}
	memberManifest struct {
		SubmissionComplete bool   `json:"submission_complete"`
		Stopped            string `json:"stopped,omitempty"`
	}
)

// childKey is where the submitter writes child i's entry before its job.
func childKey(gid string, i int) string { return fmt.Sprintf("groups/%s/children/%08d.json", gid, i) }

// ResolveMember finds the job that index i of batch gid runs as its first attempt: what
// a member of a backend's group unit (a pod of an Indexed Job) runs. Members may start
// before the submitter has written their child, so it waits, up to wait, for the
// child's entry and then its handle. If the batch finished submitting without the index
// (fail_fast, cancel), it returns ErrNotSubmitted.
func ResolveMember(ctx context.Context, st *store.Store, gid string, i int, wait time.Duration) (string, error) {
	deadline := time.Now().Add(wait)
	delay := 100 * time.Millisecond
	for {
		id, err := memberJob(ctx, st, gid, i)
		if id != "" || (err != nil && !store.IsNotFound(err)) {
			return id, err
		}
		var m memberManifest
		if raw, err := st.Get(ctx, store.GroupManifestKey(gid)); err == nil && json.Unmarshal(raw, &m) == nil && m.SubmissionComplete {
			if id, _ := memberJob(ctx, st, gid, i); id != "" {
				return id, nil
			}
			return "", fmt.Errorf("batch %s input %d: %w (stopped: %s)", gid, i, ErrNotSubmitted, m.Stopped)
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("batch %s input %d: not written to the store within %s: its submitter stopped before reaching it", gid, i, wait)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(delay):
		}
		delay = min(delay*2, 2*time.Second)
	}
}

// memberJob returns the first attempt of child i once its handle exists ("" before).
func memberJob(ctx context.Context, st *store.Store, gid string, i int) (string, error) {
	raw, err := st.Get(ctx, childKey(gid, i))
	if err != nil {
		return "", err
	}
	var c memberChild
	if err := json.Unmarshal(raw, &c); err != nil {
		return "", fmt.Errorf("batch %s child %d: %w", gid, i, err)
	}
	id := c.JobID
	if len(c.Attempts) > 0 {
		id = c.Attempts[0]
	}
	if id == "" || !job.ValidName(id) {
		return "", nil
	}
	if _, err := st.Get(ctx, store.HandleKey(id)); err != nil {
		if store.IsNotFound(err) {
			return "", nil
		}
		return "", err
	}
	return id, nil
}
