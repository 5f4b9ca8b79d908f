package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/kinetic-run/kinetic/internal/atomicfile"
)

// Writes for objects that no one reads until another object written after them says
// they are there (a result before its envelope, a running job's log chunk before its
// end): they need not appear whole at once, so on a file:// store they are written in
// place, without the temporary file and rename of Put — the local backend's group
// workers write a result and a log per input this way, through the store and not
// around it.

// PutInPlace writes one object that no reader looks at before an object written after
// it points to it: on a file:// store straight into place (a failed write may leave a
// partial object, which nothing reads); on any other store, Put.
func (s *Store) PutInPlace(ctx context.Context, key string, data []byte) error {
	if s.dir == "" || !plainKey(key) {
		return s.Put(ctx, key, data)
	}
	p := filepath.Join(s.dir, filepath.FromSlash(key))
	err := writeFileRaw(p, data)
	if errors.Is(err, fs.ErrNotExist) {
		if err = os.MkdirAll(filepath.Dir(p), 0o700); err == nil {
			err = writeFileRaw(p, data)
		}
	}
	if err != nil {
		return s.coded("write", key, err)
	}
	return nil
}

// writeFileRaw is os.WriteFile(path, data, 0o600) in three system calls (an *os.File
// adds the poller's and the non-blocking flag's: see atomicfile.write).
func writeFileRaw(path string, data []byte) error {
	var fd int
	var err error
	for {
		fd, err = syscall.Open(path, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_TRUNC|syscall.O_CLOEXEC, 0o600)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return &fs.PathError{Op: "open", Path: path, Err: err}
	}
	err = atomicfile.WriteFD(fd, data)
	if cerr := syscall.Close(fd); err == nil {
		err = cerr
	}
	if err != nil {
		return &fs.PathError{Op: "write", Path: path, Err: err}
	}
	return nil
}

// NewAppender returns a writer of object key made at its first byte (a writer that
// is given nothing makes no object). On a file:// store every write is appended to the
// object at once, so a reader sees it grow; on any other store the object is written
// whole by Close.
func (s *Store) NewAppender(ctx context.Context, key string) io.WriteCloser {
	return &appender{ctx: ctx, s: s, key: key}
}

type appender struct {
	ctx context.Context
	s   *Store
	key string
	f   *os.File
	buf bytes.Buffer
}

func (a *appender) Write(p []byte) (int, error) {
	if a.s.dir == "" || !plainKey(a.key) {
		return a.buf.Write(p)
	}
	if a.f == nil {
		path := filepath.Join(a.s.dir, filepath.FromSlash(a.key))
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return 0, a.s.coded("write", a.key, err)
		}
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return 0, a.s.coded("write", a.key, err)
		}
		a.f = f
	}
	return a.f.Write(p)
}

func (a *appender) Close() error {
	if a.f != nil {
		return a.f.Close()
	}
	if a.buf.Len() > 0 {
		return a.s.Put(a.ctx, a.key, a.buf.Bytes())
	}
	return nil
}

// Size returns the size of object key (a file:// store answers from the file system).
func (s *Store) Size(ctx context.Context, key string) (int64, error) {
	if s.dir != "" && plainKey(key) {
		fi, err := os.Stat(filepath.Join(s.dir, filepath.FromSlash(key)))
		if errors.Is(err, fs.ErrNotExist) {
			return 0, fmt.Errorf("read %s: %w", key, ErrNotFound)
		}
		if err != nil {
			return 0, s.coded("read", key, err)
		}
		return fi.Size(), nil
	}
	a, err := s.bucket.Attributes(ctx, key)
	if err != nil {
		return 0, s.wrap(key, err)
	}
	return a.Size, nil
}
