package store

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"

	"gocloud.dev/blob"
)

// Drivers. file:// and mem:// are built in: their gocloud drivers link nothing but the
// standard library, and they are the embedded default and the tests' store. gs:// and
// s3:// link the clouds' SDKs (a hundred AWS packages, the Google API clients), so their
// drivers live in store/gcs and store/s3, which a program imports for their side effect,
// as it imports gocloud's own drivers: cmd/kinetic and cmd/kinetic-runner do. A package
// that only needs the Store type (the backend interface) then links no cloud SDK.

// DriverPackages names the package that registers each scheme's driver, for the error
// a program that did not link one gives.
var DriverPackages = map[string]string{
	"gs": "github.com/kinetic-run/kinetic/store/gcs",
	"s3": "github.com/kinetic-run/kinetic/store/s3",
}

// GCSOpener opens bucket: on a custom GCS JSON API endpoint (scheme://host[:port], an
// emulator such as fake-gcs-server) without credentials, or with endpoint "" on Google
// Cloud Storage with Application Default Credentials.
type GCSOpener func(ctx context.Context, bucket, endpoint string) (*blob.Bucket, error)

// GCSGlob returns a ListOptions.BeforeList that makes a gs:// listing return only the
// objects whose names (the whole name in the bucket, its prefix included) match glob:
// GCS's matchGlob, which store/gcs sets on gcsblob's query (store.ListNamed).
type GCSGlob func(glob string) func(as func(any) bool) error

var (
	driverMu  sync.RWMutex
	gcsOpener GCSOpener
	gcsGlob   GCSGlob
)

// errNoCredentials marks an opener's error that already names its fix (no credentials
// found), which Open passes on without its generic hint. store/gcs's ErrNoCredentials
// wraps it.
var errNoCredentials = errors.New("no credentials")

// NoCredentials wraps err (which must name the fix) as the error of an opener that
// found no credentials.
func NoCredentials(err error) error { return fmt.Errorf("%w%.0w", err, errNoCredentials) }

// RegisterGCS makes f the opener of gs:// URLs. store/gcs calls it from its init.
// (gocloud's own gs:// URL opener is not used: without credentials it prints a warning
// on stdout and goes on with an empty key, whose first request fails with ASN.1 text.)
func RegisterGCS(f GCSOpener) {
	driverMu.Lock()
	defer driverMu.Unlock()
	gcsOpener = f
}

// RegisterGCSGlob makes f how ListNamed asks a gs:// bucket to match names itself.
// store/gcs calls it from its init; without it ListNamed matches every name itself.
func RegisterGCSGlob(f GCSGlob) {
	driverMu.Lock()
	defer driverMu.Unlock()
	gcsGlob = f
}

// openBucket opens t's bucket through the driver its scheme registered.
func openBucket(ctx context.Context, t target) (*blob.Bucket, error) {
	if err := linked(t); err != nil {
		return nil, err
	}
	if t.scheme != "gs" {
		return blob.OpenBucket(ctx, t.open)
	}
	driverMu.RLock()
	f := gcsOpener
	driverMu.RUnlock()
	b, err := f(ctx, t.bucket, t.endpoint)
	if err != nil {
		return nil, err
	}
	if t.prefix != "" {
		b = blob.PrefixedBucket(b, t.prefix)
	}
	return b, nil
}

// linked says, for a scheme whose driver this program does not link, which package
// would have registered it.
func linked(t target) error {
	ok := blob.DefaultURLMux().ValidBucketScheme(t.scheme)
	if t.scheme == "gs" {
		driverMu.RLock()
		ok = gcsOpener != nil
		driverMu.RUnlock()
	}
	if ok {
		return nil
	}
	pkg := DriverPackages[t.scheme]
	if pkg == "" {
		pkg = "gocloud.dev/blob/" + t.scheme + "blob"
	}
	return fmt.Errorf("store URL %q: this program was built without the %s:// driver (it links %s for that)", t.record, t.scheme, pkg)
}

// GCSLocation takes a gs:// store URL apart: the bucket, the key prefix ("" or ending in
// "/") and the custom endpoint ("" for real GCS; else from the URL's endpoint parameter
// or STORAGE_EMULATOR_HOST), as Open would use them.
func GCSLocation(rawURL string) (bucket, prefix, endpoint string, err error) {
	t, err := normalise(rawURL)
	if err != nil {
		return "", "", "", err
	}
	if t.scheme != "gs" {
		return "", "", "", fmt.Errorf("%q is not a gs:// URL", rawURL)
	}
	if t.endpoint != "" {
		return t.bucket, t.prefix, t.endpoint, nil
	}
	u, err := url.Parse(t.open)
	if err != nil {
		return "", "", "", fmt.Errorf("store URL %q: %w", rawURL, err)
	}
	return u.Host, u.Query().Get("prefix"), "", nil
}
