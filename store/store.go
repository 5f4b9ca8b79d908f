// Package store is Kinetic's durable state: a portable bucket (gocloud.dev/blob) with
// the job layout on top. file:// is the embedded default, mem:// serves unit tests, gs://
// and s3:// serve clusters. Everything another process reads is written with one
// atomic object write, so a reader sees the old object or the new one, never a part.
//
// Layout (all keys relative to the store URL's prefix):
//
//	jobs/{id}/handle.json     the JobHandle
//	jobs/{id}/spec.json       what the runner does
//	jobs/{id}/payload.pkl     the pickled call (Python SDK jobs)
//	jobs/{id}/env.json        captured environment values (never in spec or handle)
//	jobs/{id}/status.json     what the backend last recorded
//	jobs/{id}/result.pkl      the pickled value or exception
//	jobs/{id}/result.json     the result envelope, written after result.pkl
//	groups/{gid}/results/{i}.pkl, {i}.json  the same of batch child i (ResultKey)
//	groups/{gid}/ends/        a local batch's envelopes in logs, one per worker (ends.go)
//	jobs/{id}/logs/{seq}.log  log chunks, in order
//	jobs/{id}/debug.json      where a debug job's debugpy listens (job.DebugMarker)
//	tombstones/{id}.json      a success whose result was collected and cleaned up (job.Tombstone)
//	groups/{id}/manifest.json batch manifests
//	groups/{id}/env.json      a batch run as one unit: the captured environment values
//	groups/{id}/collected/    which children's results were collected, and when
//	blobs/sha256/{hex}        content-addressed blobs (working directories, data)
//	outputs/{id}/             KINETIC_OUTPUT_DIR by default; never removed by cleanup
//
// A gs:// or s3:// URL's path is the prefix: gs://bucket/team-a keeps every key under
// team-a/ in the bucket. A gs:// URL may name a custom endpoint (a GCS emulator) with
// ?endpoint=http://host:port, or through STORAGE_EMULATOR_HOST; see docs/store.md.
package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
	"golang.org/x/sync/errgroup"

	"github.com/kinetic-run/kinetic/errs"
	"github.com/kinetic-run/kinetic/internal/atomicfile"
	"github.com/kinetic-run/kinetic/internal/remove"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store/driver"
)

// ErrNotFound is returned when a key does not exist.
var ErrNotFound = errs.New(errs.NotFound, "not found")

// ErrExists is returned by Create when the key already exists.
var ErrExists = errs.New(errs.FailedPrecondition, "already exists")

// Store is a bucket with Kinetic's layout.
type Store struct {
	url    string
	bucket *blob.Bucket
	// dir is the root directory of a file:// store, where a key is a path ("" otherwise).
	dir string
	// file: a file:// store, whose listings skip in-flight temporary files.
	file bool
	// d is the scheme's driver (store/driver); prefix the store's key prefix in its
	// bucket ("" or ending in "/"), for a driver that matches names itself (ListNamed).
	d      driver.Driver
	prefix string
	// ends: the batches' envelope logs read lately (ends.go).
	ends endsCache
}

// Open opens the store at rawURL. A plain absolute path means file://PATH. For file://
// stores the directory is created, temporary files are made next to their target (so
// the final rename is atomic on one file system) and no metadata sidecars are written.
//
// For gs:// stores Open checks that the bucket answers (one list call, bounded by
// ProbeTimeout), so a wrong bucket, missing credentials or an unreachable endpoint fail
// here with the URL rather than later in the middle of a submission. Real GCS uses
// Application Default Credentials; an endpoint (the URL's endpoint parameter, else
// STORAGE_EMULATOR_HOST) is spoken to without credentials, as emulators expect.
func Open(ctx context.Context, rawURL string) (*Store, error) {
	return open(ctx, rawURL, true)
}

// ErrNoStore means a file:// store's directory does not exist: no job was ever
// submitted to it. OpenExisting returns it instead of making the directory.
var ErrNoStore = errs.New(errs.NotFound, "no such store")

// OpenExisting opens a store for reading only what is there: a file:// store whose
// directory does not exist is ErrNoStore, and nothing is created (the commands that only
// look, like `kinetic jobs list`, must not make a directory out of a typo or a profile
// for another machine).
func OpenExisting(ctx context.Context, rawURL string) (*Store, error) {
	return open(ctx, rawURL, false)
}

