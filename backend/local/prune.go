package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/batch/layout"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/pyenv"
	"github.com/kinetic-run/kinetic/store"
)

// Prune implements backend.Pruner: workspaces of jobs that ended (or are gone from the
// store) more than o.OlderThan ago and whose supervisor no longer runs, then the Python
// environments no remaining workspace's job uses and that no job used for o.OlderThan.
func (b *Backend) Prune(ctx context.Context, o backend.PruneOptions) ([]backend.Freed, error) {
	cutoff := time.Now().Add(-o.OlderThan)
	var freed []backend.Freed
	inUse := map[string]bool{} // environment keys of the workspaces kept
	dir := filepath.Join(b.o.StateDir, "jobs")
	ents, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	for _, e := range ents {
		if err := ctx.Err(); err != nil {
			return freed, err
		}
		id := e.Name()
		ws := filepath.Join(dir, id)
		if !e.IsDir() || !job.ValidName(id) {
			continue
		}
		if !b.workspaceDone(ctx, id, ws, cutoff) {
			if spec, err := b.st.Get(ctx, store.SpecKey(id)); err == nil {
				if s, err := job.DecodeSpec(spec); err == nil && s.EnvKey != "" {
					inUse[s.EnvKey] = true
				}
			}
			continue
		}
		size, ok, err := removeDir(ws, o.DryRun)
		if err != nil {
			return freed, err
		}
		if ok {
			freed = append(freed, backend.Freed{Kind: "workspace", Path: ws, Bytes: size})
		}
	}

	// The state of batches run by executors: once no worker is left and nothing changed
	// since cutoff (their inputs' results are in the store).
	groups := filepath.Join(b.o.StateDir, "groups")
	ents, err = os.ReadDir(groups)
	if err != nil && !os.IsNotExist(err) {
		return freed, err
	}
	for _, e := range ents {
		g := filepath.Join(groups, e.Name())
		fi, err := os.Stat(g)
		if !e.IsDir() || !job.ValidName(e.Name()) || err != nil {
			continue
		}
		if len(b.liveWorkers(e.Name())) > 0 {
			// Running: its environment is in use however long ago it was built.
			if t, err := layout.ReadTemplate(ctx, b.st, e.Name()); err == nil && t.Spec.EnvKey != "" {
				inUse[t.Spec.EnvKey] = true
			}
			continue
		}
		if fi.ModTime().After(cutoff) {
			continue
		}
		if done, err := os.Stat(filepath.Join(g, "done")); err == nil && done.ModTime().After(cutoff) {
			continue
		}
		size, ok, err := removeDir(g, o.DryRun)
		if err != nil {
			return freed, err
		}
		if ok {
			freed = append(freed, backend.Freed{Kind: "batch state", Path: g, Bytes: size})
		}
	}

	kept, err := pruneKeptTrees(filepath.Join(b.o.StateDir, "queues"), cutoff, o.DryRun)
	freed = append(freed, kept...)
	if err != nil {
		return freed, err
	}

	envs := filepath.Join(b.o.StateDir, "envs")
	ents, err = os.ReadDir(envs)
	if err != nil && !os.IsNotExist(err) {
		return freed, err
	}
	for _, e := range ents {
		key := e.Name()
		env := filepath.Join(envs, key)
		if !e.IsDir() || inUse[key] || key == "pip-cache" {
			continue
		}
		used, ok := pyenv.LastUsed(env)
		if !ok || used.After(cutoff) {
			continue // being built, or used recently
		}
		size := dirSize(env)
		if !o.DryRun {
			removed, err := pyenv.Remove(ctx, envs, key, cutoff)
			if err != nil {
				return freed, err
			}
			if !removed {
				continue
			}
		}
		freed = append(freed, backend.Freed{Kind: "environment", Path: env, Bytes: size})
	}
	sort.Slice(freed, func(i, j int) bool { return freed[i].Path < freed[j].Path })
	return freed, nil
}

