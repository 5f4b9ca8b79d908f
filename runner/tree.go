package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/kinetic-run/kinetic/internal/atomicfile"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/pack"
	"github.com/kinetic-run/kinetic/store"
)

// A worker that runs many children of one batch would otherwise write the same shipped
// tree once per child. Instead it keeps the tree it made last, with a snapshot of every
// entry (mode, size, mtime, inode), and reuses it when the next job ships the same
// manifest and nothing in the tree changed: a job that wrote, added or removed anything
// gets a freshly materialised tree, so jobs stay isolated from one another.

type entryState struct {
	mode       fs.FileMode
	size       int64
	mtime, ino int64
}

type treeState struct {
	manifest string
	entries  map[string]entryState
}

var (
	treeMu sync.Mutex
	trees  = map[string]*treeState{} // by TreeDir
	// bootstraps are the bootstrap copies this process wrote or checked, as it left them.
	bootstraps = map[string]entryState{}
)

func ino(fi fs.FileInfo) int64 {
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int64(sys.Ino)
	}
	return 0
}

// reuseTree returns a directory holding the tree of ref: dir/tree, made again unless it
// already holds ref's tree unchanged.
func reuseTree(ctx context.Context, st *store.Store, ref pack.ManifestRef, dir string) (string, error) {
	treeMu.Lock()
	defer treeMu.Unlock()
	path := filepath.Join(dir, "tree")
	if t := trees[dir]; t != nil && t.manifest == ref.SHA256 {
		if now, err := snapshot(path); err == nil && same(now, t.entries) {
			return path, nil
		}
	}
	delete(trees, dir)
	if err := clearTree(path); err != nil {
		return "", fmt.Errorf("reset the working tree: %w", err)
	}
	if err := os.MkdirAll(path, 0o700); err != nil {
		return "", err
	}
	if err := pack.Materialize(ctx, st, ref, path); err != nil {
		return "", err
	}
	snap, err := snapshot(path)
	if err != nil {
		return "", err
	}
	trees[dir] = &treeState{manifest: ref.SHA256, entries: snap}
	return path, nil
}

// clearTree empties path for a new tree: the old one is renamed aside and removed in the
// background (a big tree's removal is not the next job's wait), with any left aside by
// an earlier process.
func clearTree(path string) error {
	old := setAside(path)
	aside := path + oldTreeSuffix + strconv.FormatInt(time.Now().UnixNano(), 36)
	switch err := os.Rename(path, aside); {
	case err == nil:
		old = append(old, aside)
	case !errors.Is(err, fs.ErrNotExist):
		if err := os.RemoveAll(path); err != nil {
			return err
		}
	}
	if len(old) > 0 {
		go func() {
			for _, p := range old {
				os.RemoveAll(p)
			}
		}()
	}
	return nil
}

// oldTreeSuffix names a tree set aside by clearTree until it is removed.
const oldTreeSuffix = ".old-"

// setAside lists the trees set aside beside path and not removed yet.
func setAside(path string) []string {
	old, _ := filepath.Glob(path + oldTreeSuffix + "*")
	return old
}

// DropTree removes the tree kept in dir (Options.TreeCache or TreeDir) and forgets it:
// a supervisor leaving does not keep a copy of a project on the disk.
func DropTree(dir string) {
	treeMu.Lock()
	delete(trees, dir)
	treeMu.Unlock()
	path := filepath.Join(dir, "tree")
	for _, p := range append(setAside(path), path) {
		os.RemoveAll(p)
	}
}

func snapshot(root string) (map[string]entryState, error) {
	out := map[string]entryState{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "__pycache__" {
			return filepath.SkipDir // bytecode caches Python writes as it imports: harmless
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		e := entryState{mode: fi.Mode(), size: fi.Size(), mtime: fi.ModTime().UnixNano()}
		if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
			e.ino = int64(sys.Ino)
		}
		if fi.IsDir() {
			// A directory's own size and mtime change when Python adds __pycache__
			// to it; what matters is its entries, which are compared one by one.
			e.size, e.mtime = 0, 0
		}
		out[p] = e
		return nil
	})
	return out, err
}

func same(a, b map[string]entryState) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || v != w {
			return false
		}
	}
	return true
}

