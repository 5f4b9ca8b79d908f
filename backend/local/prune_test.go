package local_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/backend/local"
	"github.com/kinetic-run/kinetic/batch/layout"
	"github.com/kinetic-run/kinetic/internal/filelock"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/pyenv"
	"github.com/kinetic-run/kinetic/store"
)

// pruneBackend is a local backend over a file:// store, with its state directory.
func pruneBackend(t *testing.T) (*store.Store, *local.Backend, string) {
	t.Helper()
	st, err := store.Open(context.Background(), "file://"+t.TempDir()+"/store")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	state := t.TempDir()
	b, err := local.New(st, local.Options{StateDir: state, Exe: "/bin/true"})
	if err != nil {
		t.Fatal(err)
	}
	return st, b, state
}

// Environments go when no kept workspace's job uses them and none was used recently; a
// workspace whose job has not ended keeps its environment, however old.
func TestPruneEnvironments(t *testing.T) {
	ctx := context.Background()
	st, b, state := pruneBackend(t)
	old := time.Now().Add(-48 * time.Hour)
	mkEnv := func(key string, used time.Time) string {
		d := filepath.Join(state, "envs", key)
		os.MkdirAll(filepath.Join(d, "bin"), 0o700)
		os.WriteFile(filepath.Join(d, "bin", "python"), []byte("#!/bin/sh\n"), 0o700)
		os.WriteFile(filepath.Join(d, "lib.bin"), make([]byte, 4096), 0o600)
		m := filepath.Join(d, pyenv.MarkerFile)
		os.WriteFile(m, []byte("{}"), 0o600)
		os.Chtimes(m, used, used)
		return d
	}
	unused, recent, needed := mkEnv("env-unused", old), mkEnv("env-recent", time.Now()), mkEnv("env-needed", old)

	// A job still RUNNING (no supervisor here, but its status says so) uses env-needed.
	id := job.NewID()
	spec, _ := json.Marshal(&job.Spec{Version: job.SpecVersion, JobID: id, Kind: job.KindCommand, Command: []string{"true"}, EnvKey: "env-needed"})
	st.Put(ctx, store.SpecKey(id), spec)
	st.Put(ctx, store.HandleKey(id), (&job.Handle{JobID: id, Backend: "local"}).Encode())
	local.WriteStatus(ctx, st, id, &job.Status{State: job.Running, UpdatedAt: old})
	ws := filepath.Join(state, "jobs", id)
	os.MkdirAll(ws, 0o700)
	os.Chtimes(ws, old, old)

	dry, err := b.Prune(ctx, backend.PruneOptions{OlderThan: 24 * time.Hour, DryRun: true})
	if err != nil || len(dry) != 1 || dry[0].Path != unused || dry[0].Kind != "environment" || dry[0].Bytes < 4096 {
		t.Fatalf("dry run: %+v, %v", dry, err)
	}
	if _, err := os.Stat(unused); err != nil {
		t.Fatal("the dry run removed an environment")
	}
	freed, err := b.Prune(ctx, backend.PruneOptions{OlderThan: 24 * time.Hour})
	if err != nil || len(freed) != 1 || freed[0].Path != unused {
		t.Fatalf("prune: %+v, %v", freed, err)
	}
	for _, d := range []string{recent, needed, ws} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("prune removed %s: %v", d, err)
		}
	}
	if _, err := os.Stat(unused); !os.IsNotExist(err) {
		t.Errorf("the unused environment is still there: %v", err)
	}
}