// MissingDir reports whether rawURL is a file store (a path or file://) whose directory
// does not exist, and which directory that is: a command that only looks refuses it
// rather than make it.
func MissingDir(rawURL string) (string, bool) {
	p := rawURL
	if strings.HasPrefix(p, "file://") {
		if pu, err := url.Parse(p); err == nil {
			p = pu.Path
		}
	}
	if !strings.HasPrefix(p, "/") {
		return "", false
	}
	_, err := os.Stat(p)
	return p, errors.Is(err, fs.ErrNotExist)
}

func open(ctx context.Context, rawURL string, create bool) (*Store, error) {
	if !create {
		// Before the driver, which makes a file store's directory.
		if p, missing := MissingDir(rawURL); missing {
			return nil, fmt.Errorf("store %s: %w: its directory %s does not exist, so it holds no jobs (a store is made by the first job submitted to it; check the store URL or the profile)", rawURL, ErrNoStore, p)
		}
	}
	t, err := locate(rawURL)
	if err != nil {
		return nil, err
	}
	b, err := openBucket(ctx, t, create)
	if err != nil {
		return nil, err
	}
	s := &Store{url: t.Record, bucket: b, file: t.Scheme == "file", d: t.d, prefix: t.Prefix, dir: t.Dir}
	if s.dir != "" {
		spreadBatches(s.dir)
	}
	return s, nil
}

// URL returns the URL the store was opened with.
func (s *Store) URL() string { return s.url }

// Bucket returns the store's bucket name: the host of gs:// and s3:// URLs, the path of
// file:// URLs (the handle's bucket_name).
func (s *Store) Bucket() string {
	u, err := url.Parse(s.url)
	if err != nil {
		return s.url
	}
	if u.Host != "" {
		return u.Host
	}
	return u.Path
}

// Close releases the bucket.
func (s *Store) Close() error {
	s.closeEnds()
	return s.bucket.Close()
}

// Put writes one object atomically: a failed write (a full disk, a cancelled context)
// leaves the old object, or none, never a partial one. (blob.Bucket.WriteAll closes the
// writer after a failed Write, and fileblob then renames the partial temporary file into
// place: an empty status.json on a full disk. So the write is abandoned explicitly here.)
func (s *Store) Put(ctx context.Context, key string, data []byte) error {
	if s.dir != "" && plainKey(key) {
		if err := atomicfile.Write(filepath.Join(s.dir, filepath.FromSlash(key)), data, 0o600, 0o700); err != nil {
			return s.coded("write", key, err)
		}
		return nil
	}
	_, err := s.PutFrom(ctx, key, bytes.NewReader(data))
	return err
}

// Create writes one object only if the key does not exist yet: of concurrent Creates of
// one key exactly one succeeds, the others get an error that wraps ErrExists and leave
// the object as the winner wrote it. It is how one caller claims something (the
// collection of a job's result) where several may try at once.
func (s *Store) Create(ctx context.Context, key string, data []byte) error {
	if s.dir != "" && plainKey(key) {
		err := atomicfile.Create(filepath.Join(s.dir, filepath.FromSlash(key)), data, 0o600, 0o700)
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("write %s: %w", key, ErrExists)
		}
		if err != nil {
			return s.coded("write", key, err)
		}
		return nil
	}
	if s.file {
		// fileblob checks IfNotExist and then renames: two writers can both win.
		return fmt.Errorf("write %s: an exclusive write needs a plain key on a file:// store", key)
	}
	err := s.bucket.WriteAll(ctx, key, data, &blob.WriterOptions{ContentType: "application/octet-stream", IfNotExist: true})
	if gcerrors.Code(err) == gcerrors.FailedPrecondition {
		return fmt.Errorf("write %s: %w", key, ErrExists)
	}
	if err != nil {
		return s.coded("write", key, err)
	}
	return nil
}