// workspaceDone reports whether the workspace of job id may go: no supervisor runs it,
// and the job is final (or gone from the store) and its workspace untouched since cutoff.
func (b *Backend) workspaceDone(ctx context.Context, id, ws string, cutoff time.Time) bool {
	lock := &job.LocalProcess{LockPath: filepath.Join(ws, "supervisor.lock"), BootID: bootID()}
	if alive, _ := supervisorAlive(lock); alive {
		return false
	}
	fi, err := os.Stat(ws)
	if err != nil || fi.ModTime().After(cutoff) {
		return false
	}
	s, err := ReadStatus(ctx, b.st, id)
	switch {
	case err == nil:
		return s.State.Terminal() && !s.UpdatedAt.After(cutoff)
	case store.IsNotFound(err):
		// No status: final only if the job itself is gone (cleaned up or collected); a
		// job that still has a handle may be queued.
		ok, err := b.st.Exists(ctx, store.HandleKey(id))
		return err == nil && !ok
	default:
		return false
	}
}

// removeDir removes dir (with dryRun, only measures it) and says whether this call
// removed it: dir is first renamed to a name of this process's own beside it, so of
// two prunes removing the same directory one does, and the other reports nothing.
func removeDir(dir string, dryRun bool) (size int64, removed bool, err error) {
	if dryRun {
		return dirSize(dir), true, nil
	}
	claimed := filepath.Join(filepath.Dir(dir), fmt.Sprintf(".pruning-%d-%s", os.Getpid(), filepath.Base(dir)))
	if err := os.Rename(dir, claimed); errors.Is(err, fs.ErrNotExist) {
		return 0, false, nil
	} else if err != nil {
		return 0, false, err
	}
	size = dirSize(claimed)
	if err := os.RemoveAll(claimed); err != nil {
		return size, true, err
	}
	return size, true, nil
}

// pruneKeptTrees removes the shipped trees long-lived supervisors kept for their next
// job (runner.Options.TreeCache: queues/Q/workers/K/tree, and trees set aside) whose
// supervisor is gone and which are older than cutoff. A supervisor removes its own when
// it leaves; one that was killed leaves it. The worker's lock is held only while a tree
// is renamed aside (a supervisor starting meanwhile waits 200 ms for it at most).
func pruneKeptTrees(queues string, cutoff time.Time, dryRun bool) ([]backend.Freed, error) {
	var freed []backend.Freed
	qs, err := os.ReadDir(queues)
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	for _, q := range qs {
		workers := filepath.Join(queues, q.Name(), "workers")
		ws, _ := os.ReadDir(workers)
		for _, w := range ws {
			trees, _ := filepath.Glob(filepath.Join(workers, w.Name(), "tree*"))
			if !w.IsDir() || len(trees) == 0 {
				continue
			}
			lock, err := lockFile(filepath.Join(workers, w.Name()+".lock"), false)
			if err != nil {
				continue // its supervisor lives (it keeps the tree for its next job)
			}
			var claimed []string
			for _, t := range trees {
				fi, err := os.Stat(t)
				if err != nil || fi.ModTime().After(cutoff) {
					continue
				}
				if dryRun {
					freed = append(freed, backend.Freed{Kind: "kept tree", Path: t, Bytes: dirSize(t)})
					continue
				}
				aside := filepath.Join(workers, w.Name(), fmt.Sprintf(".pruning-%d-%s", os.Getpid(), filepath.Base(t)))
				if os.Rename(t, aside) == nil {
					claimed = append(claimed, t, aside)
				}
			}
			lock.Close()
			for i := 0; i < len(claimed); i += 2 {
				size := dirSize(claimed[i+1])
				if err := os.RemoveAll(claimed[i+1]); err != nil {
					return freed, err
				}
				freed = append(freed, backend.Freed{Kind: "kept tree", Path: claimed[i], Bytes: size})
			}
		}
	}
	return freed, nil
}

// dirSize is the bytes of the regular files under dir.
func dirSize(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}