// fetchPayload downloads and verifies the pickled call. A worker with a TreeDir keeps
// content-addressed payloads there: the children of a batch share one function pickle.
func fetchPayload(ctx context.Context, st *store.Store, ref *job.BlobRef, o Options) (string, error) {
	if o.TreeDir != "" {
		cached := filepath.Join(o.TreeDir, "payload-"+ref.SHA256+".pkl")
		if fi, err := os.Stat(cached); err == nil && fi.Size() == ref.Size {
			return cached, nil
		}
	}
	b, err := st.GetVerified(ctx, ref.Key, ref.SHA256)
	if err != nil {
		return "", inPhase(job.PhaseVerify, err)
	}
	if p, ok := st.LocalPath(ref.Key); ok && o.TreeDir == "" && o.InPlaceData {
		// A job on this machine reads the store's own file, just verified: objects are
		// never rewritten in place, so a copy per call bought nothing.
		return p, nil
	}
	path := filepath.Join(o.Workspace, "payload.pkl")
	if o.TreeDir != "" {
		path = filepath.Join(o.TreeDir, "payload-"+ref.SHA256+".pkl")
	}
	if err := atomicfile.Write(path, b, 0o600, 0o700); err != nil {
		return "", inPhase(job.PhaseDownload, err)
	}
	return path, nil
}

// writeBootstrap puts the bootstrap where the interpreter reads it: once per version
// beside the warm servers (WarmDir: a server checks the script a request names by its
// path, so one path for every job is one stat per call, where a copy per job was a
// read, a compare and a re-filed code object in the server and again in its child; and
// a batch executor that imports it finds its compiled copy there from the last batch),
// else once per worker (TreeDir), else in the job's workspace.
func writeBootstrap(o Options) (string, error) {
	return writeScript(o, "kinetic_bootstrap", bootstrap)
}

// scriptTags holds each embedded script's tag (name → the first 12 hex digits of its
// SHA-256), computed once: the sources are constants.
var scriptTags sync.Map

func scriptTag(name string, src []byte) string {
	if t, ok := scriptTags.Load(name); ok {
		return t.(string)
	}
	sum := sha256.Sum256(src)
	t := hex.EncodeToString(sum[:6])
	scriptTags.Store(name, t)
	return t
}

// writeScript writes the Python script src named name (".py" added) as writeBootstrap
// says, and returns its path.
func writeScript(o Options, name string, src []byte) (string, error) {
	dir, name := scriptPlace(o, name, src)
	if dir == "" {
		bs := filepath.Join(o.Workspace, name+".py")
		return bs, os.WriteFile(bs, src, 0o600)
	}
	bs := filepath.Join(dir, name+".py")
	if scriptUnchanged(bs) {
		return bs, nil
	}
	if b, err := os.ReadFile(bs); err != nil || string(b) != string(src) {
		if err := atomicfile.Write(bs, src, 0o600, 0o700); err != nil {
			return bs, err
		}
	}
	if fi, err := os.Stat(bs); err == nil {
		treeMu.Lock()
		bootstraps[bs] = entryState{size: fi.Size(), mtime: fi.ModTime().UnixNano(), ino: ino(fi)}
		treeMu.Unlock()
	}
	return bs, nil
}

// scriptPlace is the directory ("" for the workspace) and name of a script: the warm
// server's boot directory, absolute as the server names it (it prepares these at its
// start), with a tag of the script in the name; else the tree directory.
func scriptPlace(o Options, name string, src []byte) (dir, file string) {
	if o.WarmDir == "" {
		return o.TreeDir, name
	}
	if abs, err := filepath.Abs(o.WarmDir); err == nil {
		dir = filepath.Join(abs, "boot")
	} else {
		dir = filepath.Join(o.WarmDir, "boot")
	}
	return dir, name + "_" + scriptTag(name, src)
}

// scriptUnchanged says whether this process wrote (or checked) the script at bs before
// and it has not been touched since: one stat.
func scriptUnchanged(bs string) bool {
	fi, err := os.Stat(bs)
	treeMu.Lock()
	known, ok := bootstraps[bs]
	treeMu.Unlock()
	return err == nil && ok && fi.Size() == known.size && fi.ModTime().UnixNano() == known.mtime && ino(fi) == known.ino
}
