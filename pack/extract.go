package pack

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"
)

var time0 time.Time

// MaxExtractBytes bounds what one archive may write, so a hostile archive cannot fill
// the worker's disk.
const MaxExtractBytes = 64 << 30

// Extract materialises a tar.gz made by Archive into dest. It refuses absolute paths,
// ".." components, symlinks whose target leaves dest, links through symlinks, and entry
// types other than files, directories and symlinks. File modes are kept (without setuid
// or setgid bits).
func Extract(r io.Reader, dest string) error {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return fmt.Errorf("working directory archive: %w", err)
	}
	tr := tar.NewReader(gz)
	var total int64
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("working directory archive: %w", err)
		}
		name, err := cleanName(hdr.Name)
		if err != nil {
			return err
		}
		if name == "." {
			continue
		}
		target := filepath.Join(dest, filepath.FromSlash(name))
		if err := noSymlinkParents(dest, name); err != nil {
			return err
		}
		if fi, err := os.Lstat(target); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			return fmt.Errorf("working directory archive: refusing entry %q: it would write through a symlink", name)
		}
		mode := os.FileMode(hdr.Mode).Perm()
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, mode|0o700); err != nil {
				return err
			}
		case tar.TypeReg, tar.TypeRegA:
			if total += hdr.Size; total > MaxExtractBytes {
				return fmt.Errorf("working directory archive: more than %d bytes", int64(MaxExtractBytes))
			}
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode|0o600)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, io.LimitReader(tr, hdr.Size))
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return fmt.Errorf("extract %s: %w", name, err)
			}
			if err := os.Chmod(target, mode); err != nil {
				return err
			}
		case tar.TypeSymlink:
			if err := checkLink(name, hdr.Linkname); err != nil {
				return err
			}
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			if err := os.Symlink(hdr.Linkname, target); err != nil {
				return fmt.Errorf("extract %s: %w", name, err)
			}
		default:
			return fmt.Errorf("working directory archive: entry %q has unsupported type %q", hdr.Name, hdr.Typeflag)
		}
	}
}

func cleanName(n string) (string, error) {
	if n == "" || strings.HasPrefix(n, "/") || strings.Contains(n, "\\") || strings.ContainsRune(n, 0) {
		return "", fmt.Errorf("working directory archive: refusing entry %q: not a relative path", n)
	}
	for _, part := range strings.Split(strings.TrimSuffix(n, "/"), "/") {
		if part == ".." {
			return "", fmt.Errorf("working directory archive: refusing entry %q: it leaves the destination", n)
		}
	}
	return path.Clean(n), nil
}

func checkLink(name, link string) error {
	if link == "" || path.IsAbs(link) {
		return fmt.Errorf("working directory archive: refusing symlink %q -> %q: it points outside the working directory", name, link)
	}
	resolved := path.Join(path.Dir(name), link)
	if resolved == ".." || strings.HasPrefix(resolved, "../") {
		return fmt.Errorf("working directory archive: refusing symlink %q -> %q: it points outside the working directory", name, link)
	}
	return nil
}

// noSymlinkParents refuses an entry whose parent directories include a symlink made by
// an earlier entry: writing through it could land outside dest.
func noSymlinkParents(dest, name string) error {
	dir := path.Dir(name)
	cur := dest
	for _, part := range strings.Split(dir, "/") {
		if part == "." || part == "" {
			continue
		}
		cur = filepath.Join(cur, part)
		fi, err := os.Lstat(cur)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			return fmt.Errorf("working directory archive: refusing entry %q: it goes through a symlink", name)
		}
	}
	return nil
}