// PutFrom streams r into one object. The object appears only when r is fully copied: if
// ctx is cancelled or r fails, nothing is written.
func (s *Store) PutFrom(ctx context.Context, key string, r io.Reader) (int64, error) {
	if s.dir != "" && plainKey(key) {
		// Not fileblob: it makes its files 0666 less the umask; ours are 0600.
		n, err := atomicfile.WriteFrom(filepath.Join(s.dir, filepath.FromSlash(key)), ctxReader{ctx, r}, 0o600, 0o700)
		if err != nil {
			return n, s.coded("write", key, err)
		}
		return n, nil
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := s.bucket.NewWriter(wctx, key, &blob.WriterOptions{ContentType: "application/octet-stream"})
	if err != nil {
		return 0, s.coded("write", key, err)
	}
	n, err := io.Copy(w, r)
	if err != nil {
		cancel() // abandons the write
		w.Close()
		return n, s.coded("write", key, err)
	}
	if err := w.Close(); err != nil {
		return n, s.coded("write", key, err)
	}
	return n, nil
}

// PutFile writes the content of the file f, open for reading at its start, as one object.
// On a file:// store the file is renamed into place when it can be (same file system, a
// plain key), instead of being copied: it is then gone from its old path. Either way the
// object appears whole or not at all.
func (s *Store) PutFile(ctx context.Context, key string, f *os.File) error {
	if s.dir != "" && plainKey(key) {
		dst := filepath.Join(s.dir, filepath.FromSlash(key))
		err := f.Chmod(0o600) // the runner's file, made with the umask's mode
		if err == nil {
			err = os.Rename(f.Name(), dst)
		}
		if errors.Is(err, fs.ErrNotExist) {
			if os.MkdirAll(filepath.Dir(dst), 0o700) == nil {
				err = os.Rename(f.Name(), dst)
			}
		}
		if err == nil {
			return nil
		}
		// Another file system, say: copy it instead.
	}
	_, err := s.PutFrom(ctx, key, f)
	return err
}

// plainKey reports whether key is stored by fileblob under its own name (no escaping).
func plainKey(key string) bool {
	if key == "" || strings.HasSuffix(key, ".attrs") || strings.HasPrefix(key, "/") || strings.HasSuffix(key, "/") || strings.Contains(key, "//") {
		return false
	}
	for _, part := range strings.Split(key, "/") {
		if part == "." || part == ".." || strings.HasPrefix(part, ".") {
			return false
		}
	}
	for _, r := range key {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' || r == '/') {
			return false
		}
	}
	return true
}

// Get reads one object. A missing key gives an error that wraps ErrNotFound.
func (s *Store) Get(ctx context.Context, key string) ([]byte, error) {
	if s.dir != "" && plainKey(key) {
		gid, i, packed := s.packedKey(key)
		tried := packed && s.logged(gid)
		if tried {
			// A batch whose envelopes this Store found in logs: the logs first (a batch's
			// results read its thousand envelopes there, with no open of a file each).
			if b, ok, err := s.packed(gid, i); ok || err != nil {
				return b, err
			}
		}
		b, err := s.getPlain(ctx, key)
		if packed && !tried && IsNotFound(err) {
			if b, ok, perr := s.packed(gid, i); ok || perr != nil {
				return b, perr
			}
		}
		return b, err
	}
	b, err := s.bucket.ReadAll(ctx, key)
	if err != nil {
		return nil, s.wrap(key, err)
	}
	return b, nil
}

// getPlain is Get of a plain key of a file:// store in four system calls (open, fstat,
// read, close): an *os.File adds a check of the non-blocking flag, and a read that came
// back short of its buffer has found the end (the objects are written whole and renamed
// into place; a log being appended to reads as far as it was written).
func (s *Store) getPlain(ctx context.Context, key string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", key, err)
	}
	fd, _, err := s.openRaw(key)
	if err != nil {
		return nil, err
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil || st.Mode&syscall.S_IFMT == syscall.S_IFDIR {
		return nil, fmt.Errorf("%s: %w", key, ErrNotFound)
	}
	b := make([]byte, 0, st.Size+1)
	for {
		n, err := syscall.Read(fd, b[len(b):cap(b)])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, s.coded("read", key, err)
		}
		b = b[:len(b)+n]
		if n == 0 || len(b) < cap(b) {
			return b, nil
		}
		b = append(b, 0)[:len(b)] // it grew since the fstat: read on
	}
}

// openRaw opens the file of plain key for reading, a missing one as ErrNotFound.
func (s *Store) openRaw(key string) (fd int, path string, err error) {
	path = filepath.Join(s.dir, filepath.FromSlash(key))
	fd, err = syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	for err == syscall.EINTR {
		fd, err = syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	}
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return -1, path, fmt.Errorf("%s: %w", key, ErrNotFound)
	}
	if err != nil {
		return -1, path, s.coded("read", key, err)
	}
	return fd, path, nil
}

// openPlain opens the file of a plain key of a file:// store directly (ok), which is
// what fileblob does for it, without the sidecar lookup and the bucket's bookkeeping that
// cost more than reading a small object: a store read per status check adds up.
func (s *Store) openPlain(ctx context.Context, key string) (f *os.File, size int64, ok bool, err error) {
	if s.dir == "" || !plainKey(key) {
		return nil, 0, false, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, 0, true, fmt.Errorf("read %s: %w", key, err)
	}
	fd, path, err := s.openRaw(key)
	if err != nil {
		return nil, 0, true, err
	}
	// Not os.Open: the runtime poller's attempt to register a regular file is four
	// system calls more.
	f = os.NewFile(uintptr(fd), path)
	fi, err := f.Stat()
	if err != nil || fi.IsDir() {
		f.Close()
		return nil, 0, true, fmt.Errorf("%s: %w", key, ErrNotFound)
	}
	return f, fi.Size(), true, nil
}

