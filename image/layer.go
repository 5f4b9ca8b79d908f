package image

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
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

// layerWriter writes a reproducible layer (uid/gid 0, zero times, parents before
// children) to a file, gzipped at the fastest level, hashing as it goes.
type layerWriter struct {
	f      *os.File
	dh, uh hash.Hash
	cw     *countWriter
	zw     *gzip.Writer
	tw     *tar.Writer
	dirs   map[string]bool
	out    string
	mt     types.MediaType
}

func newLayerWriter(out string, mt types.MediaType) (*layerWriter, error) {
	f, err := os.Create(out)
	if err != nil {
		return nil, err
	}
	w := &layerWriter{f: f, dh: sha256.New(), uh: sha256.New(), dirs: map[string]bool{}, out: out, mt: mt}
	w.cw = &countWriter{w: io.MultiWriter(f, w.dh)}
	if w.zw, err = gzip.NewWriterLevel(w.cw, gzip.BestSpeed); err != nil {
		f.Close()
		return nil, err
	}
	w.tw = tar.NewWriter(io.MultiWriter(w.zw, w.uh))
	return w, nil
}

var epoch = time.Unix(0, 0)

// parents writes the directories above the absolute path p not yet written.
func (w *layerWriter) parents(p string) error {
	var ps []string
	for d := path.Dir(p); d != "/" && d != "." && !w.dirs[d]; d = path.Dir(d) {
		ps = append([]string{d}, ps...)
		w.dirs[d] = true
	}
	for _, d := range ps {
		if err := w.tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d[1:] + "/", Mode: 0o755, ModTime: epoch, Format: tar.FormatPAX}); err != nil {
			return err
		}
	}
	return nil
}

// file writes a regular file of size bytes from r at the absolute path target.
func (w *layerWriter) file(target string, size, mode int64, r io.Reader) error {
	if err := w.parents(target); err != nil {
		return err
	}
	if err := w.tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: target[1:], Size: size, Mode: mode, ModTime: epoch, Format: tar.FormatPAX}); err != nil {
		return err
	}
	n, err := io.Copy(w.tw, r)
	if err == nil && n != size {
		err = fmt.Errorf("%s: %d bytes, expected %d", target, n, size)
	}
	return err
}

func (w *layerWriter) close() (*fileLayer, error) {
	defer w.f.Close()
	if err := w.tw.Close(); err != nil {
		return nil, err
	}
	if err := w.zw.Close(); err != nil {
		return nil, err
	}
	if err := w.f.Close(); err != nil {
		return nil, err
	}
	return &fileLayer{
		path:      w.out,
		digest:    v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(w.dh.Sum(nil))},
		diffID:    v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(w.uh.Sum(nil))},
		size:      w.cw.n,
		mediaType: w.mt,
	}, nil
}

// writeWheelLayer writes the entries of wheels (see wheelEntries) as a layer, straight
// from the wheel archives: nothing is extracted to disk.
func writeWheelLayer(out string, entries []wheelEntry, mt types.MediaType) (*fileLayer, error) {
	w, err := newLayerWriter(out, mt)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if e.zf == nil {
			err = w.file(e.target, int64(len(e.data)), e.mode, bytes.NewReader(e.data))
		} else {
			var rc io.ReadCloser
			if rc, err = e.zf.Open(); err == nil {
				size := int64(e.zf.UncompressedSize64)
				var r io.Reader = rc
				if e.script {
					var delta int64
					if r, delta, err = rewriteShebang(rc); err == nil {
						size += delta
					}
				}
				if err == nil {
					err = w.file(e.target, size, e.mode, r)
				}
				if cerr := rc.Close(); err == nil {
					err = cerr // the CRC check happens at the end of the entry
				}
			}
		}
		if err != nil {
			w.f.Close()
			return nil, fmt.Errorf("wheel file %s: %w", e.target, err)
		}
	}
	return w.close()
}

// writeLayer writes a reproducible layer of the given files and directory trees.
func writeLayer(out string, files []layerFile, mt types.MediaType) (*fileLayer, error) {
	w, err := newLayerWriter(out, mt)
	if err != nil {
		return nil, err
	}
	defer w.f.Close()
	for _, lf := range files {
		fi, err := os.Stat(lf.Source)
		if err != nil {
			return nil, err
		}
		if fi.IsDir() {
			err = w.addTree(lf)
		} else if err = w.parents(lf.Target); err == nil {
			err = addFile(w.tw, lf.Target, lf.Source, fi, lf.Mode)
		}
		if err != nil {
			return nil, err
		}
	}
	return w.close()
}

// addTree adds the tree lf.Source at lf.Target, in the order of its sorted paths.
func (w *layerWriter) addTree(lf layerFile) error {
	var paths []string
	if err := filepath.WalkDir(lf.Source, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		paths = append(paths, p)
		return nil
	}); err != nil {
		return err
	}
	sort.Strings(paths)
	for _, p := range paths {
		rel, _ := filepath.Rel(lf.Source, p)
		if err := w.addPath(p, path.Join(lf.Target, filepath.ToSlash(rel))); err != nil {
			return err
		}
	}
	return nil
}

// addPath adds the directory, symbolic link or regular file p at target.
func (w *layerWriter) addPath(p, target string) error {
	fi, err := os.Lstat(p)
	if err != nil {
		return err
	}
	if err := w.parents(target); err != nil {
		return err
	}
	switch {
	case fi.IsDir():
		if w.dirs[target] {
			return nil
		}
		w.dirs[target] = true
		return w.tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: target[1:] + "/", Mode: 0o755, ModTime: epoch, Format: tar.FormatPAX})
	case fi.Mode()&fs.ModeSymlink != 0:
		link, err := os.Readlink(p)
		if err != nil {
			return err
		}
		return w.tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: target[1:], Linkname: link, Mode: 0o777, ModTime: epoch, Format: tar.FormatPAX})
	case fi.Mode().IsRegular():
		return addFile(w.tw, target, p, fi, 0)
	}
	return nil
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
