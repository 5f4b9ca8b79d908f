package data

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"os"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/kinetic-run/kinetic/store"
)

// Store layout of uploaded local data (keys relative to the store):
//
//	data/sha256/<hash>/files/<rel>   one object per file, at its relative path
//	                                 (a single file: files/<base name>)
//	data/sha256/<hash>/.complete     the completion marker (a JSON manifest), written last
//
// Data is complete only when the marker exists. Files live under files/ so that no user
// file (a top-level ".complete", say) can be mistaken for the marker.

// Prefix returns the store prefix of the local data with content hash sum.
func Prefix(sum string) string { return "data/sha256/" + sum + "/" }

// MarkerKey returns the key of the completion marker of the data with hash sum.
func MarkerKey(sum string) string { return Prefix(sum) + ".complete" }

// FilesPrefix returns the prefix under which the files of the data with hash sum live.
func FilesPrefix(sum string) string { return Prefix(sum) + "files/" }

// UploadWorkers bounds the concurrent object writes (and reads, in Materialize).
const UploadWorkers = 16

// manifest is the completion marker's content: the files in hash order with their
// per-file digests, so the worker can check the marker against the hash and every file
// against its digest.
type manifest struct {
	Version int            `json:"version"`
	Kind    Kind           `json:"kind"`
	Hash    string         `json:"hash"`
	Bytes   int64          `json:"bytes"`
	Files   []manifestFile `json:"files"`
}

type manifestFile struct {
	Path   string `json:"path"`   // relative, "/"-separated
	Size   int64  `json:"size"`   // bytes
	Digest string `json:"digest"` // hex fileDigest: SHA-256(path || 0x00 || contents)
}

// Upload hashes local data and uploads it to st under Prefix(hash), unless the store
// already holds it complete (the marker exists), in which case nothing is written. It
// sets ref.Hash and ref.Prefix. Files are uploaded in parallel and checked against the
// digests just computed as they stream (a file changed meanwhile fails the upload); files
// a crashed earlier upload left behind are kept; the marker is written last. progress, if
// not nil, is called with bytes done and total (never concurrently). Non-local refs need
// no upload: Upload returns nil for them.
func Upload(ctx context.Context, st *store.Store, ref *Ref, progress func(done, total int64)) error {
	return UploadWarn(ctx, st, ref, progress, nil)
}

// UploadWarn is Upload; warn, if not nil, hears of each symlink left out because it
// leads out of the dataset (docs/data.md).
func UploadWarn(ctx context.Context, st *store.Store, ref *Ref, progress func(done, total int64), warn func(string)) error {
	if !ref.Kind.IsLocal() {
		return nil
	}
	if ref.Path == "" {
		return fmt.Errorf("upload data %q: the ref has no local path (make it with Parse)", ref.Source)
	}
	u := &dataUpload{st: st, ref: ref, progress: progress, warn: warn}
	for _, s := range dataUploadSteps {
		if stop, err := s.run(u, ctx); stop || err != nil {
			return err
		}
	}
	return nil
}

// dataUpload is one UploadWarn: its steps, in dataUploadSteps' order, share what they
// found.
type dataUpload struct {
	st       *store.Store
	ref      *Ref
	progress func(done, total int64)
	warn     func(string)
	t        *tree
	sum      string
	have     map[string]int64 // files an earlier upload left: key → size

	mu   sync.Mutex // guards done
	done int64
}

// dataUploadSteps are UploadWarn's steps, in order; a step stops it with an error, or
// with stop when there is nothing more to do.
var dataUploadSteps = []struct {
	name string
	run  func(*dataUpload, context.Context) (stop bool, err error)
}{
	{"hash", (*dataUpload).hash},
	{"complete already", (*dataUpload).complete},
	{"files left before", (*dataUpload).listHave},
	{"files", (*dataUpload).putFiles},
	{"marker", (*dataUpload).putMarker},
}

// hash hashes the tree, tells of the symlinks left out, and sets ref's hash and prefix.
func (u *dataUpload) hash(ctx context.Context) (bool, error) {
	t, err := hashTree(ctx, u.ref.Path)
	if err != nil {
		return false, fmt.Errorf("upload data %q: %w", u.ref.Source, err)
	}
	u.t = t
	u.warnSkipped()
	if t.dir != (u.ref.Kind == LocalDir) {
		return false, fmt.Errorf("upload data %q: %s changed between a file and a directory since it was parsed", u.ref.Source, u.ref.Path)
	}
	u.sum = t.hex()
	u.ref.Hash, u.ref.Prefix = u.sum, Prefix(u.sum)
	return false, nil
}

