package local_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/backend/backendtest"
	"github.com/kinetic-run/kinetic/backend/local"
	"github.com/kinetic-run/kinetic/internal/filelock"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
	"github.com/kinetic-run/kinetic/testkit/testbin"
	"github.com/kinetic-run/kinetic/testkit/testproc"
)

// newLocalIn is newLocal with a state directory the test knows.
func newLocalIn(t *testing.T, state string, slots int, perJob bool) (*local.Backend, *store.Store) {
	st, err := store.Open(context.Background(), "file://"+t.TempDir()+"/store")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	testproc.StopUnderAtCleanup(t, state)
	b, err := local.New(st, local.Options{StateDir: state, Exe: testbin.Path(t), Slots: slots, Grace: 2 * time.Second, PerJobSupervisor: perJob})
	if err != nil {
		t.Fatal(err)
	}
	return b, st
}

// TestConformancePerJobSupervisor: the per-job supervisor (an exec per job, the
// Options.PerJobSupervisor path) passes the suite too.
func TestConformancePerJobSupervisor(t *testing.T) {
	backendtest.Run(t, backendtest.Harness{
		New: func(t *testing.T) (backend.Backend, *store.Store) {
			return newLocalIn(t, t.TempDir(), 4, true)
		},
		Observe: observe,
		KillWorker: func(t *testing.T, b backend.Backend, st *store.Store, h *job.Handle) {
			killSupervisor(t, st, h)
		},
	})
}

// TestSinglesShareSupervisor: jobs submitted one after another run under the same
// long-lived supervisor (no process started per job), each recorded with it, in a
// workspace of its own.
func TestSinglesShareSupervisor(t *testing.T) {
	ctx := context.Background()
	state := t.TempDir()
	b, st := newLocalIn(t, state, 1, false)
	var pids []int
	for i := 0; i < 3; i++ {
		j := submit(t, b, st, "sh", "-c", "pwd > here")
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		s, reason, err := j.Wait(wctx, nil)
		cancel()
		if err != nil || s != job.Succeeded {
			t.Fatalf("job %d: %s (%s) %v", i, s, reason, err)
		}
		final, err := local.ReadStatus(ctx, st, j.Handle.JobID)
		if err != nil || final.Local == nil || final.Local.SupervisorPID <= 0 {
			t.Fatalf("job %d: final status %+v, %v; want its supervisor recorded", i, final, err)
		}
		if want := filepath.Join(state, "jobs", j.Handle.JobID); final.Local.Workspace != want {
			t.Fatalf("job %d ran in %s, want its own workspace %s", i, final.Local.Workspace, want)
		}
		pids = append(pids, final.Local.SupervisorPID)
	}
	if pids[0] != pids[1] || pids[1] != pids[2] {
		t.Fatalf("supervisor pids %v: want one long-lived supervisor for all three", pids)
	}
}

