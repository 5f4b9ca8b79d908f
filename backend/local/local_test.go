package local_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/backend/backendtest"
	"github.com/kinetic-run/kinetic/backend/local"
	"github.com/kinetic-run/kinetic/engine"
	"github.com/kinetic-run/kinetic/internal/testbin"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
)

func newLocal(t *testing.T, slots int) (*local.Backend, *store.Store) {
	st, err := store.Open(context.Background(), "file://"+t.TempDir()+"/store")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	b, err := local.New(st, local.Options{StateDir: t.TempDir(), Exe: testbin.Path(t), Slots: slots, Grace: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return b, st
}

func TestConformance(t *testing.T) {
	backendtest.Run(t, backendtest.Harness{
		New: func(t *testing.T) (backend.Backend, *store.Store) { return newLocal(t, 4) },
		KillWorker: func(t *testing.T, b backend.Backend, st *store.Store, h *job.Handle) {
			s, err := local.ReadStatus(context.Background(), st, h.JobID)
			if err != nil {
				t.Fatal(err)
			}
			if err := syscall.Kill(s.Local.SupervisorPID, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
		},
	})
}

// TestSlotsQueueJobs: with one slot, a second job waits as PENDING until the first ends.
func TestSlotsQueueJobs(t *testing.T) {
	b, st := newLocal(t, 1)
	ctx := context.Background()
	first := backendtest.Submit(t, b, st, "sh", "-c", "sleep 1.5")
	second := backendtest.Submit(t, b, st, "true")
	time.Sleep(700 * time.Millisecond)
	s1, _, _ := first.Status(ctx)
	s2, _, _ := second.Status(ctx)
	if s1 != job.Running || s2 != job.Pending {
		t.Fatalf("with one slot: first %s, second %s; want RUNNING and PENDING", s1, s2)
	}
	for _, j := range []*engine.Job{first, second} {
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		state, reason, err := j.Wait(wctx, nil)
		cancel()
		if err != nil || state != job.Succeeded {
			t.Fatalf("%s: %s (%s) %v", j.Handle.JobID, state, reason, err)
		}
	}
}

// TestCancelPending: a job still waiting for a slot is cancelled without ever running.
func TestCancelPending(t *testing.T) {
	b, st := newLocal(t, 1)
	ctx := context.Background()
	first := backendtest.Submit(t, b, st, "sh", "-c", "sleep 300")
	second := backendtest.Submit(t, b, st, "sh", "-c", "echo should not run")
	if err := second.Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	state, reason, _ := second.Status(ctx)
	if state != job.Failed || reason != "cancelled while pending" {
		t.Fatalf("cancelled pending job: %s (%s)", state, reason)
	}
	if err := first.Cleanup(ctx, true, true); err != nil {
		t.Fatal(err)
	}
}

// TestKilledRunnerFails: the runner (not the supervisor) dies: FAILED naming the signal.
func TestKilledRunnerFails(t *testing.T) {
	b, st := newLocal(t, 2)
	ctx := context.Background()
	j := backendtest.Submit(t, b, st, "sh", "-c", "sleep 300")
	deadline := time.Now().Add(20 * time.Second)
	for {
		if s, _, _ := j.Status(ctx); s == job.Running {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("never RUNNING")
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // let the runner start its child
	s, _ := local.ReadStatus(ctx, st, j.Handle.JobID)
	// The runner leads its own process group: kill the group's leader only.
	pgids := findChildren(t, s.Local.SupervisorPID)
	if len(pgids) == 0 {
		t.Fatal("no runner process found")
	}
	syscall.Kill(pgids[0], syscall.SIGKILL)
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	state, reason, err := j.Wait(wctx, nil)
	if err != nil || state != job.Failed {
		t.Fatalf("%s (%s) %v", state, reason, err)
	}
	t.Logf("reason: %s", reason)
}
