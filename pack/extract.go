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
	x := &extractor{tr: tar.NewReader(gz), dest: dest}
	for {
		hdr, err := x.tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("working directory archive: %w", err)
		}
		if err := x.entry(hdr); err != nil {
			return err
		}
	}
}

// extractor is one Extract: the archive, where it goes, and the bytes written so far.
type extractor struct {
	tr    *tar.Reader
	dest  string
	total int64
}

// extractors write an entry of each type the archive may hold at target.
var extractors = map[byte]func(x *extractor, hdr *tar.Header, name, target string) error{
	tar.TypeDir:     (*extractor).dir,
	tar.TypeReg:     (*extractor).file,
	tar.TypeRegA:    (*extractor).file,
	tar.TypeSymlink: (*extractor).symlink,
}

// entry writes one entry, after checking where it goes.
func (x *extractor) entry(hdr *tar.Header) error {
	name, err := cleanName(hdr.Name)
	if err != nil || name == "." {
		return err
	}
	target := filepath.Join(x.dest, filepath.FromSlash(name))
	if err := noSymlinkParents(x.dest, name); err != nil {
		return err
	}
	if fi, err := os.Lstat(target); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		return fmt.Errorf("working directory archive: refusing entry %q: it would write through a symlink", name)
	}
	write, ok := extractors[hdr.Typeflag]
	if !ok {
		return fmt.Errorf("working directory archive: entry %q has unsupported type %q", hdr.Name, hdr.Typeflag)
	}
	return write(x, hdr, name, target)
}

func (x *extractor) dir(hdr *tar.Header, name, target string) error {
	return os.MkdirAll(target, os.FileMode(hdr.Mode).Perm()|0o700)
}

func (x *extractor) file(hdr *tar.Header, name, target string) error {
	mode := os.FileMode(hdr.Mode).Perm()
	if x.total += hdr.Size; x.total > MaxExtractBytes {
		return fmt.Errorf("working directory archive: more than %d bytes", int64(MaxExtractBytes))
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode|0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, io.LimitReader(x.tr, hdr.Size))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("extract %s: %w", name, err)
	}
	return os.Chmod(target, mode)
}

func (x *extractor) symlink(hdr *tar.Header, name, target string) error {
	if err := checkLink(name, hdr.Linkname); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	if err := os.Symlink(hdr.Linkname, target); err != nil {
		return fmt.Errorf("extract %s: %w", name, err)
	}
	return nil
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
