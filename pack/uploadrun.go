package pack

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/kinetic-run/kinetic/store"
)

// uploadRun is one Upload: its steps, in uploadSteps' order, share what they found.
type uploadRun struct {
	st *store.Store
	m  *Manifest
	o  UploadOptions

	mu    sync.Mutex // guards stats, packSizes and newPacks while put runs
	stats UploadStats

	units     map[string]*unit // distinct contents by SHA-256
	order     []*unit          // the same, in path order
	idx       *packIndex
	check     map[string]bool  // blob key → the store holds it, whole
	packSizes map[string]int64 // the packs the manifest references
	newPacks  map[string]int64 // the packs this upload cut
	chunks    [][]*unit        // the new packs' contents
	ref       ManifestRef
}

// uploadSteps are Upload's steps, in order; the first error stops it.
var uploadSteps = []struct {
	name string
	run  func(*uploadRun, context.Context) error
}{
	{"distinct contents", (*uploadRun).distinct},
	{"what the store holds", (*uploadRun).findStored},
	{"cut packs", (*uploadRun).cutPacks},
	{"put", (*uploadRun).put},
	{"locations", (*uploadRun).locate},
	{"manifest", (*uploadRun).putManifest},
	{"remember packs", (*uploadRun).remember},
}

func (o UploadOptions) withDefaults() UploadOptions {
	if o.Parallelism <= 0 {
		o.Parallelism = DefaultParallelism
	}
	if o.LargeFileSize <= 0 {
		o.LargeFileSize = DefaultLargeFileSize
	}
	if o.PackSize <= 0 {
		o.PackSize = DefaultPackSize
	}
	return o
}

// distinct collects the distinct non-empty contents, in path order.
func (r *uploadRun) distinct(context.Context) error {
	for _, e := range r.m.Entries {
		if e.Type != TypeFile {
			continue
		}
		r.stats.Files++
		r.stats.Bytes += e.Size
		if e.Size > 0 && r.units[e.SHA256] == nil {
			u := &unit{sum: e.SHA256, size: e.Size, rel: e.Path, large: e.Size >= r.o.LargeFileSize}
			r.units[e.SHA256] = u
			r.order = append(r.order, u)
		}
	}
	return nil
}

// findStored asks the store for the large blobs and the packs the index points to, and
// marks what it holds as stored.
func (r *uploadRun) findStored(ctx context.Context) error {
	r.idx = loadPackIndex(r.o.CacheDir, r.st.URL())
	r.check = map[string]bool{}
	sizes := map[string]int64{} // key → the size it must have
	for _, u := range r.order {
		if key, size, ok := r.candidate(u); ok {
			r.check[key], sizes[key] = false, size
		}
	}
	if err := existAll(ctx, r.st, r.check, sizes, r.o.Parallelism); err != nil {
		return err
	}
	r.reuse()
	return nil
}

// candidate is the blob that may already hold u's bytes: its own for a large content,
// else the pack the index places it in.
func (r *uploadRun) candidate(u *unit) (key string, size int64, ok bool) {
	if u.large {
		return store.BlobKey(u.sum), u.size, true
	}
	if loc, ok := r.idx.Files[u.sum]; ok {
		return store.BlobKey(loc.Pack), r.idx.Packs[loc.Pack], true
	}
	return "", 0, false
}

// indexed is where the index places small content u, in a pack the store holds.
func (r *uploadRun) indexed(u *unit) (packLoc, bool) {
	loc, ok := r.idx.Files[u.sum]
	return loc, ok && r.check[store.BlobKey(loc.Pack)]
}

// reuse marks the large contents the store holds, and the small ones in a stored pack
// worth reusing, as stored.
func (r *uploadRun) reuse() {
	useful := map[string]int64{} // pack → the bytes of it this tree needs
	for _, u := range r.order {
		if u.large {
			u.stored = r.check[store.BlobKey(u.sum)]
		} else if loc, ok := r.indexed(u); ok && r.idx.Packs[loc.Pack] > 0 {
			useful[loc.Pack] += u.size
		}
	}
	for _, u := range r.order {
		if u.large {
			continue
		}
		if loc, ok := r.indexed(u); ok && reusable(loc, u, r.idx.Packs[loc.Pack], useful[loc.Pack]) {
			u.pack, u.off, u.stored = loc.Pack, loc.Off, true
			r.packSizes[loc.Pack] = r.idx.Packs[loc.Pack]
		}
	}
}

// reusable says whether u's bytes may be taken from the pack of size bytes at loc, of
// which this tree needs useful bytes. A pack is reused only if this tree needs at least
// a quarter of it: the runner fetches whole packs, so a mostly stale pack is cheaper to
// repack.
func reusable(loc packLoc, u *unit, size, useful int64) bool {
	return size > 0 && loc.Off >= 0 && loc.Off+u.size <= size && useful*4 >= size
}

