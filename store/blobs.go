package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/kinetic-run/kinetic/errs"
)

// Content-addressed blobs (blobs/sha256/HEX) are trusted by name: a submission that
// finds one does not upload it again. A blob whose content does not match its name (cut
// short by a full disk, overwritten by hand) would then break every later job that
// ships the same content. Two checks keep that from lasting:
//
//   - a submission compares the size of a blob it finds with the size it would upload
//     (StoredSize: one stat, or the attributes a bucket's Exists reads anyway) and
//     uploads it again when they differ;
//   - a reader that verifies a blob's SHA-256 (the runner, always) and finds another
//     removes it (RemoveDamagedBlob), so that the next submission uploads it again, and
//     says so.
//
// Hashing every blob found at submission would cost as much as uploading it again
// (docs/store.md, "Damaged blobs").

// StoredSize returns the size of the object at key (ErrNotFound when there is none).
func (s *Store) StoredSize(ctx context.Context, key string) (int64, error) {
	if s.dir != "" && plainKey(key) {
		var st syscall.Stat_t
		err := syscall.Stat(filepath.Join(s.dir, filepath.FromSlash(key)), &st)
		switch {
		case err == nil && st.Mode&syscall.S_IFMT != syscall.S_IFDIR:
			return st.Size, nil
		case err == nil, err == syscall.ENOENT, err == syscall.ENOTDIR:
			return 0, fmt.Errorf("%s: %w", key, ErrNotFound)
		default:
			return 0, s.coded("check", key, err)
		}
	}
	a, err := s.bucket.Attributes(ctx, key)
	if s.notFound(err) {
		return 0, fmt.Errorf("%s: %w", key, ErrNotFound)
	}
	if err != nil {
		return 0, s.coded("check", key, err)
	}
	return a.Size, nil
}

// HasBlob reports whether the store holds blob key whole as far as its size tells
// (size bytes): a blob of another size is damaged, and the caller uploads it again
// (a Put replaces it atomically).
func (s *Store) HasBlob(ctx context.Context, key string, size int64) (bool, error) {
	n, err := s.StoredSize(ctx, key)
	if IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return n == size, nil
}

// ErrDamagedBlob is wrapped by the error for a content-addressed blob whose content
// does not match its name.
var ErrDamagedBlob = errs.New(errs.Internal, "damaged blob")

// IsBlobKey reports whether key is a content-addressed blob (blobs/sha256/HEX).
func IsBlobKey(key string) bool {
	sum, ok := strings.CutPrefix(key, "blobs/sha256/")
	if !ok || len(sum) != 64 {
		return false
	}
	_, err := hex.DecodeString(sum)
	return err == nil
}

// RemoveDamagedBlob removes blob key, found damaged (what says how, e.g. "its SHA-256
// is X"), and returns the error that says so and how to repair it: the next submission
// uploads the blob again. Objects that are not blobs are not removed (their job is
// damaged: the error names it).
func (s *Store) RemoveDamagedBlob(ctx context.Context, key, what string) error {
	if !IsBlobKey(key) {
		return damagedBlob(fmt.Sprintf("%s is damaged: %s; it was changed or corrupted after it was written", key, what))
	}
	if err := s.Delete(ctx, key); err != nil {
		return damagedBlob(fmt.Sprintf("%s is damaged in the store %s: %s (cut short or overwritten), and it could not be removed (%v): delete it, and the next submission uploads it again", key, s.URL(), what, err))
	}
	return damagedBlob(fmt.Sprintf("%s is damaged in the store %s: %s (cut short or overwritten); it was removed, so the next submission of this code or data uploads it again: submit the job again", key, s.URL(), what))
}

type damagedBlobError struct{ msg string }

func (e *damagedBlobError) Error() string        { return e.msg }
func (e *damagedBlobError) Is(target error) bool { return target == ErrDamagedBlob }

func damagedBlob(msg string) error { return &damagedBlobError{msg} }

// sha256Hex is the hex SHA-256 of b.
func sha256Hex(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}
