package slurm

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/internal/dirsize"
	"github.com/kinetic-run/kinetic/pyenv"
)

var _ backend.Pruner = (*Backend)(nil)

// Prune implements backend.Pruner (`kinetic prune`): the environments in slurm_env_dir
// that no job has used since before o.OlderThan and that no job Slurm lists (this
// user's, pending, running or ended within MinJobAge) was made with, each removed under
// its build lock as the local backend's are. Nothing is asked of Slurm when there is no environment.
func (b *Backend) Prune(ctx context.Context, o backend.PruneOptions) ([]backend.Freed, error) {
	cutoff := time.Now().Add(-o.OlderThan)
	old, err := oldEnvs(b.o.EnvDir, cutoff)
	if err != nil || len(old) == 0 {
		return nil, err
	}
	inUse, err := b.envsInUse(ctx)
	if err != nil {
		return nil, fmt.Errorf("prune the Slurm environments in %s: which ones jobs use: %w", b.o.EnvDir, err)
	}
	var freed []backend.Freed
	for _, key := range old {
		if inUse[key] {
			continue
		}
		env := pyenv.Path(b.o.EnvDir, key)
		size := dirsize.Of(env)
		if !o.DryRun {
			removed, err := pyenv.Remove(ctx, b.o.EnvDir, key, cutoff)
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

// oldEnvs are the keys of the complete environments in dir last used before cutoff.
func oldEnvs(dir string, cutoff time.Time) ([]string, error) {
	if dir == "" {
		return nil, nil
	}
	ents, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var keys []string
	for _, e := range ents {
		if !e.IsDir() || e.Name() == "pip-cache" {
			continue
		}
		if used, ok := pyenv.LastUsed(filepath.Join(dir, e.Name())); ok && used.Before(cutoff) {
			keys = append(keys, e.Name())
		}
	}
	return keys, nil
}

// envsInUse are the environment keys of the jobs Slurm lists (their specs in the store,
// a batch's template for its array tasks): a long job uses the environment it started
// with however long ago that was.
func (b *Backend) envsInUse(ctx context.Context) (map[string]bool, error) {
	hs, err := b.List(ctx)
	if err != nil {
		return nil, err
	}
	keys := map[string]bool{}
	for _, h := range hs {
		spec, err := b.specOf(ctx, h.JobID)
		if err == nil && spec == nil && h.GroupID != "" {
			spec, err = b.groupSpec(ctx, h.GroupID)
		}
		if err != nil {
			return nil, err
		}
		if spec != nil && spec.EnvKey != "" {
			keys[spec.EnvKey] = true
		}
	}
	return keys, nil
}
