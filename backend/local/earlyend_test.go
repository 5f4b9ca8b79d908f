package local_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kinetic-run/kinetic/backend/local"
	"github.com/kinetic-run/kinetic/internal/filelock"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
)

// TestEnvelopeEndsARunningJob: a job whose runner stored an envelope that says it
// succeeded has ended, though its supervisor has not written the final status yet (a
// waiter, a sync call, takes its value then); one whose envelope says it failed waits
// for that status. A cleanup of the ended job waits for the supervisor to finish with it,
// so the status it writes last is not left behind in the store.
func TestEnvelopeEndsARunningJob(t *testing.T) {
	ctx := context.Background()
	state := t.TempDir()
	b, st := newLocalIn(t, state, 1, false)
	j := submit(t, b, st, "sh", "-c", "echo done")
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if s, reason, err := j.Wait(wctx, nil); err != nil || s != job.Succeeded {
		t.Fatalf("job: %s (%s) %v", s, reason, err)
	}
	id := j.Handle.JobID
	// Its supervisor's final status follows the envelope that ended the wait.
	var final *job.Status
	var err error
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		final, err = local.ReadStatus(ctx, st, id)
		if err == nil && final.State == job.Succeeded && final.Local != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("final status %+v, %v; want SUCCEEDED written by its supervisor", final, err)
		}
	}
	envRaw, err := st.Get(ctx, store.EnvelopeKey(id))
	if err != nil {
		t.Fatal(err)
	}
	// Back to the moment after the runner's envelope and before the final status: the
	// supervisor still holds the job's lock (this test holds it now) and its status
	// says RUNNING.
	lockPath := filepath.Join(state, "jobs", id, "supervisor.lock")
	lock, err := filelock.Open(lockPath, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	lctx, lcancel := context.WithTimeout(ctx, 10*time.Second)
	defer lcancel()
	if err := filelock.WaitContext(lctx, lock, filelock.Exclusive, nil); err != nil { // the supervisor lets go of it
		t.Fatal(err)
	}
	running := *final
	running.State, running.UpdatedAt = job.Running, time.Time{}
	running.Local.LockPath = lockPath
	if err := local.WriteStatus(ctx, st, id, &running); err != nil {
		t.Fatal(err)
	}
	if s, reason, err := j.Status(ctx); err != nil || s != job.Succeeded {
		t.Errorf("RUNNING with a successful envelope: %s (%s) %v, want SUCCEEDED", s, reason, err)
	}

	failed := &job.Envelope{Success: false, Phase: job.PhaseCall, ExcType: "ValueError", ExcMessage: "no"}
	if err := st.Put(ctx, store.EnvelopeKey(id), failed.Encode()); err != nil {
		t.Fatal(err)
	}
	if s, reason, err := j.Status(ctx); err != nil || s != job.Running {
		t.Errorf("RUNNING with a failed envelope: %s (%s) %v, want RUNNING until the supervisor says how it failed", s, reason, err)
	}
	if err := st.Put(ctx, store.EnvelopeKey(id), envRaw); err != nil {
		t.Fatal(err)
	}

	// The value was taken; the cleanup waits for the supervisor, which writes its
	// final status and lets go of the job.
	cleaned := make(chan error, 1)
	go func() { cleaned <- j.CleanupCollected(ctx) }()
	select {
	case err := <-cleaned:
		t.Fatalf("cleanup ended (%v) while the job's supervisor still held it", err)
	case <-time.After(300 * time.Millisecond):
	}
	if err := local.WriteStatus(ctx, st, id, final); err != nil {
		t.Fatal(err)
	}
	lock.Close()
	select {
	case err := <-cleaned:
		if err != nil {
			t.Fatalf("cleanup: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("cleanup still waiting 10s after the supervisor let go")
	}
	if left, _ := st.List(ctx, store.JobPrefix(id)); len(left) > 0 {
		t.Errorf("left in the store after the cleanup: %v", left)
	}
	if _, err := os.Stat(filepath.Join(state, "jobs", id)); !os.IsNotExist(err) {
		t.Errorf("workspace still there after the cleanup: %v", err)
	}
}
