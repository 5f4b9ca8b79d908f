package pack

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"

	"golang.org/x/sync/errgroup"

	"github.com/kinetic-run/kinetic/store"
)

// FetchManifest reads the manifest ref names, checks its SHA-256 and validates it.
func FetchManifest(ctx context.Context, st *store.Store, ref ManifestRef) (*Manifest, error) {
	if !isHex256(ref.SHA256) || ref.Key != store.BlobKey(ref.SHA256) {
		return nil, fmt.Errorf("%w: reference %q / %q is not a content-addressed manifest", ErrBadManifest, ref.Key, ref.SHA256)
	}
	b, err := st.GetVerified(ctx, ref.Key, ref.SHA256)
	if err != nil {
		return nil, fmt.Errorf("working directory manifest: %w", err)
	}
	return ParseManifest(b)
}

// Materialize rebuilds the tree ref names under dest (created if missing). It verifies
// the manifest's SHA-256, fetches each blob and each pack once (in parallel), checks every
// file's SHA-256 before the file appears under its name, keeps file and directory modes,
// and creates symlinks last. Nothing is written outside dest: the manifest is validated
// (ParseManifest), existing directories on the way must be real directories, files are
// written to a fresh temporary name and renamed into place (never opened through a
// symlink), and no entry lies below a symlink.
func Materialize(ctx context.Context, st *store.Store, ref ManifestRef, dest string) error {
	m, err := FetchManifest(ctx, st, ref)
	if err != nil {
		return err
	}
	return materialize(ctx, st, m, dest)
}

// maxBufferedFile is the largest file read from a pack into memory and written by
// another goroutine; bigger ones (only in hostile or hand-made manifests) are streamed.
const maxBufferedFile = 4 << 20

// content is one distinct file content and the entries that hold it.
type content struct {
	entries []*Entry
}

// damagedContent is a blob or pack of the store found not to hold what its name says
// while a file was materialised from it.
type damagedContent struct{ path, key, what string }

func (e *damagedContent) Error() string {
	return fmt.Sprintf("materialise %s: %s is damaged: %s", e.path, e.key, e.what)
}

func damaged(path, key, what string) error { return &damagedContent{path, key, what} }

// materialize rebuilds m under dest. A blob or pack found damaged is removed from the
// store (store.RemoveDamagedBlob), so that the next submission uploads it again, and
// the error says so.
func materialize(ctx context.Context, st *store.Store, m *Manifest, dest string) error {
	err := materializeTree(ctx, st, m, dest)
	var dc *damagedContent
	if errors.As(err, &dc) {
		return fmt.Errorf("materialise %s: %w", dc.path, st.RemoveDamagedBlob(context.WithoutCancel(ctx), dc.key, dc.what))
	}
	return err
}

// materializer rebuilds one manifest under dest, in materializeSteps' order.
type materializer struct {
	st   *store.Store
	m    *Manifest
	dest string // absolute
}

// materializeSteps are materializeTree's steps, in order; the first error stops it.
// Symlinks come after everything else is written, so nothing is written through them;
// directory modes last, so read-only directories could be filled.
var materializeSteps = []struct {
	name string
	run  func(*materializer, context.Context) error
}{
	{"directories", (*materializer).makeDirs},
	{"files", (*materializer).writeFiles},
	{"symlinks", (*materializer).makeSymlinks},
	{"directory modes", (*materializer).chmodDirs},
}

func materializeTree(ctx context.Context, st *store.Store, m *Manifest, dest string) error {
	dest, err := filepath.Abs(dest)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dest, 0o755); err != nil {
		return fmt.Errorf("materialise working directory: %w", err)
	}
	mt := &materializer{st: st, m: m, dest: dest}
	for _, s := range materializeSteps {
		if err := s.run(mt, ctx); err != nil {
			return err
		}
	}
	return nil
}

// makeDirs makes the declared directories and every parent, parents first.
func (mt *materializer) makeDirs(context.Context) error {
	for _, d := range dirsOf(mt.m) {
		if err := mt.makeDir(d); err != nil {
			return err
		}
	}
	return nil
}

// dirsOf is m's declared directories and every parent of an entry, sorted.
func dirsOf(m *Manifest) []string {
	dirs := map[string]bool{}
	for _, e := range m.Entries {
		if e.Type == TypeDir {
			dirs[e.Path] = true
		}
		for d := path.Dir(e.Path); d != "."; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	dirList := make([]string, 0, len(dirs))
	for d := range dirs {
		dirList = append(dirList, d)
	}
	sort.Strings(dirList)
	return dirList
}

// makeDir makes directory d (private until chmodDirs), refusing anything else there.
func (mt *materializer) makeDir(d string) error {
	p := filepath.Join(mt.dest, filepath.FromSlash(d))
	fi, err := os.Lstat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.Mkdir(p, 0o700); err != nil {
			return fmt.Errorf("materialise %s: %w", d, err)
		}
	case err != nil:
		return fmt.Errorf("materialise %s: %w", d, err)
	case !fi.IsDir():
		return fmt.Errorf("materialise %s: refusing to write through a %s already at that path", d, describe(fi))
	}
	return nil
}

