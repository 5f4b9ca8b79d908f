package pack

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/kinetic-run/kinetic/errs"
	"github.com/kinetic-run/kinetic/internal/atomicfile"
	"github.com/kinetic-run/kinetic/store"
)

// Defaults for UploadOptions.
const (
	DefaultLargeFileSize = 1 << 20 // files this big or bigger are blobs of their own
	DefaultPackSize      = 4 << 20 // packs are cut between this and 4× this
	DefaultParallelism   = 8
)

// ErrFileChanged is wrapped when a file no longer has the content Scan recorded: scan
// again and retry.
var ErrFileChanged = errs.New(errs.FailedPrecondition, "file changed since it was scanned")

// ManifestRef names an uploaded manifest: the job spec carries it to the runner.
type ManifestRef struct {
	Key    string `json:"key"`    // store.BlobKey(SHA256)
	SHA256 string `json:"sha256"` // of the manifest's bytes
	Size   int64  `json:"size"`
}

// UploadOptions tune Upload.
type UploadOptions struct {
	// CacheDir holds the pack index: which file contents this machine already put into
	// which pack of which store. "" = no index (unchanged trees are still not uploaded
	// again, since packs are cut deterministically, but changed trees re-upload more).
	CacheDir string
	// Parallelism bounds concurrent store calls (default DefaultParallelism).
	Parallelism int
	// LargeFileSize: files at least this big are stored as blobs of their own
	// (default DefaultLargeFileSize).
	LargeFileSize int64
	// PackSize: small files are concatenated into packs of PackSize to 4×PackSize bytes
	// (default DefaultPackSize).
	PackSize int64
	// Progress, if set, is called with the bytes uploaded (or found already stored) so
	// far and the bytes that may need uploading, from one goroutine at a time.
	Progress func(done, total int64)
}

// UploadStats report what Upload did.
type UploadStats struct {
	Files           int   // regular files in the manifest
	Bytes           int64 // their total size
	UploadedBytes   int64 // bytes written to the store, the manifest included
	UploadedObjects int   // objects written, the manifest included
	ReusedFiles     int   // files whose bytes the store already held
}

// unit is one distinct file content.
type unit struct {
	sum    string
	size   int64
	rel    string // the first path holding it
	large  bool
	pack   string // pack SHA-256 once placed in a pack
	off    int64
	stored bool // the store held it before this upload
}

// Upload stores what the store lacks of m's content, fills in m's locations (m.Packs and
// each file's Pack and Offset), and stores the manifest itself content-addressed. Files
// are read from m.Root and checked against the hashes Scan recorded (ErrFileChanged).
//
// Large files become blobs (store.BlobKey of their SHA-256), uploaded only if missing.
// Small files the pack index says are in a pack of this store are reused after one
// Exists per such pack; the rest are concatenated into new packs, cut at file boundaries
// chosen by content, so the same files give the same packs and an unchanged tree uploads
// nothing even without the index. A pack is never referenced unless Exists confirmed it
// or this call wrote it.
func Upload(ctx context.Context, st *store.Store, m *Manifest, o UploadOptions) (ManifestRef, UploadStats, error) {
	if m.Root == "" {
		return ManifestRef{}, UploadStats{}, errors.New("upload working directory: the manifest has no local root (use the one Scan returned)")
	}
	r := &uploadRun{st: st, m: m, o: o.withDefaults(), units: map[string]*unit{}, packSizes: map[string]int64{}, newPacks: map[string]int64{}}
	for _, s := range uploadSteps {
		if err := s.run(r, ctx); err != nil {
			return ManifestRef{}, r.stats, err
		}
	}
	return r.ref, r.stats, nil
}

// existAll sets keys[k] to whether the store holds blob k with the size sizes[k] (a
// blob of another size is damaged: it is uploaded again).
func existAll(ctx context.Context, st *store.Store, keys map[string]bool, sizes map[string]int64, par int) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(par)
	var mu sync.Mutex
	list := make([]string, 0, len(keys))
	for k := range keys {
		list = append(list, k)
	}
	for _, k := range list {
		g.Go(func() error {
			ok, err := st.HasBlob(gctx, k, sizes[k])
			if err != nil {
				return err
			}
			mu.Lock()
			keys[k] = ok
			mu.Unlock()
			return nil
		})
	}
	return g.Wait()
}

