package data

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
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
	t := &tree{}
	switch {
	case fi.Mode().IsRegular():
		e := &fileEntry{rel: filepath.Base(filepath.Clean(root)), abs: root}
		h := sha256.New()
		if err := hashFile(ctx, h, e, make([]byte, readBuf)); err != nil {
			return nil, err
		}
		t.files = []*fileEntry{e}
		t.bytes = e.size
		t.sum = combine(false, t.files)
		return t, nil
	case fi.IsDir():
		t.dir = true
	default:
		return nil, fmt.Errorf("hash %s: not a regular file or directory (%s)", root, fi.Mode().Type())
	}

	// A symlink whose target is outside the dataset is left out, as the working
	// directory leaves it out (pack.Scan): the dataset would otherwise carry, into a
	// store others may read, any file the link names (/etc/shadow, ../secrets).
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, fmt.Errorf("hash %s: %w", root, err)
	}
	workers := runtime.GOMAXPROCS(0)
	g, gctx := errgroup.WithContext(ctx)
	// The walk runs far ahead of the hashing: a worker that finds the queue empty parks,
	// and waking it again costs more than the open of a small file.
	work := make(chan *fileEntry, 4096)
	g.Go(func() error {
		defer close(work)
		return walk(gctx, root, "", func(e *fileEntry) error {
			if e.linkTo != "" {
				real, err := filepath.EvalSymlinks(e.abs)
				if err != nil || !within(realRoot, real) {
					t.skipped = append(t.skipped, fmt.Sprintf("left out symlink %s -> %s of Data(%q): it points outside the dataset", e.rel, e.linkTo, root))
					return nil
				}
			}
			t.files = append(t.files, e) // only this goroutine touches the slice
			select {
			case work <- e:
				return nil
			case <-gctx.Done():
				return gctx.Err()
			}
		})
	})
	for i := 0; i < workers; i++ {
		if k := laneKernelInUse; k != nil {
			g.Go(func() error { return hashLanes(gctx, work, k) })
			continue
		}
		g.Go(func() error {
			buf := make([]byte, readBuf)
			h := sha256.New()
			for e := range work {
				if err := hashFile(gctx, h, e, buf); err != nil {
					return err
				}
			}
			return nil
		})
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
		name := de.Name()
		abs := filepath.Join(dir, name)
		r := name
		if rel != "" {
			r = rel + "/" + name
		}
		typ := de.Type()
		switch {
		case typ.IsDir():
			subdirs = append(subdirs, name)
			continue
		case typ.IsRegular():
		case typ&os.ModeSymlink != 0:
			fi, err := os.Stat(abs)
			if err != nil {
				if errors.Is(err, os.ErrNotExist) {
					return fmt.Errorf("hash: %s is a broken symlink; remove it or fix its target", abs)
				}
				return fmt.Errorf("hash: %w", err)
			}
			if fi.IsDir() {
				continue // followlinks=False: a symlinked directory is not recursed into
			}
			if !fi.Mode().IsRegular() {
				return fmt.Errorf("hash: %s links to a %s, not a regular file", abs, fi.Mode().Type())
			}
		default:
			return fmt.Errorf("hash: %s is a %s, not a regular file; move it out of the data directory", abs, typ)
		}
		e := &fileEntry{rel: r, abs: abs}
		if typ&os.ModeSymlink != 0 {
			if e.linkTo, _ = os.Readlink(abs); e.linkTo == "" {
				e.linkTo = "?"
			}
		}
		if err := fn(e); err != nil {
			return err
		}
	}
	for _, name := range subdirs {
		r := name
		if rel != "" {
			r = rel + "/" + name
		}
		if err := walk(ctx, filepath.Join(dir, name), r, fn); err != nil {
			return err
		}
	}
	return nil
}

// within reports whether p is root or below it (both real paths).
func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}