// NewReader opens one object for streaming.
func (s *Store) NewReader(ctx context.Context, key string) (io.ReadCloser, error) {
	if f, _, ok, err := s.openPlain(ctx, key); ok {
		if err != nil {
			return nil, err
		}
		return f, nil
	}
	r, err := s.bucket.NewReader(ctx, key, nil)
	if err != nil {
		return nil, s.wrap(key, err)
	}
	return r, nil
}

// GetRange reads n bytes of one object from offset off (fewer at its end). A missing
// key gives an error that wraps ErrNotFound.
func (s *Store) GetRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	r, err := s.bucket.NewRangeReader(ctx, key, off, n, nil)
	if err != nil {
		return nil, s.wrap(key, err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, s.coded("read", key, err)
	}
	return b, nil
}

// Exists reports whether key exists.
func (s *Store) Exists(ctx context.Context, key string) (bool, error) {
	if s.dir != "" && plainKey(key) {
		// One stat (the bucket's way is two, and a tracer span): a group worker asks
		// this of every input before it runs it.
		var st syscall.Stat_t
		err := syscall.Stat(filepath.Join(s.dir, filepath.FromSlash(key)), &st)
		switch {
		case err == nil:
			return st.Mode&syscall.S_IFMT != syscall.S_IFDIR, nil
		case err == syscall.ENOENT || err == syscall.ENOTDIR:
			if gid, i, packed := s.packedKey(key); packed {
				_, ok, err := s.packed(gid, i)
				return ok, err
			}
			return false, nil
		default:
			return false, s.coded("check", key, err)
		}
	}
	ok, err := s.bucket.Exists(ctx, key)
	if err != nil {
		return false, s.coded("check", key, err)
	}
	return ok, nil
}

// Delete removes one object; a missing key is not an error.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := s.bucket.Delete(ctx, key); err != nil && !s.notFound(err) {
		return s.coded("delete", key, err)
	}
	return nil
}

// Remove deletes one object and says whether this call removed it: of several callers
// removing the same key, one gets true (a file store's unlink, a bucket's delete that
// found the object) and the others false, with no error.
func (s *Store) Remove(ctx context.Context, key string) (bool, error) {
	if s.dir != "" && plainKey(key) {
		// An object is a file: one unlink, also for one never written.
		removed, err := remove.File(filepath.Join(s.dir, filepath.FromSlash(key)))
		if err != nil {
			return false, s.coded("delete", key, err)
		}
		if !removed {
			if gid, i, packed := s.packedKey(key); packed {
				return s.removePacked(gid, i)
			}
		}
		return removed, nil
	}
	err := s.bucket.Delete(ctx, key)
	if s.notFound(err) {
		return false, nil
	}
	if err != nil {
		return false, s.coded("delete", key, err)
	}
	return true, nil
}

// Object is one listed object.
type Object struct {
	Key  string
	Size int64
	// ModTime and MD5 are what the listing says of the object's last write and content
	// (zero and nil where the driver gives none).
	ModTime time.Time
	MD5     []byte
}

// List returns the objects under prefix, recursively, in lexical key order.
func (s *Store) List(ctx context.Context, prefix string) ([]Object, error) {
	if s.dir != "" && prefix != "" && plainKey(strings.TrimSuffix(prefix, "/")) {
		if out, ok, err := s.listFile(ctx, prefix); ok {
			return out, err
		}
	}
	// fileblob lists by walking directories and fails when a temporary file is renamed
	// away in the middle of the walk. Such a race is over at once: list again.
	for try := 0; ; try++ {
		out, err := s.list(ctx, &blob.ListOptions{Prefix: prefix})
		if err == nil || try == 4 || !errors.Is(err, fs.ErrNotExist) {
			return out, err
		}
	}
}

func (s *Store) list(ctx context.Context, opts *blob.ListOptions) ([]Object, error) {
	var out []Object
	it := s.bucket.List(opts)
	for {
		o, err := it.Next(ctx)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, s.coded("list", opts.Prefix, err)
		}
		if o.IsDir || (s.file && tempKey(o.Key)) {
			continue
		}
		out = append(out, Object{Key: o.Key, Size: o.Size, ModTime: o.ModTime, MD5: o.MD5})
	}
}

