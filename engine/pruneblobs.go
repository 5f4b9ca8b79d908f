package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/data"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/pack"
	"github.com/kinetic-run/kinetic/store"
)

// BlobGrace is the least age of a content blob (or uploaded Data) that `kinetic prune`
// removes, whatever --older-than says: a submission uploads its blobs before it writes
// the spec that references them, so a blob younger than this may belong to a job being
// written right now.
const BlobGrace = time.Hour

// pruneNow is the clock content ages are read against (a test's later hour: a bucket's
// modification times cannot be set back).
var pruneNow = time.Now

const blobsPrefix = "blobs/sha256/"
const dataPrefix = "data/sha256/"

// contentRefs are the content a store's kept jobs reference: blob keys and the hashes
// of uploaded Data.
type contentRefs struct {
	blobs map[string]bool
	data  map[string]bool
}

// pruneContent removes the content blobs (blobs/sha256/) and uploaded Data
// (data/sha256/) that no job in the store references, through its spec (payload,
// working directory manifest and the blobs and packs it names, Data) or its batch's
// template, and that are older than o.OlderThan and BlobGrace. The references are read
// twice, before and after the candidates are listed, so that a job written meanwhile
// keeps what it uses; a reference that cannot be read stops the prune of content (never
// a guess).
// templateReader reads the specs of the batches whose jobs are made from a template
// (Unwritten.Templates).
type templateReader func(ctx context.Context, st *store.Store) ([]*job.Spec, error)

func pruneContent(ctx context.Context, st *store.Store, o backend.PruneOptions, templates templateReader) ([]backend.Freed, error) {
	cutoff := pruneNow().Add(-max(o.OlderThan, BlobGrace))
	refs, err := readContentRefs(ctx, st, templates)
	if err != nil {
		return nil, err
	}
	cands, err := unreferenced(ctx, st, refs, cutoff)
	if err != nil || len(cands) == 0 {
		return nil, err
	}
	if refs, err = readContentRefs(ctx, st, templates); err != nil {
		return nil, err
	}
	var freed []backend.Freed
	for _, c := range cands {
		if refs.holds(c) {
			continue // a job written since the first look uses it
		}
		if !o.DryRun {
			ok, err := removeContent(ctx, st, c)
			if err != nil {
				return freed, err
			}
			if !ok {
				continue // another prune removed it
			}
		}
		freed = append(freed, backend.Freed{Kind: c.Kind, Path: st.URL() + "/" + c.Path, Bytes: c.Bytes})
	}
	return freed, nil
}

// holds reports whether candidate c (a Freed whose Path is a store key) is referenced.
func (r contentRefs) holds(c backend.Freed) bool {
	if c.Kind == "blob" {
		return r.blobs[c.Path]
	}
	return r.data[strings.TrimSuffix(strings.TrimPrefix(c.Path, dataPrefix), "/")]
}

// removeContent removes candidate c; false when it was gone already.
func removeContent(ctx context.Context, st *store.Store, c backend.Freed) (bool, error) {
	if c.Kind == "blob" {
		return st.Remove(ctx, c.Path)
	}
	// The marker first: Data without its marker is not there for any reader.
	ok, err := st.Remove(ctx, c.Path+".complete")
	if err != nil {
		return false, err
	}
	if err := st.DeletePrefix(ctx, c.Path); err != nil {
		return ok, err
	}
	return true, nil
}

// readContentRefs walks every job's spec and every batch template in st.
func readContentRefs(ctx context.Context, st *store.Store, templates templateReader) (contentRefs, error) {
	r := contentRefs{blobs: map[string]bool{}, data: map[string]bool{}}
	specs, err := st.ListNamed(ctx, store.JobsPrefix, "spec.json")
	if err != nil {
		return r, err
	}
	for _, o := range specs {
		raw, err := st.Get(ctx, o.Key)
		if store.IsNotFound(err) {
			continue // cleaned up meanwhile
		}
		if err != nil {
			return r, fmt.Errorf("prune: read %s: %w", o.Key, err)
		}
		s, err := job.DecodeSpec(raw)
		if err != nil {
			return r, fmt.Errorf("prune: %s cannot be read (%v), so what it uses is not known and no content blob was removed: `kinetic jobs cleanup` that job, then prune again", o.Key, err)
		}
		if err := r.addSpec(ctx, st, s); err != nil {
			return r, err
		}
	}
	if templates == nil {
		return r, errors.New("prune: this program reads no batch templates (engine.WithUnwritten), so what batches use is not known and no content blob was removed")
	}
	specs2, err := templates(ctx, st)
	if err != nil {
		return r, fmt.Errorf("prune: no content blob was removed: %w", err)
	}
	for _, s := range specs2 {
		if err := r.addSpec(ctx, st, s); err != nil {
			return r, err
		}
	}
	return r, nil
}

