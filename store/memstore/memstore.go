// Package memstore is the store's mem:// driver: gocloud's memblob, a bucket in this
// process's memory, for tests. Package store links it itself.
package memstore

import (
	"context"
	"net/url"

	"gocloud.dev/blob"
	_ "gocloud.dev/blob/memblob" // mem://

	"github.com/kinetic-run/kinetic/errs"
	"github.com/kinetic-run/kinetic/store/driver"
)

func init() { driver.Register(memDriver{}) }

type memDriver struct{}

func (memDriver) Scheme() string { return "mem" }

// Check accepts every mem:// URL: each opens a new, empty bucket.
func (memDriver) Check(*url.URL) error { return nil }

func (memDriver) Parse(u *url.URL, record string) (driver.Location, error) {
	if err := driver.OnlyParams(u.Query(), record, "is not one a mem:// store takes (it takes none)"); err != nil {
		return driver.Location{}, err
	}
	return driver.Location{Scheme: "mem", Open: u.String(), Record: record, Bucket: u.Host}, nil
}

func (memDriver) Open(ctx context.Context, loc driver.Location, _ bool) (*blob.Bucket, error) {
	return blob.OpenBucket(ctx, loc.Open)
}

// Traits: one process's memory; no other process or pod sees it.
func (memDriver) Traits() driver.Traits { return driver.Traits{} }

func (memDriver) PodCredentials(string) []driver.EnvVar { return nil }

// Code: memblob's errors are gocloud's own.
func (memDriver) Code(error) (errs.Code, bool) { return 0, false }
