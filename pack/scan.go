package pack

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/sync/errgroup"

	"github.com/kinetic-run/kinetic/internal/atomicfile"
)

// Scan walks root (default excludes, .kineticignore, o.Skip) and returns its manifest:
// every directory, regular file and symlink, sorted, each file with its mode, size and
// SHA-256. Files are hashed in parallel; with o.CacheDir set, a file whose size, mtime and
// inode are unchanged since the last scan is not read again.
//
// Symlinks that stay inside the tree are kept as links (absolute targets inside the root
// are made relative). A symlink whose path leaves the tree is shipped as the regular file
// it resolves to when that file is inside the tree, and otherwise left out, unread, with
// a note in Manifest.Notes (a link to /etc/shadow must not upload it).
func Scan(ctx context.Context, root string, o Options) (*Manifest, error) {
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	s := &scanner{o: o, root: root}
	for _, step := range scanSteps {
		if err := step.run(s, ctx); err != nil {
			return nil, err
		}
	}
	return s.m, nil
}

// scanner is one Scan: its steps, in scanSteps' order, share what they found.
type scanner struct {
	o        Options
	root     string // absolute
	realRoot string // root with its symlinks resolved
	m        *Manifest
	walked   []walkEntry
	links    map[string]string // kept symlinks: path → slash-separated target
	skipped  map[string]bool   // symlinks left out whole
	escaping map[string]bool   // symlinks whose path leaves the tree
	cache    *hashCache
	jobs     []hashJob  // files to read and hash
	mu       sync.Mutex // guards m while hash runs
}

// hashJob is one file to hash: its entry's index and its absolute path.
type hashJob struct {
	i   int
	abs string
}

// scanSteps are Scan's steps, in order; the first error stops it.
var scanSteps = []struct {
	name string
	run  func(*scanner, context.Context) error
}{
	{"walk", (*scanner).walkTree},
	{"symlinks", (*scanner).readLinks},
	{"entries", (*scanner).entries},
	{"hash", (*scanner).hash},
	{"totals", (*scanner).totals},
}

func (s *scanner) walkTree(context.Context) error {
	walked, notes, err := walkNoted(s.root, s.o)
	if err != nil {
		return err
	}
	s.walked = walked
	s.m = &Manifest{Version: ManifestVersion, Root: s.root, Notes: notes}
	if s.realRoot, err = filepath.EvalSymlinks(s.root); err != nil {
		return fmt.Errorf("read working directory: %w", err)
	}
	return nil
}

// readLinks reads the symlinks: it keeps those that stay inside; the others become
// files or are dropped (entries).
func (s *scanner) readLinks(context.Context) error {
	s.links, s.skipped = map[string]string{}, map[string]bool{}
	for _, w := range s.walked {
		if w.info.Mode()&fs.ModeSymlink == 0 {
			continue
		}
		if err := s.readLink(w); err != nil {
			return err
		}
	}
	s.escaping = escapingLinks(s.links)
	return nil
}

func (s *scanner) readLink(w walkEntry) error {
	t, err := os.Readlink(w.abs)
	if err != nil {
		return fmt.Errorf("read working directory: %w", err)
	}
	if filepath.IsAbs(t) {
		if rel, err := filepath.Rel(filepath.Dir(w.abs), t); err == nil && within(s.root, t) {
			t = rel
		}
	}
	if !utf8.ValidString(t) {
		// A JSON manifest would carry it changed (U+FFFD for each bad byte).
		s.m.Notes = append(s.m.Notes, fmt.Sprintf("left out symlink %s: its target %s is not valid UTF-8, which a job's tree cannot carry unchanged", w.rel, strconv.Quote(t)))
		s.skipped[w.rel] = true
		return nil
	}
	s.links[w.rel] = filepath.ToSlash(t)
	return nil
}

// escapingLinks removes from links, and returns, those whose path leaves the tree,
// also through other links that do.
func escapingLinks(links map[string]string) map[string]bool {
	escaping := map[string]bool{}
	for changed := true; changed; {
		changed = false
		for name, t := range links {
			if linkStaysInside(links, name, t) != nil {
				escaping[name] = true
				delete(links, name)
				changed = true
			}
		}
	}
	return escaping
}

// entries makes the manifest's entries, in walk order, and lists the files whose hash
// the cache does not hold.
func (s *scanner) entries(context.Context) error {
	s.cache = loadHashCache(s.o.CacheDir, s.root)
	for _, w := range s.walked {
		if !s.skipped[w.rel] {
			s.entry(w)
		}
	}
	return nil
}

func (s *scanner) entry(w walkEntry) {
	info := w.info
	switch {
	case info.IsDir():
		s.m.Entries = append(s.m.Entries, Entry{Path: w.rel, Type: TypeDir, Mode: info.Mode().Perm()})
		return
	case info.Mode()&fs.ModeSymlink != 0 && !s.escaping[w.rel]:
		s.m.Entries = append(s.m.Entries, Entry{Path: w.rel, Type: TypeSymlink, Target: s.links[w.rel]})
		return
	case info.Mode()&fs.ModeSymlink != 0:
		ti, ok := s.linkedFile(w)
		if !ok {
			return
		}
		info = ti
	}
	s.addFile(w, info)
}

