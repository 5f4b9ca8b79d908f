package slurm_test

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/backend/slurm"
	"github.com/kinetic-run/kinetic/engine"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/pyenv"
	"github.com/kinetic-run/kinetic/store"
)

// TestPrune: `kinetic prune` removes the environments in slurm_env_dir unused for longer
// than its age, except one a job still in Slurm was made with (however long ago it was
// last started); a dry run removes nothing; a recent one and a build in progress (no
// marker) stay.
func TestPrune(t *testing.T) {
	envs := t.TempDir()
	b, st := newBackend(t, func(o *slurm.Options) { o.EnvDir = envs })
	ctx := context.Background()
	long := time.Now().Add(-48 * time.Hour)
	for key, used := range map[string]time.Time{"old": long, "in-use": long, "recent": time.Now(), "building": {}} {
		dir := pyenv.Path(envs, key)
		os.MkdirAll(filepath.Join(dir, "lib"), 0o755)
		os.WriteFile(filepath.Join(dir, "lib", "x.py"), make([]byte, 1000), 0o644)
		if !used.IsZero() {
			os.WriteFile(filepath.Join(dir, pyenv.MarkerFile), []byte("{}"), 0o644)
			os.Chtimes(filepath.Join(dir, pyenv.MarkerFile), used, used)
		}
	}
	// A running job made with the environment "in-use".
	h := submitWithEnvKey(t, b, st, "in-use", "sleep", "60")
	waitRunning(t, &engine.Job{Handle: h, Store: st, Backend: b})
	got := func(dry bool) []string {
		t.Helper()
		freed, err := b.Prune(ctx, backend.PruneOptions{OlderThan: 24 * time.Hour, DryRun: dry})
		if err != nil {
			t.Fatal(err)
		}
		var paths []string
		for _, f := range freed {
			if f.Kind != "environment" || f.Bytes < 1000 {
				t.Errorf("freed %+v", f)
			}
			paths = append(paths, filepath.Base(f.Path))
		}
		sort.Strings(paths)
		return paths
	}
	if p := got(true); len(p) != 1 || p[0] != "old" {
		t.Fatalf("dry run: %v; want [old]", p)
	}
	if _, err := os.Stat(pyenv.Path(envs, "old")); err != nil {
		t.Fatalf("the dry run removed: %v", err)
	}
	if p := got(false); len(p) != 1 || p[0] != "old" {
		t.Fatalf("prune: %v; want [old]", p)
	}
	for key, want := range map[string]bool{"old": false, "in-use": true, "recent": true, "building": true} {
		if _, err := os.Stat(pyenv.Path(envs, key)); (err == nil) != want {
			t.Errorf("environment %s there: %v, want %v", key, err == nil, want)
		}
	}
	b.Cancel(ctx, h)
}

// submitWithEnvKey submits a command job whose spec names environment key.
func submitWithEnvKey(t *testing.T, b backend.Backend, st *store.Store, key string, argv ...string) *job.Handle {
	t.Helper()
	ctx := context.Background()
	id := job.NewID()
	spec := &job.Spec{Version: job.SpecVersion, JobID: id, Kind: job.KindCommand, Command: argv, EnvKey: key}
	h := &job.Handle{JobID: id, Backend: b.Name(), K8sName: id, Accelerator: "cpu", FuncName: argv[0], Store: st.URL(), CreatedAt: time.Now().UTC().Format(time.RFC3339)}
	if err := st.Put(ctx, store.SpecKey(id), spec.Encode()); err != nil {
		t.Fatal(err)
	}
	if err := st.Put(ctx, store.HandleKey(id), h.Encode()); err != nil {
		t.Fatal(err)
	}
	if err := b.Submit(ctx, h); err != nil {
		t.Fatal(err)
	}
	return h
}
