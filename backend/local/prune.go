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
	"github.com/kinetic-run/kinetic/internal/dirsize"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/pyenv"
	"github.com/kinetic-run/kinetic/store"
)

// Prune implements backend.Pruner: workspaces of jobs that ended (or are gone from the
// store) more than o.OlderThan ago and whose supervisor no longer runs, the state of
// batches no worker runs, kept trees of supervisors that are gone, then the Python
// environments no remaining workspace's job uses and that no job used for o.OlderThan.
func (b *Backend) Prune(ctx context.Context, o backend.PruneOptions) ([]backend.Freed, error) {
	p := &pruning{cutoff: time.Now().Add(-o.OlderThan), dryRun: o.DryRun, inUse: map[string]bool{}}
	var freed []backend.Freed
	// In order: the environments go last, once the workspaces and batches kept have said
	// which they use.
	for _, step := range []func(context.Context, *pruning) ([]backend.Freed, error){b.pruneWorkspaces, b.pruneGroups, b.pruneKept, b.pruneEnvs} {
		f, err := step(ctx, p)
		freed = append(freed, f...)
		if err != nil {
			return freed, err
		}
	}
	sort.Slice(freed, func(i, j int) bool { return freed[i].Path < freed[j].Path })
	return freed, nil
}

// pruning is one Prune: what it removes, and the environment keys of what it keeps.
type pruning struct {
	cutoff time.Time
	dryRun bool
	inUse  map[string]bool
}

// pruneWorkspaces removes the workspaces of jobs that are done (workspaceDone) and
// notes the environments of the others.
func (b *Backend) pruneWorkspaces(ctx context.Context, p *pruning) ([]backend.Freed, error) {
	dir := filepath.Join(b.o.StateDir, "jobs")
	ents, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	var freed []backend.Freed
	for _, e := range ents {
		if err := ctx.Err(); err != nil {
			return freed, err
		}
		id := e.Name()
		ws := filepath.Join(dir, id)
		if !e.IsDir() || !job.ValidName(id) {
			continue
		}
		if !b.workspaceDone(ctx, id, ws, p.cutoff) {
			b.noteEnv(ctx, id, p.inUse)
			continue
		}
		size, ok, err := removeDir(ws, p.dryRun)
		if err != nil {
			return freed, err
		}
		if ok {
			freed = append(freed, backend.Freed{Kind: "workspace", Path: ws, Bytes: size})
		}
	}
	return freed, nil
}

// noteEnv marks the environment job id uses as in use.
func (b *Backend) noteEnv(ctx context.Context, id string, inUse map[string]bool) {
	if spec, err := b.st.Get(ctx, store.SpecKey(id)); err == nil {
		if s, err := job.DecodeSpec(spec); err == nil && s.EnvKey != "" {
			inUse[s.EnvKey] = true
		}
	}
}

// pruneGroups removes the state of batches run by executors once no worker is left and
// nothing changed since cutoff (their inputs' results are in the store).
func (b *Backend) pruneGroups(ctx context.Context, p *pruning) ([]backend.Freed, error) {
	groups := filepath.Join(b.o.StateDir, "groups")
	ents, err := os.ReadDir(groups)
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	var freed []backend.Freed
	for _, e := range ents {
		g := filepath.Join(groups, e.Name())
		if !e.IsDir() || !job.ValidName(e.Name()) || !b.groupDone(ctx, e.Name(), g, p) {
			continue
		}
		size, ok, err := removeDir(g, p.dryRun)
		if err != nil {
			return freed, err
		}
		if ok {
			freed = append(freed, backend.Freed{Kind: "batch state", Path: g, Bytes: size})
		}
	}
	return freed, nil
}

// groupDone reports whether batch gid's state g may go: no worker runs it (a running
// batch's environment is noted in use, however long ago it was built) and neither it nor
// its done mark changed since cutoff.
func (b *Backend) groupDone(ctx context.Context, gid, g string, p *pruning) bool {
	fi, err := os.Stat(g)
	if err != nil {
		return false
	}
	if len(b.liveWorkers(gid)) > 0 {
		if t, err := layout.ReadTemplate(ctx, b.st, gid); err == nil && t.Spec.EnvKey != "" {
			p.inUse[t.Spec.EnvKey] = true
		}
		return false
	}
	if fi.ModTime().After(p.cutoff) {
		return false
	}
	done, err := os.Stat(filepath.Join(g, "done"))
	return err != nil || !done.ModTime().After(p.cutoff)
}

// pruneKept removes the trees long-lived supervisors kept (pruneKeptTrees).
func (b *Backend) pruneKept(_ context.Context, p *pruning) ([]backend.Freed, error) {
	return pruneKeptTrees(filepath.Join(b.o.StateDir, "queues"), p.cutoff, p.dryRun)
}

// pruneEnvs removes the Python environments no kept job uses and no job used since
// cutoff.
func (b *Backend) pruneEnvs(ctx context.Context, p *pruning) ([]backend.Freed, error) {
	envs := filepath.Join(b.o.StateDir, "envs")
	ents, err := os.ReadDir(envs)
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	var freed []backend.Freed
	for _, e := range ents {
		key := e.Name()
		env := filepath.Join(envs, key)
		if !e.IsDir() || p.inUse[key] || key == "pip-cache" {
			continue
		}
		used, ok := pyenv.LastUsed(env)
		if !ok || used.After(p.cutoff) {
			continue // being built, or used recently
		}
		size := dirsize.Of(env)
		if !p.dryRun {
			removed, err := pyenv.Remove(ctx, envs, key, p.cutoff)
			if err != nil {
				return freed, err
			}
			if !removed {
				continue
			}
		}
		freed = append(freed, backend.Freed{Kind: "environment", Path: env, Bytes: size})
	}
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
		return dirsize.Of(dir), true, nil
	}
	claimed := filepath.Join(filepath.Dir(dir), fmt.Sprintf(".pruning-%d-%s", os.Getpid(), filepath.Base(dir)))
	if err := os.Rename(dir, claimed); errors.Is(err, fs.ErrNotExist) {
		return 0, false, nil
	} else if err != nil {
		return 0, false, err
	}
	size = dirsize.Of(claimed)
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
					freed = append(freed, backend.Freed{Kind: "kept tree", Path: t, Bytes: dirsize.Of(t)})
					continue
				}
				aside := filepath.Join(workers, w.Name(), fmt.Sprintf(".pruning-%d-%s", os.Getpid(), filepath.Base(t)))
				if os.Rename(t, aside) == nil {
					claimed = append(claimed, t, aside)
				}
			}
			lock.Close()
			for i := 0; i < len(claimed); i += 2 {
				size := dirsize.Of(claimed[i+1])
				if err := os.RemoveAll(claimed[i+1]); err != nil {
					return freed, err
				}
				freed = append(freed, backend.Freed{Kind: "kept tree", Path: claimed[i], Bytes: size})
			}
		}
	}
	return freed, nil
}