// warnSkipped tells warn of the first five symlinks left out, and how many more.
func (u *dataUpload) warnSkipped() {
	if u.warn == nil {
		return
	}
	for i, n := range u.t.skipped {
		if i == 5 {
			u.warn(fmt.Sprintf("... and %d more symlinks left out of Data(%q)", len(u.t.skipped)-i, u.ref.Source))
			break
		}
		u.warn(n)
	}
}

// report adds n bytes done.
func (u *dataUpload) report(n int64) {
	if u.progress == nil {
		return
	}
	u.mu.Lock()
	u.done += n
	u.progress(u.done, u.t.bytes)
	u.mu.Unlock()
}

// complete stops the upload when the store holds the data complete (its marker exists).
func (u *dataUpload) complete(ctx context.Context) (bool, error) {
	ok, err := u.st.Exists(ctx, MarkerKey(u.sum))
	if err != nil {
		return false, fmt.Errorf("upload data %q: %w", u.ref.Source, err)
	}
	if ok {
		u.report(u.t.bytes)
	}
	return ok, nil
}

// listHave lists the files an earlier, unfinished upload of the same hash left.
func (u *dataUpload) listHave(ctx context.Context) (bool, error) {
	objs, err := u.st.List(ctx, FilesPrefix(u.sum))
	if err != nil {
		return false, fmt.Errorf("upload data %q: %w", u.ref.Source, err)
	}
	u.have = make(map[string]int64, len(objs))
	for _, o := range objs {
		u.have[o.Key] = o.Size
	}
	return false, nil
}

// putFiles uploads, in parallel, the files the store does not hold whole.
func (u *dataUpload) putFiles(ctx context.Context) (bool, error) {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(UploadWorkers)
	for _, e := range u.t.files {
		key := FilesPrefix(u.sum) + e.rel
		if size, ok := u.have[key]; ok && size == e.size {
			// Written whole by an earlier upload (writes are atomic) under this hash.
			u.report(e.size)
			continue
		}
		g.Go(func() error { return u.putFile(gctx, key, e) })
	}
	if err := g.Wait(); err != nil {
		return false, fmt.Errorf("upload data %q: %w", u.ref.Source, err)
	}
	return false, nil
}

// putFile streams file e to key, checking it against the digest just computed.
func (u *dataUpload) putFile(ctx context.Context, key string, e *fileEntry) error {
	f, err := os.Open(e.abs)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	newFileHash(h, e.rel)
	r := &verifyingReader{r: f, h: h, want: e.sum, size: e.size, name: e.abs, report: u.report}
	_, err = u.st.PutFrom(ctx, key, r)
	return err
}

// putMarker writes the completion marker, last.
func (u *dataUpload) putMarker(ctx context.Context) (bool, error) {
	m := manifest{Version: 1, Kind: u.ref.Kind, Hash: u.sum, Bytes: u.t.bytes, Files: make([]manifestFile, len(u.t.files))}
	for i, e := range u.t.files {
		m.Files[i] = manifestFile{Path: e.rel, Size: e.size, Digest: hex.EncodeToString(e.sum[:])}
	}
	body, err := json.Marshal(m)
	if err != nil {
		return false, err
	}
	if err := u.st.Put(ctx, MarkerKey(u.sum), body); err != nil {
		return false, fmt.Errorf("upload data %q: %w", u.ref.Source, err)
	}
	return false, nil
}

// verifyingReader passes r through and, at its end, fails unless what was read has the
// expected size and file digest. The failure makes the store abandon the write.
type verifyingReader struct {
	r      io.Reader
	h      hash.Hash
	want   [32]byte
	size   int64
	n      int64
	name   string
	report func(int64)
}

func (v *verifyingReader) Read(p []byte) (int, error) {
	n, err := v.r.Read(p)
	v.h.Write(p[:n])
	v.n += int64(n)
	if n > 0 && v.report != nil {
		v.report(int64(n))
	}
	if err == io.EOF {
		var got [32]byte
		v.h.Sum(got[:0])
		if got != v.want || v.n != v.size {
			return n, fmt.Errorf("%s changed while it was being uploaded (size %d, hashed as %d bytes); run again when it is stable", v.name, v.n, v.size)
		}
	}
	return n, err
}