// fileGroups are a manifest's files grouped by content, then by where the content lives.
type fileGroups struct {
	blobs []*content
	packs map[int][]*content // by pack index
	empty []*Entry
}

func groupFiles(m *Manifest) fileGroups {
	fg := fileGroups{packs: map[int][]*content{}}
	byContent := map[string]*content{}
	for i := range m.Entries {
		e := &m.Entries[i]
		switch {
		case e.Type != TypeFile:
			continue
		case e.Size == 0:
			fg.empty = append(fg.empty, e)
			continue
		}
		c, ok := byContent[e.SHA256]
		if !ok {
			c = &content{}
			byContent[e.SHA256] = c
			fg.add(c, e)
		}
		c.entries = append(c.entries, e)
	}
	return fg
}

// add files new content c under the blob or pack its first entry e names.
func (fg *fileGroups) add(c *content, e *Entry) {
	if e.Pack == nil {
		fg.blobs = append(fg.blobs, c)
	} else {
		fg.packs[*e.Pack] = append(fg.packs[*e.Pack], c)
	}
}

// writeFiles writes every file. Readers fetch objects; small files read from a pack are
// handed to writers, so one pack of many files is not written one file at a time.
func (mt *materializer) writeFiles(ctx context.Context) error {
	fg := groupFiles(mt.m)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(DefaultParallelism)
	w, wctx := errgroup.WithContext(gctx)
	w.SetLimit(2 * DefaultParallelism)
	for _, c := range fg.blobs {
		g.Go(func() error { return mt.fromBlob(gctx, c) })
	}
	for pi, cs := range fg.packs {
		g.Go(func() error { return mt.fromPack(gctx, &packReading{mt: mt, w: w, wctx: wctx, pi: pi}, cs) })
	}
	for _, e := range fg.empty {
		w.Go(func() error {
			return writeContent(mt.dest, "", &content{entries: []*Entry{e}}, eofReader{})
		})
	}
	gerr := g.Wait()
	if err := w.Wait(); err != nil {
		return err
	}
	return gerr
}

// fromBlob writes content c from its blob.
func (mt *materializer) fromBlob(ctx context.Context, c *content) error {
	e := c.entries[0]
	key := store.BlobKey(e.SHA256)
	r, err := mt.st.NewReader(ctx, key)
	if err != nil {
		return fmt.Errorf("materialise %s: %w", e.Path, err)
	}
	defer r.Close()
	return writeContent(mt.dest, key, c, r)
}

// fromPack reads the contents cs from pack p.pi once, in offset order.
func (mt *materializer) fromPack(ctx context.Context, p *packReading, cs []*content) error {
	sort.Slice(cs, func(i, j int) bool { return cs[i].entries[0].Offset < cs[j].entries[0].Offset })
	p.key = store.BlobKey(mt.m.Packs[p.pi].SHA256)
	r, err := mt.st.NewReader(ctx, p.key)
	if err != nil {
		return fmt.Errorf("materialise %s: %w", cs[0].entries[0].Path, err)
	}
	defer r.Close()
	p.r = r
	for _, c := range cs {
		if err := p.next(c); err != nil {
			return err
		}
	}
	return nil
}

// packReading is one pack being read from start to end.
type packReading struct {
	mt   *materializer
	w    *errgroup.Group // the writers
	wctx context.Context
	pi   int // the pack's index in the manifest
	key  string
	r    io.Reader
	pos  int64 // where r is
}

// next writes content c, the next in the pack: streamed if large, else read into memory
// and handed to a writer.
func (p *packReading) next(c *content) error {
	e := c.entries[0]
	if err := p.skipTo(e); err != nil {
		return err
	}
	p.pos = e.Offset + e.Size
	if e.Size > maxBufferedFile {
		return writeContent(p.mt.dest, p.key, c, p.r)
	}
	buf, err := p.read(e)
	if err != nil {
		return err
	}
	if err := p.wctx.Err(); err != nil {
		return err
	}
	p.w.Go(func() error { return writeContent(p.mt.dest, p.key, c, bytes.NewReader(buf)) })
	return nil
}