// The state of a batch run by executors goes once no worker is left and nothing changed
// since the cutoff; a batch with a live worker stays, and so does the environment its
// template uses, however long ago it was built.
func TestPruneBatchState(t *testing.T) {
	ctx := context.Background()
	st, b, state := pruneBackend(t)
	old := time.Now().Add(-48 * time.Hour)
	mkGroup := func() string {
		gid := job.NewGroupID()
		d := filepath.Join(state, "groups", gid)
		os.MkdirAll(filepath.Join(d, "workers"), 0o700)
		os.MkdirAll(filepath.Join(d, "done"), 0o700)
		os.WriteFile(filepath.Join(d, "done", "0"), []byte("0\n1\n"), 0o644)
		for _, p := range []string{filepath.Join(d, "done"), filepath.Join(d, "workers"), d} {
			os.Chtimes(p, old, old)
		}
		return gid
	}
	ended, running := mkGroup(), mkGroup()
	tmpl := &layout.Template{Handle: &job.Handle{JobID: job.ChildID(running, 0)}, Spec: &job.Spec{Version: job.SpecVersion, Kind: job.KindPickle, EnvKey: "env-of-the-batch"}}
	if err := layout.WriteDerived(ctx, st, running, tmpl, nil, [][]byte{{1}}); err != nil {
		t.Fatal(err)
	}
	lock, err := filelock.Open(filepath.Join(state, "groups", running, "workers", "0.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := filelock.Try(lock, filelock.Exclusive); err != nil {
		t.Fatal(err)
	}
	env := filepath.Join(state, "envs", "env-of-the-batch")
	os.MkdirAll(filepath.Join(env, "bin"), 0o700)
	os.WriteFile(filepath.Join(env, "bin", "python"), []byte("#!/bin/sh\n"), 0o700)
	m := filepath.Join(env, pyenv.MarkerFile)
	os.WriteFile(m, []byte("{}"), 0o600)
	os.Chtimes(m, old, old)

	freed, err := b.Prune(ctx, backend.PruneOptions{OlderThan: 24 * time.Hour})
	if err != nil || len(freed) != 1 || freed[0].Kind != "batch state" || filepath.Base(freed[0].Path) != ended {
		t.Fatalf("prune: %+v, %v", freed, err)
	}
	for _, d := range []string{filepath.Join(state, "groups", running), env} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("prune removed %s: %v", d, err)
		}
	}
}

// A collected job's cleanup while its supervisor still writes in its workspace (the
// final status kept, its log, the disk reserve given back: injected here as a writer
// that makes files for 300 ms) waits for it instead of failing with "directory not
// empty" and leaving the workspace.
func TestCleanupEndedWhileWorkspaceWritten(t *testing.T) {
	_, b, state := pruneBackend(t)
	id := "job-cleanup-race"
	ws := filepath.Join(state, "jobs", id)
	for round := 0; round < 5; round++ {
		if err := os.MkdirAll(filepath.Join(ws, "sub"), 0o700); err != nil {
			t.Fatal(err)
		}
		stop := time.Now().Add(300 * time.Millisecond)
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := 0; time.Now().Before(stop); i++ {
				// Both levels: RemoveAll meets a new file wherever it is.
				os.WriteFile(filepath.Join(ws, "sub", "f"+strconv.Itoa(i)), nil, 0o600)
				os.WriteFile(filepath.Join(ws, "g"+strconv.Itoa(i)), nil, 0o600)
			}
		}()
		time.Sleep(20 * time.Millisecond)
		err := b.CleanupEnded(context.Background(), &job.Handle{JobID: id})
		<-done
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if _, err := os.Stat(ws); !os.IsNotExist(err) {
			t.Fatalf("round %d: the workspace is left: %v", round, err)
		}
	}
}

