// Package pack ships the user's working directory with a job: it finds the root to ship,
// walks it with the default excludes, writes it as a tar.gz archive, and materialises
// such an archive on the worker without letting any entry escape the destination.
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
	"sort"
	"strings"
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

// Options tune what Archive includes.
type Options struct {
	// Excludes are names skipped anywhere in the tree (default: DefaultExcludes).
	Excludes []string
	// Skip are root-relative slash paths left out (e.g. local Data paths).
	Skip []string
}

// Stats describe an archive.
type Stats struct {
	Files int
	Bytes int64
}

// Archive writes root as a tar.gz to w. Entries are sorted, so the same tree gives the
// same archive. Regular files keep their mode; symlinks are kept as links; everything
// else (sockets, devices) is skipped.
func Archive(ctx context.Context, root string, w io.Writer, o Options) (Stats, error) {
	var st Stats
	excl := o.Excludes
	if excl == nil {
		excl = DefaultExcludes
	}
	skip := map[string]bool{}
	for _, s := range o.Skip {
		skip[strings.Trim(filepath.ToSlash(s), "/")] = true
	}
	var paths []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("read working directory: %w", err)
		}
		if p == root {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		for _, e := range excl {
			if d.Name() == e {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
		}
		if skip[rel] {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		paths = append(paths, p)
		return nil
	})
	if err != nil {
		return st, err
	}
	sort.Strings(paths)
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	for _, p := range paths {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return st, fmt.Errorf("read working directory: %w", err)
		}
		rel, _ := filepath.Rel(root, p)
		link := ""
		if fi.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return st, fmt.Errorf("read working directory: %w", err)
			}
		} else if !fi.Mode().IsRegular() && !fi.IsDir() {
			continue
		}
		hdr, err := tar.FileInfoHeader(fi, link)
		if err != nil {
			return st, err
		}
		hdr.Name = filepath.ToSlash(rel)
		if fi.IsDir() {
			hdr.Name += "/"
		}
		hdr.Uname, hdr.Gname, hdr.Uid, hdr.Gid = "", "", 0, 0
		hdr.ModTime, hdr.AccessTime, hdr.ChangeTime = fi.ModTime().Truncate(1e9), time0, time0
		hdr.Format = tar.FormatPAX
		if err := tw.WriteHeader(hdr); err != nil {
			return st, err
		}
		if fi.Mode().IsRegular() {
			f, err := os.Open(p)
			if err != nil {
				return st, fmt.Errorf("read working directory: %w", err)
			}
			n, err := io.Copy(tw, f)
			f.Close()
			if err != nil {
				return st, fmt.Errorf("read %s: %w", p, err)
			}
			st.Files++
			st.Bytes += n
		}
	}
	if err := tw.Close(); err != nil {
		return st, err
	}
	return st, gz.Close()
}
