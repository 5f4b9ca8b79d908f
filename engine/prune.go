package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/internal/outdir"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/jobview"
	"github.com/kinetic-run/kinetic/store"
)

// Prune removes what no job needs any more (`kinetic prune`): what the backends that
// keep state on this machine say they can free (backend.Pruner: the local backend's
// workspaces and environments), tombstones of jobs collected more than o.OlderThan ago,
// in a file:// store, the empty output directories of jobs that ended or are gone, and
// the content blobs and uploaded Data no job in the store references (pruneContent).
// Outputs with anything in them are never removed. With o.DryRun nothing is removed.
func (e *Engine) Prune(ctx context.Context, storeURL string, o backend.PruneOptions) ([]backend.Freed, error) {
	if storeURL == "" {
		storeURL = e.cfg.Get(config.Store)
	}
	st, err := e.Store(ctx, storeURL)
	if err != nil {
		return nil, err
	}
	var freed []backend.Freed
	for _, name := range backend.Names() {
		if !backend.SharesFiles(name) {
			continue
		}
		be, err := e.backendFor(&job.Handle{Backend: name}, st)
		if err != nil {
			return nil, err
		}
		if p, ok := be.(backend.Pruner); ok {
			f, err := p.Prune(ctx, o)
			freed = append(freed, f...)
			if err != nil {
				return freed, fmt.Errorf("prune the %s backend: %w", name, err)
			}
		}
	}
	cutoff := time.Now().Add(-o.OlderThan)
	tombs, err := e.Tombstones(ctx, storeURL) // not the jobs: listing them is work for nothing here
	if err != nil {
		return freed, err
	}
	for _, t := range tombs {
		if t.CleanedAt.After(cutoff) {
			continue
		}
		if !o.DryRun {
			// Only what this run removed: a prune running beside it reports the rest.
			if removed, err := st.Remove(ctx, store.TombstoneKey(t.JobID)); err != nil {
				return freed, err
			} else if !removed {
				continue
			}
		}
		freed = append(freed, backend.Freed{Kind: "tombstone", Path: storeURL + "/" + store.TombstoneKey(t.JobID), Bytes: int64(len(t.Encode()))})
	}
	if dir := st.LocalDir(); dir != "" {
		f, err := pruneEmptyOutputs(ctx, st, filepath.Join(dir, "outputs"), cutoff, o.DryRun)
		freed = append(freed, f...)
		if err != nil {
			return freed, err
		}
	}
	// Content last: what the jobs removed above referenced is then unreferenced.
	var templates templateReader
	if e.unwritten != nil {
		templates = e.unwritten.Templates
	}
	f, err := pruneContent(ctx, st, o, templates)
	return append(freed, f...), err
}

// pruneEmptyOutputs removes the empty outputs/ID directories of jobs that are final or
// gone, untouched since cutoff.
func pruneEmptyOutputs(ctx context.Context, st *store.Store, dir string, cutoff time.Time, dryRun bool) ([]backend.Freed, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, err
	}
	var freed []backend.Freed
	for _, e := range ents {
		id := e.Name()
		p := filepath.Join(dir, id)
		spare := strings.HasPrefix(id, outdir.SparePrefix) // a dead batch worker's (internal/outdir)
		if !e.IsDir() || !spare && !job.ValidName(id) {
			continue
		}
		if inner, err := os.ReadDir(p); err != nil || len(inner) > 0 {
			continue
		}
		if fi, err := os.Stat(p); err != nil || fi.ModTime().After(cutoff) {
			continue
		}
		if spare {
			if !dryRun && os.Remove(p) != nil {
				continue // a live worker renamed it away meanwhile
			}
			freed = append(freed, backend.Freed{Kind: "output directory", Path: p})
			continue
		}
		if s, err := jobview.ReadStatus(ctx, st, id); err == nil && !s.State.Terminal() {
			continue // still running: it may write its outputs yet
		} else if store.IsNotFound(err) {
			if ok, err := st.Exists(ctx, store.HandleKey(id)); err != nil || ok {
				continue // a job with no status yet: queued, or starting
			}
		} else if err != nil {
			continue
		}
		if !dryRun {
			if err := os.Remove(p); err != nil {
				continue // something was written meanwhile, or another prune removed it
			}
		}
		freed = append(freed, backend.Freed{Kind: "output directory", Path: p})
	}
	return freed, nil
}
