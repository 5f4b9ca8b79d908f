// Package filestore is the store's file:// driver (a directory on this machine, the
// embedded default): gocloud's fileblob with no sidecar files and temporary files next
// to their targets, a directory made 0700 on first use. Package store links it itself.
package filestore

import (
	"context"
	"net/url"
	"os"
	"path/filepath"

	"gocloud.dev/blob"
	_ "gocloud.dev/blob/fileblob" // file://

	"github.com/kinetic-run/kinetic/errs"
	"github.com/kinetic-run/kinetic/internal/atomicfile"
	"github.com/kinetic-run/kinetic/store/driver"
)

func init() { driver.Register(fileDriver{}) }

type fileDriver struct{}

func (fileDriver) Scheme() string { return "file" }

// Check wants an absolute path: file://relative would put "relative" in the host.
func (fileDriver) Check(u *url.URL) error {
	if (u.Host != "" && u.Host != "localhost") || u.Path == "" || !filepath.IsAbs(u.Path) {
		return errs.New(errs.InvalidArgument, "a file store needs an absolute path, as in file:///var/kinetic/store")
	}
	return nil
}

// defaults are fileblob's parameters a store always has: temporary files beside their
// targets (so the final rename is atomic on one file system), no metadata sidecars,
// directories 0700.
var defaults = map[string]string{"no_tmp_dir": "1", "metadata": "skip", "dir_file_mode": "0700"}

func (d fileDriver) Parse(u *url.URL, record string) (driver.Location, error) {
	if err := d.Check(u); err != nil {
		return driver.Location{}, errs.Errorf(errs.InvalidArgument, "store URL %q: %w", record, err)
	}
	q := u.Query()
	loc := driver.Location{Scheme: "file", Record: record, Bucket: u.Path, Prefix: q.Get("prefix")}
	if loc.Prefix == "" {
		loc.Dir = u.Path
	}
	for k, v := range defaults {
		if q.Get(k) == "" {
			q.Set(k, v)
		}
	}
	o := *u
	o.RawQuery = q.Encode()
	loc.Open = o.String()
	return loc, nil
}

// Open makes the directory (0700: a store holds captured secrets, pickled code and
// logs; who else may read it is its owner's choice, docs/store.md) and, with create,
// checks now that it is writable, so that a bad path fails here with its name rather
// than in the middle of a submission.
func (fileDriver) Open(ctx context.Context, loc driver.Location, create bool) (*blob.Bucket, error) {
	root, _ := url.Parse(loc.Open)
	if err := os.MkdirAll(root.Path, 0o700); err != nil {
		return nil, errs.Errorf(codeOr(err, errs.InvalidArgument), "cannot create the directory %s: %w", root.Path, err)
	}
	b, err := blob.OpenBucket(ctx, loc.Open)
	if err != nil || !create {
		return b, err
	}
	if ok, _ := b.Exists(ctx, ".kinetic-store"); !ok {
		if err := writeMarker(ctx, b, loc); err != nil {
			b.Close()
			return nil, errs.Errorf(codeOr(err, errs.PermissionDenied), "the directory is not writable: %w", err)
		}
	}
	return b, nil
}

// writeMarker writes .kinetic-store, 0600 (fileblob's files are 0666 less the umask).
func writeMarker(ctx context.Context, b *blob.Bucket, loc driver.Location) error {
	if loc.Dir != "" {
		return atomicfile.Write(filepath.Join(loc.Dir, ".kinetic-store"), []byte("kinetic store\n"), 0o600, 0o700)
	}
	return b.WriteAll(ctx, ".kinetic-store", []byte("kinetic store\n"), nil)
}

func codeOr(err error, c errs.Code) errs.Code {
	if sc, ok := driver.SystemCode(err); ok {
		return sc
	}
	return c
}

// Traits: a directory on this machine; other processes here read it, no pod does.
func (fileDriver) Traits() driver.Traits { return driver.Traits{Shared: true} }

func (fileDriver) PodCredentials(string) []driver.EnvVar { return nil }

// Code: the system's errors (a full disk, a read-only file system, a refused
// permission), which fileblob calls Unknown.
func (fileDriver) Code(err error) (errs.Code, bool) { return driver.SystemCode(err) }
