// Package backendtest is the conformance suite every backend passes: the same jobs, the
// same statuses, the same guarantees (a job whose worker dies reports FAILED with a
// reason, cancel stops it, cleanup is idempotent, unknown jobs are NOT_FOUND).
package backendtest

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/jobview"
	"github.com/kinetic-run/kinetic/store"
)

// Harness is what a backend's test provides.
type Harness struct {
	// New returns a backend and the store it uses, fresh for each subtest.
	New func(t *testing.T) (backend.Backend, *store.Store)
	// KillWorker kills whatever runs the job (the supervisor, the pod) without letting it
	// report. The job must then become FAILED with a reason within Deadline.
	KillWorker func(t *testing.T, b backend.Backend, st *store.Store, h *job.Handle)
	// Deadline bounds every wait (default 60 s).
	Deadline time.Duration
}

// Job is a submitted job as the suite sees it: from the store (jobview), its state from
// the backend, stopped and cleaned up by the backend.
type Job struct {
	*jobview.Job
	Handle  *job.Handle
	Backend backend.Backend
}

// NewJob returns job h of backend b, whose store is st.
func NewJob(h *job.Handle, st *store.Store, b backend.Backend) *Job {
	return &Job{
		Job:     &jobview.Job{Store: st, ID: h.JobID, Live: func(ctx context.Context) (job.State, string, error) { return b.Status(ctx, h) }},
		Handle:  h,
		Backend: b,
	}
}

// Cancel stops the job.
func (j *Job) Cancel(ctx context.Context) error { return j.Backend.Cancel(ctx, j.Handle) }

// Cleanup removes the backend's resources (backendRes) and the job's store objects
// (storeObjs), as the engine does.
func (j *Job) Cleanup(ctx context.Context, backendRes, storeObjs bool) error {
	if backendRes || storeObjs {
		if err := j.Backend.Cleanup(ctx, j.Handle); err != nil {
			return err
		}
	}
	if storeObjs {
		return j.Delete(ctx)
	}
	return nil
}

// Submit writes a command job to st and submits it to b.
func Submit(t *testing.T, b backend.Backend, st *store.Store, argv ...string) *Job {
	t.Helper()
	ctx := context.Background()
	id := job.NewID()
	spec := &job.Spec{Version: job.SpecVersion, JobID: id, Kind: job.KindCommand, Command: argv}
	h := &job.Handle{JobID: id, Backend: b.Name(), K8sName: id, Accelerator: "cpu", FuncName: argv[0], DisplayName: argv[0], Store: st.URL(), CreatedAt: time.Now().UTC().Format(time.RFC3339)}
	if err := st.Put(ctx, store.SpecKey(id), spec.Encode()); err != nil {
		t.Fatal(err)
	}
	if err := st.Put(ctx, store.HandleKey(id), h.Encode()); err != nil {
		t.Fatal(err)
	}
	if err := b.Submit(ctx, h); err != nil {
		t.Fatalf("Submit: %v", err)
	}
	return NewJob(h, st, b)
}

func (h *Harness) wait(t *testing.T, j *Job) (job.State, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), h.deadline())
	defer cancel()
	state, reason, err := j.Wait(ctx, nil)
	if err != nil {
		t.Fatalf("Wait %s: %v (last state %s)", j.Handle.JobID, err, state)
	}
	return state, reason
}

func (h *Harness) deadline() time.Duration {
	if h.Deadline > 0 {
		return h.Deadline
	}
	return 60 * time.Second
}