// addSpec adds what spec s uses: its payload and working directory blobs (the
// manifest, and the files and packs it names) and its Data.
func (r contentRefs) addSpec(ctx context.Context, st *store.Store, s *job.Spec) error {
	for _, b := range []*job.BlobRef{s.Payload, s.Args} {
		if b != nil && store.IsBlobKey(b.Key) {
			r.blobs[b.Key] = true
		}
	}
	for _, d := range s.Data {
		if d.Kind.IsLocal() && d.Hash != "" {
			r.data[d.Hash] = true
		}
	}
	if s.Workdir == nil || !store.IsBlobKey(s.Workdir.Key) {
		return nil
	}
	if r.blobs[s.Workdir.Key] {
		return nil // the same tree as another job's: its blobs are in already
	}
	r.blobs[s.Workdir.Key] = true
	raw, err := st.Get(ctx, s.Workdir.Key)
	if store.IsNotFound(err) {
		return nil // lost already: nothing of it can be kept
	}
	if err != nil {
		return fmt.Errorf("prune: read %s: %w", s.Workdir.Key, err)
	}
	m, err := pack.ParseManifest(raw)
	if err != nil {
		return fmt.Errorf("prune: the working directory manifest %s of job %s cannot be read (%v), so no content blob was removed: `kinetic jobs cleanup %s`, then prune again", s.Workdir.Key, s.JobID, err, s.JobID)
	}
	for _, p := range m.Packs {
		r.blobs[store.BlobKey(p.SHA256)] = true
	}
	for _, e := range m.Entries {
		if e.Type == pack.TypeFile && e.Pack == nil && e.SHA256 != "" {
			r.blobs[store.BlobKey(e.SHA256)] = true
		}
	}
	return nil
}

// unreferenced lists the blobs and uploaded Data that refs does not name and that
// were last written before cutoff, as Freed with store keys for paths.
func unreferenced(ctx context.Context, st *store.Store, refs contentRefs, cutoff time.Time) ([]backend.Freed, error) {
	blobs, err := st.List(ctx, blobsPrefix)
	if err != nil {
		return nil, err
	}
	var out []backend.Freed
	for _, b := range blobs {
		if store.IsBlobKey(b.Key) && !refs.blobs[b.Key] && !b.ModTime.IsZero() && b.ModTime.Before(cutoff) {
			out = append(out, backend.Freed{Kind: "blob", Path: b.Key, Bytes: b.Size})
		}
	}
	hashes, err := st.ListDirs(ctx, dataPrefix)
	if err != nil {
		return out, err
	}
	for _, h := range hashes {
		h = strings.TrimSuffix(h, "/")
		if refs.data[h] {
			continue
		}
		objs, err := st.List(ctx, data.Prefix(h))
		if err != nil {
			return out, err
		}
		if size, old := sizeIfOlder(objs, cutoff); old {
			out = append(out, backend.Freed{Kind: "data", Path: data.Prefix(h), Bytes: size})
		}
	}
	return out, nil
}

// sizeIfOlder is the bytes of objs, and whether every one was written before cutoff
// (an upload still writing has a young file).
func sizeIfOlder(objs []store.Object, cutoff time.Time) (int64, bool) {
	var n int64
	for _, o := range objs {
		if o.ModTime.IsZero() || !o.ModTime.Before(cutoff) {
			return 0, false
		}
		n += o.Size
	}
	return n, len(objs) > 0
}