// skipTo reads up to e's offset.
func (p *packReading) skipTo(e *Entry) error {
	if e.Offset < p.pos {
		return fmt.Errorf("%w: file %q overlaps another in pack %s", ErrBadManifest, e.Path, p.mt.m.Packs[p.pi].SHA256)
	}
	_, err := io.CopyN(io.Discard, p.r, e.Offset-p.pos)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, io.EOF):
		return damaged(e.Path, p.key, fmt.Sprintf("it ends before byte %d, where the manifest puts %s", e.Offset, e.Path))
	}
	return fmt.Errorf("materialise %s: pack %s: %w", e.Path, p.key, err)
}

// read reads e's bytes (p.pos is already their end).
func (p *packReading) read(e *Entry) ([]byte, error) {
	buf := make([]byte, e.Size)
	n, err := io.ReadFull(p.r, buf)
	switch {
	case err == nil:
		return buf, nil
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return nil, damaged(e.Path, p.key, fmt.Sprintf("it ends after %d bytes, and the manifest puts %s up to byte %d", e.Offset+int64(n), e.Path, p.pos))
	}
	return nil, fmt.Errorf("materialise %s: %s ended after %d of %d bytes: %w", e.Path, p.key, e.Offset+int64(n), p.pos, err)
}

// makeSymlinks makes the symlinks, replacing symlinks already there.
func (mt *materializer) makeSymlinks(context.Context) error {
	for _, e := range mt.m.Entries {
		if e.Type != TypeSymlink {
			continue
		}
		if err := mt.symlink(e); err != nil {
			return fmt.Errorf("materialise %s: %w", e.Path, err)
		}
	}
	return nil
}

func (mt *materializer) symlink(e Entry) error {
	p := filepath.Join(mt.dest, filepath.FromSlash(e.Path))
	if fi, err := os.Lstat(p); err == nil {
		if fi.Mode()&fs.ModeSymlink == 0 {
			return fmt.Errorf("a %s is already at that path", describe(fi))
		}
		if err := os.Remove(p); err != nil {
			return err
		}
	}
	return os.Symlink(filepath.FromSlash(e.Target), p)
}

// chmodDirs sets the directories' modes, deepest first.
func (mt *materializer) chmodDirs(context.Context) error {
	for i := len(mt.m.Entries) - 1; i >= 0; i-- {
		e := mt.m.Entries[i]
		if e.Type != TypeDir {
			continue
		}
		if err := os.Chmod(filepath.Join(mt.dest, filepath.FromSlash(e.Path)), e.Mode); err != nil {
			return fmt.Errorf("materialise %s: %w", e.Path, err)
		}
	}
	return nil
}

func describe(fi fs.FileInfo) string {
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return "symlink"
	case fi.IsDir():
		return "directory"
	case fi.Mode().IsRegular():
		return "file"
	}
	return "special file"
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

// writeContent copies c's bytes from r into its first entry, verifying size and SHA-256,
// then copies that file to c's other entries.
func writeContent(dest, key string, c *content, r io.Reader) error {
	first := c.entries[0]
	if err := writeEntry(dest, key, first, r); err != nil {
		return err
	}
	for _, e := range c.entries[1:] {
		f, err := os.Open(filepath.Join(dest, filepath.FromSlash(first.Path)))
		if err != nil {
			return fmt.Errorf("materialise %s: %w", e.Path, err)
		}
		err = writeEntry(dest, key, e, f)
		f.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// writeEntry writes e's size bytes from r to a new temporary file next to e's path, checks
// them, and renames the file into place.
func writeEntry(dest, key string, e *Entry, r io.Reader) error {
	final := filepath.Join(dest, filepath.FromSlash(e.Path))
	f, err := os.CreateTemp(filepath.Dir(final), ".kinetic-tmp-*")
	if err != nil {
		return fmt.Errorf("materialise %s: %w", e.Path, err)
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(tmp)
		}
	}()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), io.LimitReader(r, e.Size))
	if err != nil {
		return fmt.Errorf("materialise %s: read %s: %w", e.Path, key, err)
	}
	if n != e.Size {
		return damaged(e.Path, key, fmt.Sprintf("it gave %d of the %d bytes of %s", n, e.Size, e.Path))
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != e.SHA256 {
		return damaged(e.Path, key, fmt.Sprintf("the SHA-256 of %s read from it is %s, not the manifest's %s", e.Path, got, e.SHA256))
	}
	if err := f.Chmod(e.Mode); err != nil {
		return fmt.Errorf("materialise %s: %w", e.Path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("materialise %s: %w", e.Path, err)
	}
	if err := os.Rename(tmp, final); err != nil {
		return fmt.Errorf("materialise %s: %w", e.Path, err)
	}
	ok = true
	return nil
}
