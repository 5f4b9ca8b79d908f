// Package pack ships the user's working directory with a job. FindRoot finds the root to
// ship; Scan walks it (default excludes, .kineticignore, skipped Data paths) and hashes
// every file into a Manifest; Upload stores only the content the store does not already
// hold (large files as blobs, small ones concatenated into packs) and then the manifest;
// Materialize rebuilds the tree on the worker from the manifest, verifying every file and
// never writing outside the destination. See docs/packaging.md.
//
// Archive and Extract are the older whole-tree tar.gz form.
package pack

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// rootMarkers are the files that make a directory a project root.
var rootMarkers = []string{"pyproject.toml", "requirements.txt", "setup.py", "setup.cfg", ".git"}

// DefaultExcludes are directory or file names never shipped.
var DefaultExcludes = []string{".git", "__pycache__", ".venv", "venv", "node_modules", ".tox", ".mypy_cache", ".ruff_cache", ".pytest_cache", ".ipynb_checkpoints", ".DS_Store", ".kinetic"}

// FindRoot returns the directory to ship for code in dir: first out of Python packages
// (directories with __init__.py), then up to the nearest directory holding a root marker,
// never above home or /. Without a marker, the first directory above the packages is the
// root.
func FindRoot(dir, home string) string {
	dir = filepath.Clean(dir)
	for isPackage(dir) && !isBoundary(dir, home) {
		dir = filepath.Dir(dir)
	}
	for d := dir; ; d = filepath.Dir(d) {
		if hasMarker(d) {
			return d
		}
		if isBoundary(d, home) {
			return dir
		}
	}
}

func isBoundary(d, home string) bool {
	return d == "/" || d == filepath.Dir(d) || (home != "" && d == filepath.Clean(home))
}

func isPackage(d string) bool {
	_, err := os.Stat(filepath.Join(d, "__init__.py"))
	return err == nil
}

func hasMarker(d string) bool {
	for _, m := range rootMarkers {
		if _, err := os.Lstat(filepath.Join(d, m)); err == nil {
			return true
		}
	}
	return false
}

// Options tune what Scan and Archive include.
type Options struct {
	// Excludes are names (of files or directories) skipped anywhere in the tree. nil
	// means DefaultExcludes, or none with NoDefaultExcludes. AlwaysExcludes are skipped
	// whatever this says.
	Excludes []string
	// NoDefaultExcludes leaves out only AlwaysExcludes (and Excludes, if set):
	// the setting no_default_excludes (KINETIC_NO_DEFAULT_EXCLUDES).
	NoDefaultExcludes bool
	// Skip are root-relative slash paths left out (e.g. local Data paths; see SkipPaths).
	Skip []string
	// CacheDir holds Scan's hash cache ("" = no cache: every file is read and hashed).
	CacheDir string
}

// Stats describe an archive.
type Stats struct {
	Files int
	Bytes int64
}

// Archive writes root as a tar.gz to w. Entries are sorted, so the same tree gives the
// same archive. Regular files keep their mode; symlinks are kept as links; everything
// else (sockets, devices) is skipped. It applies the same excludes, .kineticignore and
// Skip as Scan.
//
// Deprecated: Scan, Upload and Materialize ship only what the store lacks.
func Archive(ctx context.Context, root string, w io.Writer, o Options) (Stats, error) {
	var st Stats
	entries, err := walk(root, o)
	if err != nil {
		return st, err
	}
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		if err := archiveOne(tw, root, e.abs, &st); err != nil {
			return st, err
		}
	}
	if err := tw.Close(); err != nil {
		return st, err
	}
	return st, gz.Close()
}

// archiveOne writes the entry at p (its header, and a file's bytes) to tw, counting
// files in st; it skips what is neither a file, a directory nor a symlink.
func archiveOne(tw *tar.Writer, root, p string, st *Stats) error {
	fi, err := os.Lstat(p)
	if err != nil {
		return fmt.Errorf("read working directory: %w", err)
	}
	hdr, err := archiveHeader(root, p, fi)
	if err != nil || hdr == nil {
		return err
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return nil
	}
	f, err := os.Open(p)
	if err != nil {
		return fmt.Errorf("read working directory: %w", err)
	}
	n, err := io.Copy(tw, f)
	f.Close()
	if err != nil {
		return fmt.Errorf("read %s: %w", p, err)
	}
	st.Files++
	st.Bytes += n
	return nil
}

// archiveHeader is the reproducible header of the entry at p (nil to skip it): no
// owners, whole-second modification times.
func archiveHeader(root, p string, fi fs.FileInfo) (*tar.Header, error) {
	link := ""
	var err error
	if fi.Mode()&fs.ModeSymlink != 0 {
		if link, err = os.Readlink(p); err != nil {
			return nil, fmt.Errorf("read working directory: %w", err)
		}
	} else if !fi.Mode().IsRegular() && !fi.IsDir() {
		return nil, nil
	}
	hdr, err := tar.FileInfoHeader(fi, link)
	if err != nil {
		return nil, err
	}
	rel, _ := filepath.Rel(root, p)
	hdr.Name = filepath.ToSlash(rel)
	if fi.IsDir() {
		hdr.Name += "/"
	}
	hdr.Uname, hdr.Gname, hdr.Uid, hdr.Gid = "", "", 0, 0
	hdr.ModTime, hdr.AccessTime, hdr.ChangeTime = fi.ModTime().Truncate(1e9), time0, time0
	hdr.Format = tar.FormatPAX
	return hdr, nil
}
