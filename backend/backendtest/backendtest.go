// Package backendtest is the conformance suite every backend passes: the same jobs, the
// same statuses, the same guarantees (a job whose worker dies reports FAILED with a
// reason, cancel stops it, cleanup is idempotent, unknown jobs are NOT_FOUND).
//
// A backend that implements one of the optional interfaces passes its suite too:
// RunObserver for backend.Observer (the Kubernetes backends), RunDebugger for
// backend.Debugger (local and Kubernetes), with the same Harness.
//
// The suite observes jobs as a person does, through a Job the caller provides (the
// engine's: engine.Job satisfies it), so it needs nothing of the engine and the engine's
// tests and the backends' tests can both drive it.
package backendtest

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
)

// Job is a submitted job as the suite observes and stops it. *engine.Job satisfies it.
type Job interface {
	Status(ctx context.Context) (job.State, string, error)
	Wait(ctx context.Context, onChange func(job.State)) (job.State, string, error)
	Logs(ctx context.Context, w io.Writer, follow bool) error
	Tail(ctx context.Context, n int) (string, error)
	Cancel(ctx context.Context) error
	Cleanup(ctx context.Context, backendRes, storeObjs bool) error
}

// Observe binds the job h, submitted to b over st, to what observes it: for the engine,
//
//	func(h *job.Handle, st *store.Store, b backend.Backend) backendtest.Job {
//		return &engine.Job{Handle: h, Store: st, Backend: b}
//	}
type Observe func(h *job.Handle, st *store.Store, b backend.Backend) Job

// Harness is what a backend's test provides.
type Harness struct {
	// New returns a backend and the store it uses, fresh for each subtest.
	New func(t *testing.T) (backend.Backend, *store.Store)
	// Observe binds a job to what observes it (required).
	Observe Observe
	// KillWorker kills whatever runs the job (the supervisor, the pod) without letting it
	// report. The job must then become FAILED with a reason within Deadline.
	KillWorker func(t *testing.T, b backend.Backend, st *store.Store, h *job.Handle)
	// Deadline bounds every wait (default 60 s).
	Deadline time.Duration
}

// Submit writes a command job to st, submits it to b and returns its handle.
func Submit(t *testing.T, b backend.Backend, st *store.Store, argv ...string) *job.Handle {
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
	return h
}

// submitted is a job the suite submitted: its handle and its observer.
type submitted struct {
	Job
	Handle *job.Handle
	st     *store.Store
	marker *job.DebugMarker // RunDebugger's jobs: where the job listens
}

// submit submits a command job and binds it to its observer.
func (h *Harness) submit(t *testing.T, b backend.Backend, st *store.Store, argv ...string) *submitted {
	t.Helper()
	jh := Submit(t, b, st, argv...)
	return &submitted{Job: h.Observe(jh, st, b), Handle: jh, st: st}
}

// envelope waits for the job and returns its result envelope (result.json).
func (h *Harness) envelope(t *testing.T, j *submitted) *job.Envelope {
	t.Helper()
	h.wait(t, j)
	raw, err := j.st.Get(context.Background(), store.EnvelopeKey(j.Handle.JobID))
	if err != nil {
		t.Fatalf("result envelope of %s: %v", j.Handle.JobID, err)
	}
	env, err := job.DecodeEnvelope(raw)
	if err != nil {
		t.Fatal(err)
	}
	return env
}

func (h *Harness) wait(t *testing.T, j *submitted) (job.State, string) {
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
	if h.Observe == nil {
		t.Fatal("backendtest: Harness.Observe is required")
	}
	ctx := context.Background()
	t.Run("Succeeds", func(t *testing.T) {
		b, st := h.New(t)
		j := h.submit(t, b, st, "sh", "-c", "echo hello from the job; echo to stderr >&2")
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
		if env := h.envelope(t, j); !env.Success {
			t.Fatalf("envelope = %+v, want success", env)
		}
	})
	t.Run("FailsWithExitCode", func(t *testing.T) {
		b, st := h.New(t)
		j := h.submit(t, b, st, "sh", "-c", "echo failing; exit 3")
		state, reason := h.wait(t, j)
		if state != job.Failed || !strings.Contains(reason, "exit code 3") {
			t.Fatalf("state = %s (%s), want FAILED naming exit code 3", state, reason)
		}
		if env := h.envelope(t, j); env.Success || env.ExitCode == nil || *env.ExitCode != 3 {
			t.Fatalf("envelope = %+v, want a failure with exit code 3", env)
		}
	})
	t.Run("NotFound", func(t *testing.T) {
		b, st := h.New(t)
		jh := &job.Handle{JobID: job.NewID(), Backend: b.Name()}
		if state, _, err := h.Observe(jh, st, b).Status(ctx); err != nil || state != job.NotFound {
			t.Fatalf("Status of an unknown job = %s, %v; want NOT_FOUND", state, err)
		}
		if err := b.Cancel(ctx, jh); err != nil {
			t.Fatalf("Cancel of an unknown job: %v", err)
		}
		if err := b.Cleanup(ctx, jh); err != nil {
			t.Fatalf("Cleanup of an unknown job: %v", err)
		}
	})
	t.Run("LogsWhileRunning", func(t *testing.T) {
		b, st := h.New(t)
		j := h.submit(t, b, st, "sh", "-c", "for i in $(seq 1 40); do echo line $i; sleep 0.1; done")
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
		j := h.submit(t, b, st, "sh", "-c", "echo started; sleep 300")
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
		j := h.submit(t, b, st, "true")
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
		j := h.submit(t, b, st, "true")
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
			j := h.submit(t, b, st, "sh", "-c", "echo started; sleep 300")
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

func waitFor(t *testing.T, j Job, want job.State, d time.Duration) {
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
