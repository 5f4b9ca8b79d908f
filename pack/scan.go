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
	walked, notes, err := walkNoted(root, o)
	if err != nil {
		return nil, err
	}
	m := &Manifest{Version: ManifestVersion, Root: root, Notes: notes}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, fmt.Errorf("read working directory: %w", err)
	}

	// Symlinks: keep those that stay inside; the others become files or are dropped.
	links := map[string]string{}
	skipped := map[string]bool{}
	for _, w := range walked {
		if w.info.Mode()&fs.ModeSymlink == 0 {
			continue
		}
		t, err := os.Readlink(w.abs)
		if err != nil {
			return nil, fmt.Errorf("read working directory: %w", err)
		}
		if filepath.IsAbs(t) {
			if rel, err := filepath.Rel(filepath.Dir(w.abs), t); err == nil && within(root, t) {
				t = rel
			}
		}
		if !utf8.ValidString(t) {
			// A JSON manifest would carry it changed (U+FFFD for each bad byte).
			m.Notes = append(m.Notes, fmt.Sprintf("left out symlink %s: its target %s is not valid UTF-8, which a job's tree cannot carry unchanged", w.rel, strconv.Quote(t)))
			skipped[w.rel] = true
			continue
		}
		links[w.rel] = filepath.ToSlash(t)
	}
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

	cache := loadHashCache(o.CacheDir, root)
	type job struct {
		i   int
		abs string
	}
	var jobs []job
	for _, w := range walked {
		info := w.info
		if skipped[w.rel] {
			continue
		}
		switch {
		case info.IsDir():
			m.Entries = append(m.Entries, Entry{Path: w.rel, Type: TypeDir, Mode: info.Mode().Perm()})
			continue
		case info.Mode()&fs.ModeSymlink != 0 && !escaping[w.rel]:
			m.Entries = append(m.Entries, Entry{Path: w.rel, Type: TypeSymlink, Target: links[w.rel]})
			continue
		case info.Mode()&fs.ModeSymlink != 0:
			// A link whose path leaves the tree is shipped as the file it points to only
			// when that file is itself inside the tree; what lies outside (/etc/shadow,
			// ../../secrets) is never read, as git never follows a link.
			real, rerr := filepath.EvalSymlinks(w.abs)
			ti, err := os.Stat(w.abs)
			if rerr != nil || err != nil || !ti.Mode().IsRegular() || !within(realRoot, real) {
				t, _ := os.Readlink(w.abs)
				m.Notes = append(m.Notes, fmt.Sprintf("left out symlink %s -> %s: it points outside the working directory", w.rel, t))
				continue
			}
			info = ti
		}
		e := Entry{Path: w.rel, Type: TypeFile, Mode: info.Mode().Perm(), Size: info.Size()}
		key := statKey{Size: info.Size(), MtimeNS: info.ModTime().UnixNano(), Ino: inode(info)}
		if c, ok := cache.old[w.rel]; ok && c.statKey == key {
			e.SHA256 = c.SHA256
		} else {
			jobs = append(jobs, job{len(m.Entries), w.abs})
		}
		cache.keep(w.rel, key, info.ModTime())
		m.Entries = append(m.Entries, e)
	}

	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(4, runtime.GOMAXPROCS(0)))
	var mu sync.Mutex
	for _, j := range jobs {
		g.Go(func() error {
			if err := gctx.Err(); err != nil {
				return err
			}
			sum, n, err := hashFile(j.abs)
			if err != nil {
				return fmt.Errorf("read working directory: %w (make it readable, or list it in %s)", err, IgnoreFile)
			}
			mu.Lock()
			defer mu.Unlock()
			e := &m.Entries[j.i]
			if n != e.Size {
				// Changed while we looked: record what we hashed, and do not cache it.
				cache.drop(e.Path)
			}
			e.SHA256, e.Size = sum, n
			m.Scan.HashedFiles++
			m.Scan.HashedBytes += n
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	for _, e := range m.Entries {
		if e.Type == TypeFile {
			m.Scan.Files++
			m.Scan.Bytes += e.Size
			cache.setSum(e.Path, e.SHA256)
		}
	}
	cache.save()
	return m, nil
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