// TestPruneKeptTrees: the tree a long-lived supervisor kept for its next job goes once
// its supervisor is gone and it is older than the cutoff (a supervisor removes its own
// when it leaves; a killed one leaves it); a live supervisor's stays, and so does a
// recent one. A dry run says what would go and removes nothing.
func TestPruneKeptTrees(t *testing.T) {
	ctx := context.Background()
	_, b, state := pruneBackend(t)
	old := time.Now().Add(-48 * time.Hour)
	workers := filepath.Join(state, "queues", "single-0123456789abcdef", "workers")
	mk := func(k string, age time.Time) string {
		tree := filepath.Join(workers, k, "tree")
		os.MkdirAll(filepath.Join(tree, "pkg"), 0o700)
		os.WriteFile(filepath.Join(tree, "pkg", "m.py"), []byte("x = 1\n"), 0o600)
		os.Chtimes(tree, age, age)
		return tree
	}
	dead, live, recent := mk("0", old), mk("1", old), mk("2", time.Now())
	aside := filepath.Join(workers, "0", "tree.old-abc")
	os.MkdirAll(aside, 0o700)
	os.Chtimes(aside, old, old)
	lock, err := filelock.Open(filepath.Join(workers, "1.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := filelock.Try(lock, filelock.Exclusive); err != nil {
		t.Fatal(err)
	}
	kept := func(freed []backend.Freed) map[string]int64 {
		out := map[string]int64{}
		for _, f := range freed {
			if f.Kind == "kept tree" {
				out[f.Path] = f.Bytes
			}
		}
		return out
	}
	freed, err := b.Prune(ctx, backend.PruneOptions{OlderThan: 24 * time.Hour, DryRun: true})
	if got := kept(freed); err != nil || len(got) != 2 || got[dead] != 6 || got[aside] != 0 {
		t.Fatalf("dry run: %+v, %v; want the dead worker's tree (6 bytes) and the one set aside", freed, err)
	}
	if _, err := os.Stat(dead); err != nil {
		t.Fatalf("a dry run removed %s: %v", dead, err)
	}
	freed, err = b.Prune(ctx, backend.PruneOptions{OlderThan: 24 * time.Hour})
	if got := kept(freed); err != nil || len(got) != 2 || got[dead] != 6 {
		t.Fatalf("prune: %+v, %v", freed, err)
	}
	for _, gone := range []string{dead, aside} {
		if _, err := os.Stat(gone); !os.IsNotExist(err) {
			t.Errorf("%s is still there (%v)", gone, err)
		}
	}
	for _, stays := range []string{live, recent} {
		if _, err := os.Stat(filepath.Join(stays, "pkg", "m.py")); err != nil {
			t.Errorf("prune removed %s: %v", stays, err)
		}
	}
	if ents, _ := os.ReadDir(filepath.Join(workers, "0")); len(ents) != 0 {
		t.Errorf("left in the dead worker's directory: %v", ents)
	}
}

// A final job's cleanup waits for its supervisor to let go of the job (its lock, held
// here by the test as the supervisor's last writes would) before it returns, since the
// engine removes the store's objects right after: a log written after them was left as
// a damaged job (the dashboard's cleaned-up job answered 422, not 404).
func TestCleanupWaitsForFinishingSupervisor(t *testing.T) {
	ctx := context.Background()
	st, b, state := pruneBackend(t)
	id := "job-0000000000cleanupwait1"
	ws := filepath.Join(state, "jobs", id)
	if err := os.MkdirAll(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := local.WriteStatus(ctx, st, id, &job.Status{State: job.Succeeded}); err != nil {
		t.Fatal(err)
	}
	lock, err := filelock.Open(filepath.Join(ws, "supervisor.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := filelock.Try(lock, filelock.Exclusive); err != nil {
		t.Fatal(err)
	}
	released := make(chan time.Time, 1)
	go func() {
		time.Sleep(300 * time.Millisecond)
		released <- time.Now()
		filelock.Unlock(lock)
	}()
	if err := b.Cleanup(ctx, &job.Handle{JobID: id}); err != nil {
		t.Fatal(err)
	}
	returned := time.Now()
	select {
	case at := <-released:
		if returned.Before(at) {
			t.Fatal("cleanup returned while the supervisor still held the job")
		}
	default:
		t.Fatal("cleanup returned while the supervisor still held the job")
	}
	if _, err := os.Stat(ws); !os.IsNotExist(err) {
		t.Fatalf("the workspace is left: %v", err)
	}
}
