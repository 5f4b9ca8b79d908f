package image

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"time"

	"github.com/klauspost/compress/gzip"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// fileLayer is a gzipped layer kept in a file, with both hashes computed while it was
// written (one pass, no re-reading before the push).
type fileLayer struct {
	path      string
	digest    v1.Hash
	diffID    v1.Hash
	size      int64
	mediaType types.MediaType
}

func (l *fileLayer) Digest() (v1.Hash, error)            { return l.digest, nil }
func (l *fileLayer) DiffID() (v1.Hash, error)            { return l.diffID, nil }
func (l *fileLayer) Size() (int64, error)                { return l.size, nil }
func (l *fileLayer) MediaType() (types.MediaType, error) { return l.mediaType, nil }
func (l *fileLayer) Compressed() (io.ReadCloser, error)  { return os.Open(l.path) }
func (l *fileLayer) Uncompressed() (io.ReadCloser, error) {
	f, err := os.Open(l.path)
	if err != nil {
		return nil, err
	}
	zr, err := gzip.NewReader(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	return struct {
		io.Reader
		io.Closer
	}{zr, f}, nil
}

// layerFile is one entry of a layer: a file of this machine placed at Target.
type layerFile struct {
	Target string // absolute path in the image
	Source string // file or directory on this machine
	Mode   int64  // 0 = the source's permission bits
}

// writeLayer writes a reproducible layer (sorted entries, uid/gid 0, zero times) of the
// given files and directory trees to out (gzipped, fast level) and returns it.
func writeLayer(out string, files []layerFile, mt types.MediaType) (*fileLayer, error) {
	f, err := os.Create(out)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	dh, uh := sha256.New(), sha256.New()
	cw := &countWriter{w: io.MultiWriter(f, dh)}
	zw, err := gzip.NewWriterLevel(cw, gzip.BestSpeed)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(io.MultiWriter(zw, uh))
	dirs := map[string]bool{}
	epoch := time.Unix(0, 0)
	addDirs := func(p string) error {
		var parents []string
		for d := path.Dir(p); d != "/" && d != "." && !dirs[d]; d = path.Dir(d) {
			parents = append([]string{d}, parents...)
			dirs[d] = true
		}
		for _, d := range parents {
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d[1:] + "/", Mode: 0o755, ModTime: epoch, Format: tar.FormatPAX}); err != nil {
				return err
			}
		}
		return nil
	}
	for _, lf := range files {
		fi, err := os.Stat(lf.Source)
		if err != nil {
			return nil, err
		}
		if !fi.IsDir() {
			if err := addDirs(lf.Target); err != nil {
				return nil, err
			}
			if err := addFile(tw, lf.Target, lf.Source, fi, lf.Mode); err != nil {
				return nil, err
			}
			continue
		}
		var paths []string
		if err := filepath.WalkDir(lf.Source, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			paths = append(paths, p)
			return nil
		}); err != nil {
			return nil, err
		}
		sort.Strings(paths)
		for _, p := range paths {
			rel, _ := filepath.Rel(lf.Source, p)
			target := path.Join(lf.Target, filepath.ToSlash(rel))
			fi, err := os.Lstat(p)
			if err != nil {
				return nil, err
			}
			if err := addDirs(target); err != nil {
				return nil, err
			}
			switch {
			case fi.IsDir():
				if dirs[target] {
					continue
				}
				dirs[target] = true
				err = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: target[1:] + "/", Mode: 0o755, ModTime: epoch, Format: tar.FormatPAX})
			case fi.Mode()&fs.ModeSymlink != 0:
				var link string
				if link, err = os.Readlink(p); err == nil {
					err = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: target[1:], Linkname: link, Mode: 0o777, ModTime: epoch, Format: tar.FormatPAX})
				}
			case fi.Mode().IsRegular():
				err = addFile(tw, target, p, fi, 0)
			}
			if err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	return &fileLayer{
		path:      out,
		digest:    v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(dh.Sum(nil))},
		diffID:    v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(uh.Sum(nil))},
		size:      cw.n,
		mediaType: mt,
	}, nil
}

func addFile(tw *tar.Writer, target, src string, fi fs.FileInfo, mode int64) error {
	if mode == 0 {
		mode = int64(fi.Mode().Perm())
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: target[1:], Size: fi.Size(), Mode: mode, ModTime: time.Unix(0, 0), Format: tar.FormatPAX}); err != nil {
		return err
	}
	r, err := os.Open(src)
	if err != nil {
		return err
	}
	defer r.Close()
	n, err := io.Copy(tw, r)
	if err == nil && n != fi.Size() {
		err = fmt.Errorf("%s changed size while it was being added to a layer", src)
	}
	return err
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
