// Package storefill writes many finished jobs into a store the way the engine and the
// local backend write them (handle, result envelope, final status), for benchmarks and
// tests of listings at scale: the listing then depends on no live process.
package storefill

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/kinetic-run/kinetic/batch/layout"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
)

// Jobs writes n final jobs to st, created one second apart ending now: every tenth
// failed (a ValueError in the call), the rest succeeded. It returns their IDs in order.
// Jobs are written 16 at a time (a remote store's round trips dominate).
func Jobs(ctx context.Context, st *store.Store, n int) ([]string, error) {
	return jobs(ctx, st, n, "")
}

// Batch writes a finished batch of n inputs (the children as Jobs writes them, and a
// complete manifest) and returns its group ID.
func Batch(ctx context.Context, st *store.Store, n int) (string, error) {
	gid := job.NewGroupID()
	ids, err := jobs(ctx, st, n, gid)
	if err != nil {
		return "", err
	}
	m := layout.Manifest{GroupID: gid, FuncName: "train", Accelerator: "cpu", Backend: "local", Store: st.URL(),
		CreatedAt: time.Now().UTC().Format(time.RFC3339Nano), TotalExpected: n, SubmissionComplete: true, Settled: true, Tags: map[string]string{}}
	for i, id := range ids {
		m.Children = append(m.Children, layout.Child{Index: i, JobID: id, Attempts: []string{id}})
	}
	b, err := json.Marshal(&m)
	if err != nil {
		return "", err
	}
	return gid, st.Put(ctx, layout.ManifestKey(gid), b)
}

func jobs(ctx context.Context, st *store.Store, n int, gid string) ([]string, error) {
	base := time.Now().Add(-time.Duration(n) * time.Second)
	ids := make([]string, n)
	for i := range ids {
		ids[i] = job.NewID() // created now: the IDs sort as written
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for i, id := range ids {
		g.Go(func() error { return write(gctx, st, id, gid, i, base.Add(time.Duration(i)*time.Second)) })
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return ids, nil
}

// write puts job id's objects in the order of the engine and the runner: the handle
// makes the job exist.
func write(ctx context.Context, st *store.Store, id, gid string, i int, created time.Time) error {
	h := &job.Handle{JobID: id, Backend: "local", Accelerator: "cpu", FuncName: "train", DisplayName: fmt.Sprintf("train-%d", i),
		CreatedAt: created.UTC().Format(time.RFC3339Nano), SubmittedAt: created.Add(50 * time.Millisecond).UTC().Format(time.RFC3339Nano), Store: st.URL()}
	if gid != "" {
		h.GroupID, h.GroupIndex = gid, strconv.Itoa(i)
	}
	env := &job.Envelope{Success: i%10 != 0, Host: "0", StartedAt: created.Add(200 * time.Millisecond), CalledAt: created.Add(400 * time.Millisecond), FinishedAt: created.Add(900 * time.Millisecond)}
	s := &job.Status{State: job.Succeeded, UpdatedAt: env.FinishedAt}
	if !env.Success {
		env.Phase, env.ExcType, env.ExcMessage = job.PhaseCall, "builtins.ValueError", "bad input"
		s.State, s.Reason = job.Failed, env.FailureReason()
	}
	sb, err := json.Marshal(s)
	if err != nil {
		return err
	}
	// The order of the engine and the runner: the handle makes the job exist.
	for _, kv := range []struct {
		key string
		b   []byte
	}{{store.HandleKey(id), h.Encode()}, {store.EnvelopeKey(id), env.Encode()}, {store.StatusKey(id), sb}} {
		if err := st.Put(ctx, kv.key, kv.b); err != nil {
			return err
		}
	}
	return nil
}
