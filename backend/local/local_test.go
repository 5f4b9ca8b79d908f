package local_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/backend/backendtest"
	"github.com/kinetic-run/kinetic/backend/local"
	"github.com/kinetic-run/kinetic/engine"
	"github.com/kinetic-run/kinetic/errs"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
	"github.com/kinetic-run/kinetic/testkit/faultfs"
	"github.com/kinetic-run/kinetic/testkit/testbin"
	"github.com/kinetic-run/kinetic/testkit/testproc"
)

// observe is the engine's view of a job, as the conformance suite and these tests use it.
func observe(h *job.Handle, st *store.Store, b backend.Backend) backendtest.Job {
	return &engine.Job{Handle: h, Store: st, Backend: b}
}

// submit submits a command job to b and returns the engine's view of it.
func submit(t *testing.T, b backend.Backend, st *store.Store, argv ...string) *engine.Job {
	t.Helper()
	return &engine.Job{Handle: backendtest.Submit(t, b, st, argv...), Store: st, Backend: b}
}

func newLocal(t *testing.T, slots int) (*local.Backend, *store.Store) {
	st, err := store.Open(context.Background(), "file://"+t.TempDir()+"/store")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	state := t.TempDir()
	// Its supervisors, long-lived ones idle for a minute, stopped before the directories
	// go: one that looked at its store meanwhile made it again ("directory not empty",
	// one run in five of the conformance suite).
	testproc.StopUnderAtCleanup(t, state)
	b, err := local.New(st, local.Options{StateDir: state, Exe: testbin.Path(t), Slots: slots, Grace: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return b, st
}

func TestConformance(t *testing.T) {
	backendtest.Run(t, backendtest.Harness{
		New:     func(t *testing.T) (backend.Backend, *store.Store) { return newLocal(t, 4) },
		Observe: observe,
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
	first := submit(t, b, st, "sh", "-c", "sleep 4")
	second := submit(t, b, st, "true")
	// Under load the submits themselves may take a while: look once the first runs.
	var s1, s2 job.State
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if s1, _, _ = first.Status(ctx); s1 != job.Pending {
			break
		}
	}
	s2, _, _ = second.Status(ctx)
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
	first := submit(t, b, st, "sh", "-c", "sleep 300")
	second := submit(t, b, st, "sh", "-c", "echo should not run")
	if err := second.Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	state, reason, _ := second.Status(ctx)
	if state != job.Failed || reason != "cancelled while pending" {
		t.Fatalf("cancelled pending job: %s (%s)", state, reason)
	}
	if err := first.Cleanup(ctx, true, true); err != nil {
		dir := strings.TrimPrefix(st.URL(), "file://") + "/jobs/" + first.Handle.JobID
		ents, _ := os.ReadDir(dir)
		var names []string
		for _, e := range ents {
			fi, _ := e.Info()
			names = append(names, e.Name()+"@"+fi.ModTime().Format("15:04:05.000000"))
		}
		t.Fatalf("%v; left: %v; now %s", err, names, time.Now().Format("15:04:05.000000"))
	}
}

// TestKilledRunnerFails: the runner (not the supervisor) dies: FAILED naming the signal.
func TestKilledRunnerFails(t *testing.T) {
	b, st := newLocal(t, 2)
	ctx := context.Background()
	j := submit(t, b, st, "sh", "-c", "sleep 300")
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

// TestBatchWorkerKilled: a batch child is RUNNING while its worker runs it (with no
// status.json: the claim in its lock file says so); when the worker is killed, the next
// worker to find the child does not run it again but records it FAILED, naming the worker.
func TestBatchWorkerKilled(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, "file://"+t.TempDir()+"/store")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	state := t.TempDir()
	b, err := local.New(st, local.Options{StateDir: state, Exe: testbin.Path(t), Slots: 2, Grace: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(t.TempDir(), "runs")
	gid := job.NewGroupID()
	enqueue := func(cmd string) *engine.Job {
		id := job.NewID()
		spec := &job.Spec{Version: job.SpecVersion, JobID: id, Kind: job.KindCommand, Command: []string{"sh", "-c", cmd}}
		h := &job.Handle{JobID: id, GroupID: gid, Backend: b.Name(), K8sName: id, Accelerator: "cpu", FuncName: "sh", DisplayName: "sh", Store: st.URL(), CreatedAt: time.Now().UTC().Format(time.RFC3339)}
		if err := st.Put(ctx, store.SpecKey(id), spec.Encode()); err != nil {
			t.Fatal(err)
		}
		if err := st.Put(ctx, store.HandleKey(id), h.Encode()); err != nil {
			t.Fatal(err)
		}
		if err := b.Enqueue(ctx, h, 1); err != nil {
			t.Fatal(err)
		}
		return &engine.Job{Handle: h, Store: st, Backend: b}
	}
	j := enqueue("echo run >> " + marker + "; exec sleep 300")
	waitState(t, j, job.Running)
	if _, err := local.ReadStatus(ctx, st, j.Handle.JobID); !store.IsNotFound(err) {
		t.Fatalf("a running batch child has a status.json (%v): RUNNING should be its claim", err)
	}
	for i := 0; i < 1000; i++ { // until the command has written its line (`>>` makes the file first)
		if b, err := os.ReadFile(marker); err == nil && strings.Contains(string(b), "run") {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The worker's pid is in the claim.
	ws := filepath.Join(state, "jobs", j.Handle.JobID)
	raw, err := os.ReadFile(filepath.Join(ws, "supervisor.lock"))
	if err != nil {
		t.Fatal(err)
	}
	var claim job.LocalProcess
	if err := json.Unmarshal(raw, &claim); err != nil || claim.SupervisorPID <= 0 {
		t.Fatalf("claim %q: %v", raw, err)
	}
	for _, pid := range findChildren(t, claim.SupervisorPID) {
		defer syscall.Kill(-pid, syscall.SIGKILL) // the command outlives a killed worker
	}
	if err := syscall.Kill(claim.SupervisorPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 500; i++ { // until the worker is gone (its locks with it)
		if syscall.Kill(claim.SupervisorPID, 0) != nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // reaped by the test binary's spawner, or by init
	// A new worker serves the queue: the dead worker's child comes first in it.
	next := enqueue("true")
	waitState(t, next, job.Succeeded)
	s, err := local.ReadStatus(ctx, st, j.Handle.JobID)
	if err != nil || s.State != job.Failed || !strings.Contains(s.Reason, "batch worker") {
		t.Fatalf("after its worker died: %+v, %v; want FAILED naming the batch worker", s, err)
	}
	if runs, _ := os.ReadFile(marker); strings.Count(string(runs), "run") != 1 {
		t.Fatalf("the child ran %d times", strings.Count(string(runs), "run"))
	}
}

func waitState(t *testing.T, j *engine.Job, want job.State) (job.State, string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		s, reason, err := j.Status(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if s == want {
			return s, reason
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s (%s), want %s", s, reason, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSupervisorStartupOnFullDisk: a supervisor that cannot record the job (its store is
// on a full disk) fails Submit with the reason, ENOSPC named, even though its own log is
// unwritable too, and leaves no workspace behind.
func TestSupervisorStartupOnFullDisk(t *testing.T) {
	ctx := context.Background()
	disk := faultfs.Tmpfs(t, 256)
	st, err := store.Open(ctx, "file://"+disk+"/store")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	state := filepath.Join(disk, "state")
	b, err := local.New(st, local.Options{StateDir: state, Exe: testbin.Path(t), Slots: 1, Grace: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	id := job.NewID()
	spec := &job.Spec{Version: job.SpecVersion, JobID: id, Kind: job.KindCommand, Command: []string{"true"}}
	h := &job.Handle{JobID: id, Backend: b.Name(), K8sName: id, Accelerator: "cpu", FuncName: "true", DisplayName: "true", Store: st.URL(), CreatedAt: time.Now().UTC().Format(time.RFC3339)}
	if err := st.Put(ctx, store.SpecKey(id), spec.Encode()); err != nil {
		t.Fatal(err)
	}
	if err := st.Put(ctx, store.HandleKey(id), h.Encode()); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(state, "jobs"), 0o700); err != nil {
		t.Fatal(err)
	}
	faultfs.Fill(t, disk)
	err = b.Submit(ctx, h)
	if err == nil || !strings.Contains(err.Error(), "no space left on device") {
		t.Fatalf("Submit on a full disk = %v, want an error naming ENOSPC", err)
	}
	if _, serr := os.Stat(filepath.Join(state, "jobs", id)); !os.IsNotExist(serr) {
		t.Errorf("workspace left behind after a failed start-up: %v", serr)
	}
}

// TestMemStoreRefused: a mem:// store is memory of one process; a local job runs in
// another, so it is refused at once (it used to print a job ID that existed nowhere, or
// wait for ever for "a free slot").
func TestMemStoreRefused(t *testing.T) {
	st, err := store.Open(t.Context(), "mem://")
	if err != nil {
		t.Fatal(err)
	}
	_, err = local.New(st, local.Options{StateDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "mem://") || !strings.Contains(err.Error(), "file://") || errs.CodeOf(err) != errs.InvalidArgument {
		t.Fatalf("New(mem://) = %v; want an InvalidArgument naming mem:// and file://", err)
	}
}
