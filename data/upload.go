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
	t, err := hashTree(ctx, ref.Path)
	if err != nil {
		return fmt.Errorf("upload data %q: %w", ref.Source, err)
	}
	if warn != nil {
		for i, n := range t.skipped {
			if i == 5 {
				warn(fmt.Sprintf("... and %d more symlinks left out of Data(%q)", len(t.skipped)-i, ref.Source))
				break
			}
			warn(n)
		}
	}
	if t.dir != (ref.Kind == LocalDir) {
		return fmt.Errorf("upload data %q: %s changed between a file and a directory since it was parsed", ref.Source, ref.Path)
	}
	sum := t.hex()
	ref.Hash, ref.Prefix = sum, Prefix(sum)

	var mu sync.Mutex
	var done int64
	report := func(n int64) {
		if progress == nil {
			return
		}
		mu.Lock()
		done += n
		progress(done, t.bytes)
		mu.Unlock()
	}

	ok, err := st.Exists(ctx, MarkerKey(sum))
	if err != nil {
		return fmt.Errorf("upload data %q: %w", ref.Source, err)
	}
	if ok {
		report(t.bytes)
		return nil
	}
	have := map[string]int64{}
	objs, err := st.List(ctx, FilesPrefix(sum))
	if err != nil {
		return fmt.Errorf("upload data %q: %w", ref.Source, err)
	}
	for _, o := range objs {
		have[o.Key] = o.Size
	}

	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(UploadWorkers)
	for _, e := range t.files {
		key := FilesPrefix(sum) + e.rel
		if size, ok := have[key]; ok && size == e.size {
			// Written whole by an earlier upload (writes are atomic) under this hash.
			report(e.size)
			continue
		}
		g.Go(func() error {
			f, err := os.Open(e.abs)
			if err != nil {
				return err
			}
			defer f.Close()
			h := sha256.New()
			newFileHash(h, e.rel)
			r := &verifyingReader{r: f, h: h, want: e.sum, size: e.size, name: e.abs, report: report}
			if _, err := st.PutFrom(gctx, key, r); err != nil {
				return err
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return fmt.Errorf("upload data %q: %w", ref.Source, err)
	}

	m := manifest{Version: 1, Kind: ref.Kind, Hash: sum, Bytes: t.bytes, Files: make([]manifestFile, len(t.files))}
	for i, e := range t.files {
		m.Files[i] = manifestFile{Path: e.rel, Size: e.size, Digest: hex.EncodeToString(e.sum[:])}
	}
	body, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if err := st.Put(ctx, MarkerKey(sum), body); err != nil {
		return fmt.Errorf("upload data %q: %w", ref.Source, err)
	}
	return nil
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