// TestSingleClaimedByDeadSupervisor: a queued job whose lock file holds the claim of a
// supervisor that died (it claimed the job, then was killed before it recorded RUNNING)
// is never run: the next supervisor to find it records it FAILED.
func TestSingleClaimedByDeadSupervisor(t *testing.T) {
	ctx := context.Background()
	state := t.TempDir()
	b, st := newLocalIn(t, state, 1, false)
	marker := filepath.Join(t.TempDir(), "ran")
	first := submit(t, b, st, "sh", "-c", "sleep 2")
	waitState(t, first, job.Running)
	second := submit(t, b, st, "sh", "-c", "echo ran > "+marker)
	s, err := local.ReadStatus(ctx, st, second.Handle.JobID)
	if err != nil || s.State != job.Pending || s.Local == nil || s.Local.Queue == "" {
		t.Fatalf("queued job's status %+v, %v; want PENDING in a queue", s, err)
	}
	// The claim a supervisor writes into the job's lock before it runs it; this one's
	// writer is gone (no process holds the lock).
	claim, _ := json.Marshal(&job.LocalProcess{SupervisorPID: 999999999, LockPath: filepath.Join(state, "jobs", second.Handle.JobID, "supervisor.lock"), Queue: s.Local.Queue})
	if err := os.WriteFile(filepath.Join(state, "jobs", second.Handle.JobID, "supervisor.lock"), claim, 0o644); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	state2, reason, err := second.Wait(wctx, nil)
	if err != nil || state2 != job.Failed || !strings.Contains(reason, "999999999") {
		t.Fatalf("job claimed by a dead supervisor: %s (%s) %v; want FAILED naming it", state2, reason, err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the job claimed by a dead supervisor ran again")
	}
	if s, _, _ := first.Wait(wctx, nil); s != job.Succeeded {
		t.Fatalf("first job: %s", s)
	}
}

func killSupervisor(t *testing.T, st *store.Store, h *job.Handle) {
	t.Helper()
	s, err := local.ReadStatus(context.Background(), st, h.JobID)
	if err != nil {
		t.Fatal(err)
	}
	p, err := os.FindProcess(s.Local.SupervisorPID)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
}

// TestSinglesRunWithSubmittersEnvironment: a job runs with the environment of the
// process that submitted it (which its supervisor inherits), even when a long-lived
// supervisor started by a submitter with another environment is still waiting.
func TestSinglesRunWithSubmittersEnvironment(t *testing.T) {
	ctx := context.Background()
	state, storeDir := t.TempDir(), t.TempDir()
	out := filepath.Join(t.TempDir(), "seen")
	for _, v := range []string{"first", "second"} {
		t.Setenv("KINETIC_TEST_SUBMITTER", v)
		st, err := store.Open(ctx, "file://"+storeDir)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		b, err := local.New(st, local.Options{StateDir: state, Exe: testbin.Path(t), Slots: 1, Grace: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		j := submit(t, b, st, "sh", "-c", `echo "$KINETIC_TEST_SUBMITTER" >> `+out)
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		s, reason, err := j.Wait(wctx, nil)
		cancel()
		if err != nil || s != job.Succeeded {
			t.Fatalf("%s: %s (%s) %v", v, s, reason, err)
		}
	}
	if got, _ := os.ReadFile(out); string(got) != "first\nsecond\n" {
		t.Fatalf("the jobs saw %q; want each its submitter's value (\"first\\nsecond\\n\")", got)
	}
}

// TestSingleQueuedWithoutWorkers: a single job waiting in its queue whose workers are
// gone before any claimed it (killed, or a starting worker that took another process's
// momentary look at its lock for a twin) gets new workers and runs, once; it is not
// failed as "the job's supervisors stopped" (the cold CI run of 2026-11-26 15:50 lost a
// call that way).
func TestSingleQueuedWithoutWorkers(t *testing.T) {
	ctx := context.Background()
	state := t.TempDir()
	b, st := newLocalIn(t, state, 1, false)
	first := submit(t, b, st, "sh", "-c", "sleep 1")
	waitState(t, first, job.Running)
	s, err := local.ReadStatus(ctx, st, first.Handle.JobID)
	if err != nil || s.Local == nil || s.Local.SupervisorPID == 0 || s.Local.Queue == "" {
		t.Fatalf("running job's status %+v, %v", s, err)
	}
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if st, _, _ := first.Wait(wctx, nil); st != job.Succeeded {
		t.Fatalf("first job: %s", st)
	}
	// The queue's only worker dies while idle.
	if err := syscall.Kill(s.Local.SupervisorPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	workerLock := filepath.Join(s.Local.Queue, "workers", "0.lock")
	var held *os.File
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		f, err := filelock.Open(workerLock, os.O_RDWR, 0)
		if err == nil && filelock.Try(f, filelock.Exclusive) == nil {
			held = f // the dead worker's lock, now ours: the submitter takes it for a live worker
			break
		}
		if f != nil {
			f.Close()
		}
		if time.Now().After(deadline) {
			t.Fatal("the killed worker's lock was not released")
		}
	}
	marker := filepath.Join(t.TempDir(), "ran")
	second := submit(t, b, st, "sh", "-c", "echo ran >> "+marker)
	held.Close()
	state2, reason, err := second.Wait(wctx, nil)
	if err != nil || state2 != job.Succeeded {
		t.Fatalf("a queued job whose workers were gone: %s (%s) %v; want SUCCEEDED", state2, reason, err)
	}
	if b, _ := os.ReadFile(marker); string(b) != "ran\n" {
		t.Fatalf("the job ran %q; want once", b)
	}
}

// TestIdleSupervisorStopsOnSIGTERM: a long-lived supervisor told to stop (SIGTERM) while
// it waits for work leaves; it does not keep the signal and cancel the next job it
// claims (a `pkill` of an old engine's processes once failed the new engine's first
// call as "cancelled", with Go's "context canceled" as its message).
func TestIdleSupervisorStopsOnSIGTERM(t *testing.T) {
	ctx := context.Background()
	b, st := newLocalIn(t, t.TempDir(), 1, false)
	run := func(name string) procView {
		t.Helper()
		j := submit(t, b, st, "sh", "-c", "true")
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		s, reason, err := j.Wait(wctx, nil)
		if err != nil || s != job.Succeeded {
			t.Fatalf("%s job: %s (%s) %v; want SUCCEEDED", name, s, reason, err)
		}
		final, err := local.ReadStatus(ctx, st, j.Handle.JobID)
		if err != nil || final.Local == nil || final.Local.SupervisorPID <= 0 {
			t.Fatalf("%s job: final status %+v, %v", name, final, err)
		}
		return procView{PID: final.Local.SupervisorPID}
	}
	first := run("first")
	if err := syscall.Kill(first.PID, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); processAlive(first.PID); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the idle supervisor (pid %d) is still there 10 s after SIGTERM", first.PID)
		}
	}
	if second := run("second"); second.PID == first.PID {
		t.Fatalf("the second job ran under the supervisor told to stop (pid %d)", first.PID)
	}
}

// processAlive: pid is a process that has not exited (a zombie has).
func processAlive(pid int) bool {
	raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	s := string(raw)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

type procView struct{ PID int }