// ListNamed returns the objects prefix+X/name for every X without a "/" (name is a
// plain name): the status.json of every job under jobs/, with the size, modification
// time and MD5 the listing gives. On gs:// the bucket does the matching (a matchGlob),
// so the listing costs a request per 1,000 matches instead of one per 1,000 objects under
// prefix; elsewhere, and on an emulator that ignores matchGlob (fake-gcs-server), the
// objects under prefix are all listed and matched here.
func (s *Store) ListNamed(ctx context.Context, prefix, name string) ([]Object, error) {
	var objs []Object
	var err error
	// A glob is only sent for a store prefix with no glob character in it (they would
	// need escaping: such a store lists everything, as elsewhere).
	if g, ok := s.d.(driver.Globber); ok && !strings.ContainsAny(s.prefix+prefix+name, `*?[]{}\!,`) {
		objs, err = s.list(ctx, &blob.ListOptions{Prefix: prefix, BeforeList: g.BeforeList(s.prefix + prefix + "*/" + name)})
	} else {
		objs, err = s.List(ctx, prefix)
	}
	if err != nil {
		return nil, err
	}
	out := objs[:0]
	for _, o := range objs {
		rest := strings.TrimPrefix(o.Key, prefix)
		if i := strings.IndexByte(rest, '/'); i > 0 && rest[i+1:] == name {
			out = append(out, o)
		}
	}
	return out, nil
}

// listFile is List on a file store, from its directories. fileblob stats every entry of
// its walk and fails the whole listing when one vanishes meanwhile, which happens all
// the time in a directory being written to (a batch's children/ while ten thousand
// inputs are submitted: each write is a temporary file renamed into place). Here an
// entry that vanishes is skipped, and temporary files and attribute sidecars are never
// objects. ok is false when the directory holds a name fileblob would have escaped: the
// caller then lists through fileblob.
func (s *Store) listFile(ctx context.Context, prefix string) (out []Object, ok bool, err error) {
	dirKey := prefix[:strings.LastIndex(prefix, "/")+1]
	var walk func(dir, keyPrefix string) (bool, error)
	walk = func(dir, keyPrefix string) (bool, error) {
		if err := ctx.Err(); err != nil {
			return true, fmt.Errorf("list %s: %w", prefix, err)
		}
		ents, err := os.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return true, nil
		}
		if err != nil {
			return true, s.coded("list", prefix, err)
		}
		for _, e := range ents {
			name := e.Name()
			if tempKey(name) || strings.HasSuffix(name, ".attrs") {
				continue
			}
			if !plainKey(name) {
				return false, nil
			}
			key := keyPrefix + name
			if e.IsDir() {
				if strings.HasPrefix(key+"/", prefix) || strings.HasPrefix(prefix, key+"/") {
					if ok, err := walk(filepath.Join(dir, name), key+"/"); !ok || err != nil {
						return ok, err
					}
				}
				continue
			}
			if !strings.HasPrefix(key, prefix) {
				continue
			}
			fi, err := e.Info()
			if errors.Is(err, fs.ErrNotExist) {
				continue // renamed or removed since the directory was read
			}
			if err != nil {
				return true, s.coded("list", prefix, err)
			}
			if fi.Mode().IsRegular() {
				out = append(out, Object{Key: key, Size: fi.Size(), ModTime: fi.ModTime()})
			}
		}
		return true, nil
	}
	ok, err = walk(filepath.Join(s.dir, filepath.FromSlash(dirKey)), dirKey)
	if !ok || err != nil {
		return nil, ok, err
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Key < out[b].Key })
	return out, true, nil
}

// LocalDir is the directory of a file:// store, "" for any other.
func (s *Store) LocalDir() string { return s.dir }

// LocalPath is the file that holds object key in a file:// store, for a reader on this
// machine that wants a path rather than the bytes (ok false: not a file store, or a key
// the store keeps elsewhere).
func (s *Store) LocalPath(key string) (string, bool) {
	if s.dir == "" || !plainKey(key) {
		return "", false
	}
	return filepath.Join(s.dir, filepath.FromSlash(key)), true
}

// ListDirs returns the names of the immediate "directories" under prefix (which must
// end in "/"), e.g. the job IDs under "jobs/".
func (s *Store) ListDirs(ctx context.Context, prefix string) ([]string, error) {
	if s.dir != "" && strings.HasSuffix(prefix, "/") && plainKey(strings.TrimSuffix(prefix, "/")) {
		return s.listFileDirs(prefix)
	}
	var out []string
	it := s.bucket.List(&blob.ListOptions{Prefix: prefix, Delimiter: "/"})
	for {
		o, err := it.Next(ctx)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, s.coded("list", prefix, err)
		}
		if o.IsDir {
			out = append(out, strings.TrimSuffix(strings.TrimPrefix(o.Key, prefix), "/"))
		}
	}
}