// cutPacks cuts new packs from the small contents not yet stored.
func (r *uploadRun) cutPacks(context.Context) error {
	var cur []*unit
	var curSize int64
	cut := func() { r.chunks, cur, curSize = append(r.chunks, cur), nil, 0 }
	for _, u := range r.order {
		if u.large || u.stored {
			continue
		}
		if len(cur) > 0 && curSize+u.size > 4*r.o.PackSize {
			cut()
		}
		cur, curSize = append(cur, u), curSize+u.size
		// A content-chosen cut point (a quarter of files qualify) once the pack is big
		// enough: an edit moves at most the cuts next to it.
		if curSize >= r.o.PackSize && u.sum[63]&3 == 0 {
			cut()
		}
	}
	if len(cur) > 0 {
		cut()
	}
	return nil
}

// put stores the new packs and the large contents the store lacks, in parallel.
func (r *uploadRun) put(ctx context.Context) error {
	prog := &progress{fn: r.o.Progress, total: r.pending()}
	prog.add(0)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(r.o.Parallelism)
	for _, c := range r.chunks {
		g.Go(func() error { return r.storePack(gctx, c, prog) })
	}
	for _, u := range r.order {
		if u.large && !u.stored {
			g.Go(func() error { return r.storeLarge(gctx, u, prog) })
		}
	}
	return g.Wait()
}

// pending is the bytes that may need uploading: every content not yet stored (the small
// ones are all in chunks).
func (r *uploadRun) pending() int64 {
	var total int64
	for _, u := range r.order {
		if !u.stored {
			total += u.size
		}
	}
	return total
}

func (r *uploadRun) storePack(ctx context.Context, c []*unit, prog *progress) error {
	sum, size, written, err := putPack(ctx, r.st, r.m.Root, c, prog)
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.newPacks[sum] = size
	r.packSizes[sum] = size
	for _, u := range c {
		u.pack = sum
		u.stored = !written
	}
	r.mu.Unlock()
	if written {
		r.wrote(size)
	}
	return nil
}

func (r *uploadRun) storeLarge(ctx context.Context, u *unit, prog *progress) error {
	if err := putFile(ctx, r.st, r.m.Root, u, prog); err != nil {
		return err
	}
	r.wrote(u.size)
	return nil
}

// wrote counts one object of n bytes written to the store.
func (r *uploadRun) wrote(n int64) {
	r.mu.Lock()
	r.stats.UploadedBytes += n
	r.stats.UploadedObjects++
	r.mu.Unlock()
}

// locate fills in m's packs, sorted by SHA-256, and each file's pack and offset.
func (r *uploadRun) locate(context.Context) error {
	sums := slices.Sorted(maps.Keys(r.packSizes))
	packIdx := make(map[string]int, len(sums))
	r.m.Packs = make([]PackRef, len(sums))
	for i, s := range sums {
		r.m.Packs[i] = PackRef{SHA256: s, Size: r.packSizes[s]}
		packIdx[s] = i
	}
	for i := range r.m.Entries {
		r.locateEntry(&r.m.Entries[i], packIdx)
	}
	if err := r.m.validate(); err != nil {
		return fmt.Errorf("upload working directory: %w", err)
	}
	return nil
}

func (r *uploadRun) locateEntry(e *Entry, packIdx map[string]int) {
	e.Pack, e.Offset = nil, 0
	if e.Type != TypeFile {
		return
	}
	u := r.units[e.SHA256]
	if u == nil || u.stored {
		r.stats.ReusedFiles++
	}
	if u != nil && u.pack != "" {
		p := packIdx[u.pack]
		e.Pack, e.Offset = &p, u.off
	}
}

// putManifest stores the manifest content-addressed, unless the store holds it.
func (r *uploadRun) putManifest(ctx context.Context) error {
	b, err := r.m.Marshal()
	if err != nil {
		return err
	}
	h := sha256.Sum256(b)
	r.ref = ManifestRef{SHA256: hex.EncodeToString(h[:]), Size: int64(len(b))}
	r.ref.Key = store.BlobKey(r.ref.SHA256)
	ok, err := r.st.HasBlob(ctx, r.ref.Key, r.ref.Size)
	if err != nil || ok {
		return err
	}
	if err := r.st.Put(ctx, r.ref.Key, b); err != nil {
		return err
	}
	r.wrote(int64(len(b)))
	return nil
}

// remember saves the new packs in the index, forgetting those the store turned out not
// to hold.
func (r *uploadRun) remember(context.Context) error {
	for key, ok := range r.check {
		if !ok {
			r.idx.forgetPack(key[len(store.BlobKey("")):])
		}
	}
	for _, u := range r.order {
		if _, isNew := r.newPacks[u.pack]; isNew {
			r.idx.Files[u.sum] = packLoc{Pack: u.pack, Off: u.off}
		}
	}
	maps.Copy(r.idx.Packs, r.newPacks)
	r.idx.save()
	return nil
}