// Run runs the suite.
func Run(t *testing.T, h Harness) {
	ctx := context.Background()
	t.Run("Succeeds", func(t *testing.T) {
		b, st := h.New(t)
		j := Submit(t, b, st, "sh", "-c", "echo hello from the job; echo to stderr >&2")
		if state, reason := h.wait(t, j); state != job.Succeeded {
			t.Fatalf("state = %s (%s), want SUCCEEDED", state, reason)
		}
		var logs bytes.Buffer
		if err := j.Logs(ctx, &logs, false); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"hello from the job", "to stderr"} {
			if !strings.Contains(logs.String(), want) {
				t.Errorf("logs %q lack %q", logs.String(), want)
			}
		}
		res, err := j.Result(ctx, "")
		if err != nil || !res.Envelope.Success {
			t.Fatalf("Result = %+v, %v", res, err)
		}
	})
	t.Run("FailsWithExitCode", func(t *testing.T) {
		b, st := h.New(t)
		j := Submit(t, b, st, "sh", "-c", "echo failing; exit 3")
		state, reason := h.wait(t, j)
		if state != job.Failed || !strings.Contains(reason, "exit code 3") {
			t.Fatalf("state = %s (%s), want FAILED naming exit code 3", state, reason)
		}
		res, err := j.Result(ctx, "")
		if err != nil || res.Envelope.Success || res.Envelope.ExitCode == nil || *res.Envelope.ExitCode != 3 {
			t.Fatalf("Result = %+v, %v", res, err)
		}
	})
	t.Run("NotFound", func(t *testing.T) {
		b, st := h.New(t)
		j := NewJob(&job.Handle{JobID: job.NewID(), Backend: b.Name()}, st, b)
		if state, _, err := j.Status(ctx); err != nil || state != job.NotFound {
			t.Fatalf("Status of an unknown job = %s, %v; want NOT_FOUND", state, err)
		}
		if err := b.Cancel(ctx, j.Handle); err != nil {
			t.Fatalf("Cancel of an unknown job: %v", err)
		}
		if err := b.Cleanup(ctx, j.Handle); err != nil {
			t.Fatalf("Cleanup of an unknown job: %v", err)
		}
	})
	t.Run("LogsWhileRunning", func(t *testing.T) {
		b, st := h.New(t)
		j := Submit(t, b, st, "sh", "-c", "for i in $(seq 1 40); do echo line $i; sleep 0.1; done")
		deadline := time.Now().Add(h.deadline())
		for time.Now().Before(deadline) {
			state, _, err := j.Status(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if state.Terminal() {
				t.Fatalf("the job ended (%s) before any log was seen while it ran", state)
			}
			var logs bytes.Buffer
			if err := j.Logs(ctx, &logs, false); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(logs.String(), "line 2\n") {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		var all bytes.Buffer
		fctx, cancel := context.WithTimeout(ctx, h.deadline())
		defer cancel()
		if err := j.Logs(fctx, &all, true); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(all.String(), "line 1\n") || !strings.Contains(all.String(), "line 40\n") {
			t.Fatalf("followed logs are incomplete: %q", all.String())
		}
		if tail, _ := j.Tail(ctx, 2); tail != "line 39\nline 40\n" {
			t.Fatalf("Tail(2) = %q", tail)
		}
	})
	t.Run("Cancel", func(t *testing.T) {
		b, st := h.New(t)
		j := Submit(t, b, st, "sh", "-c", "echo started; sleep 300")
		waitFor(t, j, job.Running, h.deadline())
		start := time.Now()
		if err := j.Cancel(ctx); err != nil {
			t.Fatalf("Cancel: %v", err)
		}
		state, reason, err := j.Status(ctx)
		if err != nil || state != job.Failed || !strings.Contains(reason, "cancel") {
			t.Fatalf("after Cancel: %s (%s), %v; want FAILED cancelled", state, reason, err)
		}
		if d := time.Since(start); d > 30*time.Second {
			t.Errorf("Cancel took %s", d)
		}
		if err := j.Cancel(ctx); err != nil {
			t.Fatalf("second Cancel: %v", err)
		}
	})
	t.Run("CancelFinishedIsNoop", func(t *testing.T) {
		b, st := h.New(t)
		j := Submit(t, b, st, "true")
		h.wait(t, j)
		if err := j.Cancel(ctx); err != nil {
			t.Fatal(err)
		}
		if state, _, _ := j.Status(ctx); state != job.Succeeded {
			t.Fatalf("cancel changed a finished job to %s", state)
		}
	})
	t.Run("Cleanup", func(t *testing.T) {
		b, st := h.New(t)
		j := Submit(t, b, st, "true")
		h.wait(t, j)
		for i := 0; i < 2; i++ {
			if err := j.Cleanup(ctx, true, true); err != nil {
				t.Fatalf("Cleanup #%d: %v", i+1, err)
			}
		}
		if state, _, err := j.Status(ctx); err != nil || state != job.NotFound {
			t.Fatalf("after cleanup: %s, %v; want NOT_FOUND", state, err)
		}
	})
	if h.KillWorker != nil {
		t.Run("KilledWorkerFails", func(t *testing.T) {
			b, st := h.New(t)
			j := Submit(t, b, st, "sh", "-c", "echo started; sleep 300")
			waitFor(t, j, job.Running, h.deadline())
			h.KillWorker(t, b, st, j.Handle)
			start := time.Now()
			state, reason := h.wait(t, j)
			if state != job.Failed || reason == "" {
				t.Fatalf("after killing the worker: %s (%q); want FAILED with a reason", state, reason)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("FAILED was reported after %s; want within seconds", d)
			}
			t.Logf("reason: %s", reason)
		})
	}
}

func waitFor(t *testing.T, j *Job, want job.State, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		state, reason, err := j.Status(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if state == want {
			return
		}
		if state.Terminal() {
			t.Fatalf("job became %s (%s) while waiting for %s", state, reason, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("job not %s within %s", want, d)
}
