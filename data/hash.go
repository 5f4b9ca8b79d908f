package data

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"

	"golang.org/x/sync/errgroup"
)

// The content hash (the reference's content_hash(), byte for byte as docs/data.md
// states it):
//
//	fileDigest(rel, f) = SHA-256( rel as UTF-8 bytes || 0x00 || contents of f )
//	dir:  SHA-256( "dir:"  || fileDigest_1 || fileDigest_2 || ... )  (raw 32-byte digests)
//	file: SHA-256( "file:" || fileDigest(base name, f) )
//
// rel is the file's path relative to the directory, with "/" separators. Files are taken
// in the order of Python's os.walk(root, followlinks=False) with each directory's
// subdirectory and file names sorted: a directory's files (sorted by name), then each
// subdirectory (sorted by name), depth first. Symlinks to directories are not followed
// (their contents are not hashed); symlinks to files are hashed by the content they point
// to. Empty directories contribute nothing. The result is lower-case hex.

const (
	readBuf = 1 << 20 // bytes per read; one buffer per worker
)

// fileEntry is one file of a tree, in hash order.
type fileEntry struct {
	linkTo string // a symlink's target as written (the walk only)
	rel    string // slash-separated path relative to the root; the base name for a file
	abs    string
	size   int64    // bytes hashed
	sum    [32]byte // fileDigest
}

// tree is a hashed local path.
type tree struct {
	// skipped are the symlinks left out because they lead out of the dataset (a note
	// each, for the user).
	skipped []string
	dir     bool
	files   []*fileEntry
	sum     [32]byte
	bytes   int64
}

func (t *tree) hex() string { return hex.EncodeToString(t.sum[:]) }

// ContentHash returns the content hash of the local file or directory at path: the
// reference's two-level SHA-256 (see docs/data.md for the exact bytes), with the
// per-file digests computed in parallel on all cores.
func ContentHash(path string) (string, error) {
	t, err := hashTree(context.Background(), path)
	if err != nil {
		return "", err
	}
	return t.hex(), nil
}

// hashTree walks path and hashes every file with GOMAXPROCS workers. The walk runs
// alongside the hashing, so hashing starts with the first file found.
func hashTree(ctx context.Context, root string) (*tree, error) {
	fi, err := os.Stat(root) // follows a symlinked root, as os.walk and open do
	if err != nil {
		return nil, fmt.Errorf("hash %s: %w", root, err)
	}
	switch {
	case fi.Mode().IsRegular():
		return hashOneFile(ctx, root)
	case fi.IsDir():
		return hashDir(ctx, root)
	}
	return nil, fmt.Errorf("hash %s: not a regular file or directory (%s)", root, fi.Mode().Type())
}

// hashOneFile hashes the dataset that is the one file at root.
func hashOneFile(ctx context.Context, root string) (*tree, error) {
	e := &fileEntry{rel: filepath.Base(filepath.Clean(root)), abs: root}
	h := sha256.New()
	if err := hashFile(ctx, h, e, make([]byte, readBuf)); err != nil {
		return nil, err
	}
	t := &tree{files: []*fileEntry{e}, bytes: e.size}
	t.sum = combine(false, t.files)
	return t, nil
}

// hashDir hashes the directory at root: a walker lists its files while GOMAXPROCS
// workers hash them.
func hashDir(ctx context.Context, root string) (*tree, error) {
	// A symlink whose target is outside the dataset is left out, as the working
	// directory leaves it out (pack.Scan): the dataset would otherwise carry, into a
	// store others may read, any file the link names (/etc/shadow, ../secrets).
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, fmt.Errorf("hash %s: %w", root, err)
	}
	t := &tree{dir: true}
	g, gctx := errgroup.WithContext(ctx)
	// The walk runs far ahead of the hashing: a worker that finds the queue empty parks,
	// and waking it again costs more than the open of a small file.
	work := make(chan *fileEntry, 4096)
	g.Go(func() error {
		defer close(work)
		return walk(gctx, root, "", func(e *fileEntry) error { return t.queue(gctx, root, realRoot, e, work) })
	})
	for i := 0; i < runtime.GOMAXPROCS(0); i++ {
		g.Go(func() error { return hashWorker(gctx, work) })
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	for _, e := range t.files {
		t.bytes += e.size
	}
	t.sum = combine(true, t.files)
	return t, nil
}