// putPack builds one pack from files under root, checking each against its hash, and
// stores it unless the store already holds it. It sets each unit's offset.
func putPack(ctx context.Context, st *store.Store, root string, c []*unit, prog *progress) (sum string, size int64, written bool, err error) {
	var n int64
	for _, u := range c {
		n += u.size
	}
	buf := bytes.NewBuffer(make([]byte, 0, n))
	for _, u := range c {
		if err := ctx.Err(); err != nil {
			return "", 0, false, err
		}
		u.off = int64(buf.Len())
		if err := readChecked(filepath.Join(root, filepath.FromSlash(u.rel)), u, buf); err != nil {
			return "", 0, false, err
		}
	}
	h := sha256.Sum256(buf.Bytes())
	sum = hex.EncodeToString(h[:])
	key := store.BlobKey(sum)
	ok, err := st.HasBlob(ctx, key, n)
	if err != nil {
		return "", 0, false, err
	}
	if ok {
		prog.add(n)
		return sum, n, false, nil
	}
	if _, err := st.PutFrom(ctx, key, &countingReader{r: buf, prog: prog}); err != nil {
		return "", 0, false, err
	}
	return sum, n, true, nil
}

func readChecked(p string, u *unit, w io.Writer) error {
	f, err := os.Open(p)
	if err != nil {
		return fmt.Errorf("upload working directory: %w", err)
	}
	defer f.Close()
	cr := &checkedReader{r: io.LimitReader(f, u.size+1), h: sha256.New(), u: u}
	if _, err := io.Copy(w, cr); err != nil {
		return err
	}
	return nil
}

// putFile streams one large file into its blob; the blob appears only if the bytes read
// have the hash Scan recorded.
func putFile(ctx context.Context, st *store.Store, root string, u *unit, prog *progress) error {
	f, err := os.Open(filepath.Join(root, filepath.FromSlash(u.rel)))
	if err != nil {
		return fmt.Errorf("upload working directory: %w", err)
	}
	defer f.Close()
	cr := &checkedReader{r: io.LimitReader(f, u.size+1), h: sha256.New(), u: u}
	_, err = st.PutFrom(ctx, store.BlobKey(u.sum), &countingReader{r: cr, prog: prog})
	return err
}

// checkedReader passes r through and, at EOF, fails unless the bytes had u's size and
// hash. Failing instead of returning EOF makes store.PutFrom abandon the object.
type checkedReader struct {
	r io.Reader
	h hash.Hash
	n int64
	u *unit
}

func (c *checkedReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.h.Write(p[:n])
	c.n += int64(n)
	if c.n > c.u.size {
		return n, fmt.Errorf("%s: %w (it grew)", c.u.rel, ErrFileChanged)
	}
	if err == io.EOF {
		if c.n != c.u.size || hex.EncodeToString(c.h.Sum(nil)) != c.u.sum {
			return n, fmt.Errorf("%s: %w", c.u.rel, ErrFileChanged)
		}
	}
	return n, err
}

type progress struct {
	mu          sync.Mutex
	fn          func(done, total int64)
	done, total int64
}

func (p *progress) add(n int64) {
	if p.fn == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done += n
	p.fn(p.done, p.total)
}

type countingReader struct {
	r    io.Reader
	prog *progress
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if n > 0 {
		c.prog.add(int64(n))
	}
	return n, err
}

// The pack index: per store URL, which file contents this machine put into which pack.
// It is a hint: Upload confirms each pack it reuses with Exists.

type packLoc struct {
	Pack string `json:"pack"`
	Off  int64  `json:"off"`
}

type packIndex struct {
	file  string
	raw   []byte             // the file as read: an unchanged index is not written again
	URL   string             `json:"url"`
	Ver   int                `json:"version"`
	Files map[string]packLoc `json:"files"`
	Packs map[string]int64   `json:"packs"`
}

const packIndexVersion = 1

func loadPackIndex(dir, url string) *packIndex {
	idx := &packIndex{URL: url, Ver: packIndexVersion, Files: map[string]packLoc{}, Packs: map[string]int64{}}
	if dir == "" {
		return idx
	}
	sum := sha256.Sum256([]byte(url))
	idx.file = filepath.Join(dir, "packs-"+hex.EncodeToString(sum[:8])+".json")
	b, err := os.ReadFile(idx.file)
	if err != nil {
		return idx
	}
	idx.raw = b
	var f packIndex
	if json.Unmarshal(b, &f) != nil || f.URL != url || f.Ver != packIndexVersion {
		return idx
	}
	for k, v := range f.Files {
		if isHex256(k) && isHex256(v.Pack) {
			idx.Files[k] = v
		}
	}
	for k, v := range f.Packs {
		if isHex256(k) {
			idx.Packs[k] = v
		}
	}
	return idx
}

func (idx *packIndex) forgetPack(sum string) {
	delete(idx.Packs, sum)
	for k, v := range idx.Files {
		if v.Pack == sum {
			delete(idx.Files, k)
		}
	}
}

func (idx *packIndex) save() {
	if idx.file == "" {
		return
	}
	b, err := json.Marshal(idx)
	if err != nil || bytes.Equal(b, idx.raw) {
		return
	}
	_ = atomicfile.Write(idx.file, b, 0o644, 0o755)
}