// linkedFile is the file a link whose path leaves the tree is shipped as: only when that
// file is itself inside the tree; what lies outside (/etc/shadow, ../../secrets) is
// never read, as git never follows a link. ok is false (and a note says why) otherwise.
func (s *scanner) linkedFile(w walkEntry) (fs.FileInfo, bool) {
	real, rerr := filepath.EvalSymlinks(w.abs)
	ti, err := os.Stat(w.abs)
	if rerr != nil || err != nil || !ti.Mode().IsRegular() || !within(s.realRoot, real) {
		t, _ := os.Readlink(w.abs)
		s.m.Notes = append(s.m.Notes, fmt.Sprintf("left out symlink %s -> %s: it points outside the working directory", w.rel, t))
		return nil, false
	}
	return ti, true
}

// addFile adds the file w with info, its hash from the cache when its size, mtime and
// inode are unchanged, else to be hashed.
func (s *scanner) addFile(w walkEntry, info fs.FileInfo) {
	e := Entry{Path: w.rel, Type: TypeFile, Mode: info.Mode().Perm(), Size: info.Size()}
	key := statKey{Size: info.Size(), MtimeNS: info.ModTime().UnixNano(), Ino: inode(info)}
	if c, ok := s.cache.old[w.rel]; ok && c.statKey == key {
		e.SHA256 = c.SHA256
	} else {
		s.jobs = append(s.jobs, hashJob{len(s.m.Entries), w.abs})
	}
	s.cache.keep(w.rel, key, info.ModTime())
	s.m.Entries = append(s.m.Entries, e)
}

// hash hashes the listed files in parallel.
func (s *scanner) hash(ctx context.Context) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(4, runtime.GOMAXPROCS(0)))
	for _, j := range s.jobs {
		g.Go(func() error { return s.hashOne(gctx, j) })
	}
	return g.Wait()
}

func (s *scanner) hashOne(ctx context.Context, j hashJob) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	sum, n, err := hashFile(j.abs)
	if err != nil {
		return fmt.Errorf("read working directory: %w (make it readable, or list it in %s)", err, IgnoreFile)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := &s.m.Entries[j.i]
	if n != e.Size {
		// Changed while we looked: record what we hashed, and do not cache it.
		s.cache.drop(e.Path)
	}
	e.SHA256, e.Size = sum, n
	s.m.Scan.HashedFiles++
	s.m.Scan.HashedBytes += n
	return nil
}

// totals counts the files and their bytes, and saves the hash cache.
func (s *scanner) totals(context.Context) error {
	for _, e := range s.m.Entries {
		if e.Type == TypeFile {
			s.m.Scan.Files++
			s.m.Scan.Bytes += e.Size
			s.cache.setSum(e.Path, e.SHA256)
		}
	}
	s.cache.save()
	return nil
}

func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

func hashFile(p string) (string, int64, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// The hash cache: one JSON file per root under the cache directory, mapping a path to
// the (size, mtime, inode) it had when hashed. An entry whose mtime is too close to the
// moment the cache is written is not saved ("racily clean", as git calls it): the file
// could change again within the same timestamp tick without its mtime moving.

type statKey struct {
	Size    int64  `json:"size"`
	MtimeNS int64  `json:"mtime_ns"`
	Ino     uint64 `json:"ino"`
}

type cacheEntry struct {
	statKey
	SHA256 string `json:"sha256"`
}

type hashCacheFile struct {
	Version int                   `json:"version"`
	Root    string                `json:"root"`
	Files   map[string]cacheEntry `json:"files"`
}

type hashCache struct {
	file  string
	root  string
	old   map[string]cacheEntry
	new   map[string]cacheEntry
	mtime map[string]time.Time
	raw   []byte // the file as read: an unchanged cache is not written again
}

const hashCacheVersion = 1

func loadHashCache(dir, root string) *hashCache {
	c := &hashCache{root: root, new: map[string]cacheEntry{}, mtime: map[string]time.Time{}}
	if dir == "" {
		return c
	}
	sum := sha256.Sum256([]byte(root))
	c.file = filepath.Join(dir, "hashes-"+hex.EncodeToString(sum[:8])+".json")
	b, err := os.ReadFile(c.file)
	if err != nil {
		return c
	}
	c.raw = b
	var f hashCacheFile
	if json.Unmarshal(b, &f) == nil && f.Version == hashCacheVersion && f.Root == root {
		for _, v := range f.Files {
			if !isHex256(v.SHA256) {
				return c
			}
		}
		c.old = f.Files
	}
	return c
}

func (c *hashCache) keep(rel string, k statKey, mtime time.Time) {
	c.new[rel] = cacheEntry{statKey: k}
	c.mtime[rel] = mtime
}

func (c *hashCache) drop(rel string) { delete(c.new, rel) }

func (c *hashCache) setSum(rel, sum string) {
	if e, ok := c.new[rel]; ok {
		e.SHA256 = sum
		c.new[rel] = e
	}
}

// save writes the cache; failures are ignored (the cache only saves time).
func (c *hashCache) save() {
	if c.file == "" {
		return
	}
	now := time.Now()
	for rel, mt := range c.mtime {
		window := 100 * time.Millisecond
		if mt.Nanosecond() == 0 {
			window = 2 * time.Second // a file system with whole-second timestamps
		}
		if now.Sub(mt) < window {
			delete(c.new, rel)
		}
	}
	b, err := json.Marshal(hashCacheFile{Version: hashCacheVersion, Root: c.root, Files: c.new})
	if err != nil || bytes.Equal(b, c.raw) {
		return // nothing changed: a call from an unchanged tree writes nothing here
	}
	_ = atomicfile.Write(c.file, b, 0o644, 0o755)
}