// queue adds file e to the tree and hands it to the workers, unless it is a symlink out
// of the dataset (then noted in t.skipped). Only the walker calls it.
func (t *tree) queue(ctx context.Context, root, realRoot string, e *fileEntry, work chan<- *fileEntry) error {
	if e.linkTo != "" {
		real, err := filepath.EvalSymlinks(e.abs)
		if err != nil || !within(realRoot, real) {
			t.skipped = append(t.skipped, fmt.Sprintf("left out symlink %s -> %s of Data(%q): it points outside the dataset", e.rel, e.linkTo, root))
			return nil
		}
	}
	t.files = append(t.files, e)
	select {
	case work <- e:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// hashWorker hashes files of work: several at a time with this CPU's lane kernel, else
// one at a time.
func hashWorker(ctx context.Context, work <-chan *fileEntry) error {
	if k := laneKernelInUse; k != nil {
		return hashLanes(ctx, work, k)
	}
	buf := make([]byte, readBuf)
	h := sha256.New()
	for e := range work {
		if err := hashFile(ctx, h, e, buf); err != nil {
			return err
		}
	}
	return nil
}

// combine is the second level of the hash.
func combine(dir bool, files []*fileEntry) [32]byte {
	h := sha256.New()
	if dir {
		io.WriteString(h, "dir:")
	} else {
		io.WriteString(h, "file:")
	}
	for _, e := range files {
		h.Write(e.sum[:])
	}
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// newFileHash starts a fileDigest for rel.
func newFileHash(h hash.Hash, rel string) {
	h.Reset()
	io.WriteString(h, rel)
	h.Write([]byte{0})
}

// hashFile sets e.sum and e.size from the file's current contents, one file on its own
// with h: the file is taken in the pieces a lane takes it in (laneFile.next: one read of
// up to len(buf) bytes, then a mapping of the rest, or reads), and a fault on the mapping
// (the file shrank) is that file's error.
func hashFile(ctx context.Context, h hash.Hash, e *fileEntry, buf []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f, err := openLaneFile(e, buf)
	if err != nil {
		return err
	}
	newFileHash(h, e.rel)
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	lanes := []laneFile{f}
	l := &lanes[0]
	for {
		eof, err := l.next()
		if err != nil {
			return l.close(err)
		}
		if eof {
			break
		}
		if err := guardFaults(lanes, func() { h.Write(l.data) }); err != nil {
			return err
		}
	}
	l.release()
	e.size = l.off
	h.Sum(e.sum[:0])
	return nil
}

const (
	mmapMin   = 1 << 20 // below this a read costs less than a mapping and its unmapping
	maxMapped = 1 << 40
)

// walk calls fn for every file under dir in hash order. rel is dir relative to the root
// ("" for the root).
func walk(ctx context.Context, dir, rel string, fn func(*fileEntry) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	ents, err := os.ReadDir(dir) // sorted by name, byte order = Python's str order for UTF-8
	if err != nil {
		return fmt.Errorf("hash: read directory %s: %w", dir, err)
	}
	var subdirs []string
	for _, de := range ents {
		if de.Type().IsDir() {
			subdirs = append(subdirs, de.Name())
			continue
		}
		e, err := dataFile(dir, relJoin(rel, de.Name()), de)
		if err != nil {
			return err
		}
		if e == nil {
			continue
		}
		if err := fn(e); err != nil {
			return err
		}
	}
	for _, name := range subdirs {
		if err := walk(ctx, filepath.Join(dir, name), relJoin(rel, name), fn); err != nil {
			return err
		}
	}
	return nil
}

// relJoin is name under rel ("" for the root).
func relJoin(rel, name string) string {
	if rel == "" {
		return name
	}
	return rel + "/" + name
}

// dataFile is the file de (in dir, at r) names: a regular file, or a symlink to one; nil
// for a symlink to a directory (followlinks=False: not recursed into).
func dataFile(dir, r string, de fs.DirEntry) (*fileEntry, error) {
	abs := filepath.Join(dir, de.Name())
	typ := de.Type()
	switch {
	case typ.IsRegular():
		return &fileEntry{rel: r, abs: abs}, nil
	case typ&os.ModeSymlink != 0:
		return linkedFile(abs, r)
	}
	return nil, fmt.Errorf("hash: %s is a %s, not a regular file; move it out of the data directory", abs, typ)
}

func linkedFile(abs, r string) (*fileEntry, error) {
	fi, err := os.Stat(abs)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("hash: %s is a broken symlink; remove it or fix its target", abs)
	}
	if err != nil {
		return nil, fmt.Errorf("hash: %w", err)
	}
	if fi.IsDir() {
		return nil, nil
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("hash: %s links to a %s, not a regular file", abs, fi.Mode().Type())
	}
	e := &fileEntry{rel: r, abs: abs}
	if e.linkTo, _ = os.Readlink(abs); e.linkTo == "" {
		e.linkTo = "?"
	}
	return e, nil
}

// within reports whether p is root or below it (both real paths).
func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}