// DeletePrefix removes every object under prefix.
func (s *Store) DeletePrefix(ctx context.Context, prefix string) error {
	if s.dir != "" && strings.HasSuffix(prefix, "/") && plainKey(strings.TrimSuffix(prefix, "/")) {
		// A file store's prefix is a directory: remove it in one walk (one call when
		// it does not exist, as for most of a batch's inputs). A job judged ended may
		// still get its supervisor's last write for a moment (a file made during the
		// walk fails it with "directory not empty"): tried again for up to a second.
		if err := remove.AllWhileWritten(ctx, filepath.Join(s.dir, filepath.FromSlash(prefix)), time.Second); err != nil {
			return s.coded("delete", prefix, err)
		}
		return nil
	}
	objs, err := s.List(ctx, prefix)
	if err != nil {
		return err
	}
	for _, o := range objs {
		if err := s.Delete(ctx, o.Key); err != nil {
			return err
		}
	}
	if s.dir != "" && strings.HasSuffix(prefix, "/") {
		removeEmptyDirs(filepath.Join(s.dir, filepath.FromSlash(prefix)))
	}
	return nil
}

// ListJobIDs lists the jobs in the store: the prefixes under jobs/, and the batch
// children that ended with nothing there (their result is in their batch's results/).
func (s *Store) ListJobIDs(ctx context.Context) ([]string, error) {
	ids, err := s.ListDirs(ctx, JobsPrefix)
	if err != nil {
		return nil, err
	}
	children, err := s.ListResultChildren(ctx)
	if err != nil {
		return nil, err
	}
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		seen[id] = true
	}
	for _, id := range children {
		if !seen[id] {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// ListResultChildren lists the batch children whose result is in their batch's results/
// (ResultKey): jobs that may have nothing under jobs/ (a listing adds them to ListDirs
// of jobs/). One listing of groups/ and one per batch, sixteen at a time.
func (s *Store) ListResultChildren(ctx context.Context) ([]string, error) {
	gids, err := s.ListDirs(ctx, "groups/")
	if err != nil {
		return nil, err
	}
	found := make([][]string, len(gids))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for k, gid := range gids {
		g.Go(func() (err error) {
			found[k], err = s.ResultChildren(gctx, gid)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	var ids []string
	for _, f := range found {
		ids = append(ids, f...)
	}
	return ids, nil
}

// ResultChildren lists the children of batch gid that have a result in its results/.
func (s *Store) ResultChildren(ctx context.Context, gid string) ([]string, error) {
	objs, err := s.List(ctx, GroupResultsPrefix(gid))
	if err != nil {
		return nil, err
	}
	var ids []string
	seen := map[int]bool{}
	for _, o := range objs {
		name := strings.TrimPrefix(o.Key, GroupResultsPrefix(gid))
		i, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSuffix(name, ".json"), ".pkl"))
		if err != nil || i < 0 || seen[i] {
			continue
		}
		seen[i] = true
		ids = append(ids, job.ChildID(gid, i))
	}
	if s.dir != "" {
		packed, err := s.packedChildren(gid)
		if err != nil {
			return nil, err
		}
		for _, i := range packed {
			if !seen[i] {
				seen[i] = true
				ids = append(ids, job.ChildID(gid, i))
			}
		}
	}
	return ids, nil
}

// DeleteJob removes job id's objects: its prefix and, for a batch child, its result
// kept in its batch's results/ (the envelope first: a reader meanwhile sees the job
// cleaned up, not a value without its envelope).
func (s *Store) DeleteJob(ctx context.Context, id string) error {
	if _, _, ok := job.ParseChildID(id); ok {
		for _, k := range []string{EnvelopeKey(id), ResultKey(id)} {
			if _, err := s.Remove(ctx, k); err != nil {
				return err
			}
		}
	}
	return s.DeletePrefix(ctx, JobPrefix(id))
}

// removeEmptyDirs removes dir and the directories under it that are empty, deepest
// first: a file store would otherwise keep an empty directory per deleted job.
// listFileDirs is ListDirs on a file store, from the directory itself: fileblob walks
// every file under the prefix to find its directories (6 s for 10,000 jobs), one
// directory read takes 10 ms. As in a bucket, a directory is listed only when it holds
// an object: an empty one (a job's prefix being removed) or one holding only temporary
// files is not.
func (s *Store) listFileDirs(prefix string) ([]string, error) {
	root := filepath.Join(s.dir, filepath.FromSlash(prefix))
	ents, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, s.coded("list", prefix, err)
	}
	var out []string
	for _, e := range ents {
		if !e.IsDir() || !plainKey(e.Name()) {
			continue
		}
		if holdsObject(filepath.Join(root, e.Name())) {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// holdsObject reports whether dir or a directory under it holds a file that is an
// object (not a temporary file or an attributes sidecar).
func holdsObject(dir string) bool {
	f, err := os.Open(dir)
	if err != nil {
		return false
	}
	defer f.Close()
	for {
		ents, err := f.ReadDir(64)
		for _, e := range ents {
			if e.IsDir() {
				if holdsObject(filepath.Join(dir, e.Name())) {
					return true
				}
			} else if !tempKey(e.Name()) && !strings.HasSuffix(e.Name(), ".attrs") {
				return true
			}
		}
		if err != nil {
			return false
		}
	}
}

func removeEmptyDirs(dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if e.IsDir() {
			removeEmptyDirs(filepath.Join(dir, e.Name()))
		}
	}
	os.Remove(dir) // fails, as it should, if anything is left
}

// tempKey reports whether key is a file store's temporary file: one of ours (.tmp-*) or
// fileblob's (NAME.HEX.tmp), in flight or left by a killed writer. It is never an object.
func tempKey(key string) bool {
	base := key[strings.LastIndex(key, "/")+1:]
	if strings.HasPrefix(base, ".tmp-") {
		return true
	}
	if !strings.HasSuffix(base, ".tmp") {
		return false
	}
	rest := strings.TrimSuffix(base, ".tmp")
	dot := strings.LastIndex(rest, ".")
	if dot < 0 || dot == len(rest)-1 {
		return false
	}
	for _, r := range rest[dot+1:] {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f') {
			return false
		}
	}
	return true
}

// wrap is a read's error: a missing key wraps ErrNotFound, another keeps the code its
// driver gives it.
func (s *Store) wrap(key string, err error) error {
	if s.notFound(err) {
		return fmt.Errorf("%s: %w", key, ErrNotFound)
	}
	return s.coded("read", key, err)
}

// PutBlob stores data content-addressed and returns its key and hex SHA-256. Content the
// store already holds (of the same size: HasBlob) is not written again.
func (s *Store) PutBlob(ctx context.Context, data []byte) (key, sum string, err error) {
	h := sha256.Sum256(data)
	sum = hex.EncodeToString(h[:])
	key = BlobKey(sum)
	ok, err := s.HasBlob(ctx, key, int64(len(data)))
	if err != nil {
		return "", "", err
	}
	if !ok {
		if err := s.Put(ctx, key, data); err != nil {
			return "", "", err
		}
	}
	return key, sum, nil
}

// GetVerified reads key and checks that its SHA-256 is sum.
func (s *Store) GetVerified(ctx context.Context, key, sum string) ([]byte, error) {
	b, err := s.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	if got := sha256Hex(b); got != sum {
		return nil, s.RemoveDamagedBlob(ctx, key, fmt.Sprintf("its SHA-256 is %s, not the %s expected (%d bytes)", got, sum, len(b)))
	}
	return b, nil
}

// JobsPrefix holds every job's objects; StatusName is the name of a job's status.json
// under its prefix (the listing index lists them all: ListNamed).
const (
	JobsPrefix = "jobs/"
	StatusName = "status.json"
)

// Keys of the job layout.
func JobPrefix(id string) string  { return JobsPrefix + id + "/" }
func HandleKey(id string) string  { return JobPrefix(id) + "handle.json" }
func SpecKey(id string) string    { return JobPrefix(id) + "spec.json" }
func PayloadKey(id string) string { return JobPrefix(id) + "payload.pkl" }
func EnvKey(id string) string     { return JobPrefix(id) + "env.json" }
func ArgsKey(id string) string    { return JobPrefix(id) + "args.pkl" }
func StatusKey(id string) string  { return JobPrefix(id) + StatusName }

// ResultKey and EnvelopeKey are a job's result.pkl and result.json. A batch child's are
// in its batch's results/ (I.pkl, I.json for input I): one directory for all of a
// batch's inputs instead of one per input, which cost a local map more than running
// its inputs (making and removing a directory per input; docs/store.md).
func ResultKey(id string) string {
	if gid, i, ok := job.ParseChildID(id); ok {
		return GroupResultsPrefix(gid) + strconv.Itoa(i) + ".pkl"
	}
	return JobPrefix(id) + "result.pkl"
}

func EnvelopeKey(id string) string {
	if gid, i, ok := job.ParseChildID(id); ok {
		return GroupResultsPrefix(gid) + strconv.Itoa(i) + ".json"
	}
	return JobPrefix(id) + "result.json"
}

// GroupResultsPrefix holds the results of batch gid's children (ResultKey).
func GroupResultsPrefix(gid string) string { return "groups/" + gid + "/results/" }

// ObjectName is how a message names object key of job id: its name within the job's
// prefix (result.json), or the whole key for one kept elsewhere (a batch child's
// groups/GID/results/I.json).
func ObjectName(id, key string) string { return strings.TrimPrefix(key, JobPrefix(id)) }

func DebugKey(id string) string   { return JobPrefix(id) + "debug.json" }
func LogsPrefix(id string) string { return JobPrefix(id) + "logs/" }
func LogChunkKey(id string, seq int) string {
	return fmt.Sprintf("%s%08d.log", LogsPrefix(id), seq)
}

// Keys of the hosts of a multi-host job other than the leader (host 0, which uses the
// job's own keys): a worker writes its envelope only when it fails, and mirrors its
// output under its own logs prefix.
func HostsPrefix(id string) string { return JobPrefix(id) + "hosts/" }
func HostEnvelopeKey(id, host string) string {
	return HostsPrefix(id) + host + "/result.json"
}
func HostResultKey(id, host string) string  { return HostsPrefix(id) + host + "/result.pkl" }
func HostStartedKey(id, host string) string { return HostsPrefix(id) + host + "/started.json" }
func HostLogsPrefix(id, host string) string { return HostsPrefix(id) + host + "/logs/" }
func HostLogChunkKey(id, host string, seq int) string {
	return fmt.Sprintf("%s%08d.log", HostLogsPrefix(id, host), seq)
}

func GroupManifestKey(id string) string { return "groups/" + id + "/manifest.json" }

// Keys of a batch whose children are derived (batch/layout): the template every child's
// handle and spec are made from, the captured environment values they share (apart
// from the template, as a job's env.json is apart from its spec: the only objects that
// hold secrets), all the inputs in one object, and the marker a cleanup of a child
// leaves so that a derived child that was removed is not made again.
func GroupTemplateKey(gid string) string { return "groups/" + gid + "/template.json" }
func GroupEnvKey(gid string) string      { return "groups/" + gid + "/env.json" }
func GroupInputsKey(gid string) string   { return "groups/" + gid + "/inputs.bin" }
func GroupGoneKey(gid string, i int) string {
	return fmt.Sprintf("groups/%s/gone/%d", gid, i)
}

// ListIndexKey is the listing index: a cache of the final jobs and tombstones a listing
// has read, so that the next one reads one object instead of two per job (engine.List;
// docs/store.md). Deleting it loses nothing.
const ListIndexKey = "index/listing.json"

// TombstonesPrefix holds the tombstones of collected jobs; TombstoneKey is one's. They
// live outside jobs/{id}/ so the cleanup that deletes the job leaves them.
const TombstonesPrefix = "tombstones/"

func TombstoneKey(id string) string  { return TombstonesPrefix + id + ".json" }
func BlobKey(sum string) string      { return "blobs/sha256/" + sum }
func OutputsPrefix(id string) string { return "outputs/" + id + "/" }

// IsNotFound reports whether err means a missing object.
func IsNotFound(err error) bool { return errors.Is(err, ErrNotFound) }

// DefaultOutputDir is where job id's outputs go when no output_dir is set: under
// outputs/ID of the store at u (a local path for a file:// store).
func DefaultOutputDir(u, id string) string {
	if strings.HasPrefix(u, "/") {
		return filepath.Join(u, "outputs", id)
	}
	if strings.HasPrefix(u, "file://") {
		path := strings.TrimPrefix(u, "file://")
		if i := strings.IndexByte(path, '?'); i >= 0 {
			path = path[:i]
		}
		return filepath.Join(path, "outputs", id)
	}
	if i := strings.IndexByte(u, '?'); i >= 0 {
		u = u[:i]
	}
	return strings.TrimSuffix(u, "/") + "/outputs/" + id
}

// RetentionDays is the age in days after which the lifecycle rule of a bucket Kinetic
// creates (store/gcs) deletes the store's job records, batch manifests and
// content-addressed blobs.
const RetentionDays = 30

// ExpiringAreas are the parts of the layout the lifecycle rule covers. outputs/ is not
// among them: what a job writes under KINETIC_OUTPUT_DIR is kept until someone deletes
// it. (data/ is not either: its completion marker is written after its files, and an
// expiry that took the files first would leave a marker over missing data.)
var ExpiringAreas = []string{"jobs/", "groups/", "blobs/", TombstonesPrefix}

// ctxReader stops reading once ctx is done, so a cancelled PutFrom writes nothing.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
