package store

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"gocloud.dev/blob"

	"github.com/kinetic-run/kinetic/errs"
	"github.com/kinetic-run/kinetic/store/driver"
	_ "github.com/kinetic-run/kinetic/store/filestore" // file://
	_ "github.com/kinetic-run/kinetic/store/memstore"  // mem://
)

// Drivers (store/driver): each scheme's driver registers itself and owns its URLs, its
// bucket, pods' reach and credentials, and its error codes. file:// and mem:// are
// linked here: they need nothing beyond gocloud's drivers of the same name, and they
// are the embedded default and the tests' store. gs:// (store/gcs) and s3:// (store/s3)
// link the clouds' SDKs, so a program imports them for their side effect (cmd/kinetic
// and cmd/kinetic-runner do); a package that only needs the Store type (the backend
// interface) then links no cloud SDK.

// located is a store URL taken apart by its scheme's driver.
type located struct {
	driver.Location
	d driver.Driver
}

// locate takes rawURL apart through its scheme's driver. A plain absolute path means
// file://PATH.
func locate(raw string) (located, error) {
	if raw == "" {
		return located{}, errs.New(errs.InvalidArgument, "no store URL: set KINETIC_STORE or a profile's store, e.g. file:///var/lib/kinetic or gs://bucket")
	}
	record := raw
	if strings.HasPrefix(raw, "/") {
		raw = "file://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return located{}, errs.Errorf(errs.InvalidArgument, "store URL %q: %w", raw, err)
	}
	d, err := driver.For(raw, u)
	if err != nil {
		return located{}, err
	}
	loc, err := d.Parse(u, record)
	if err != nil {
		return located{}, err
	}
	return located{Location: loc, d: d}, nil
}

// Schemes are the schemes this program links a driver of, sorted.
func Schemes() []string { return driver.Schemes() }

// SchemeList is schemes as a person reads them: "file://, gs://".
func SchemeList(schemes []string) string { return driver.List(schemes) }

// OutputSchemes are the schemes a job's output directory may have: the shared stores'
// (not mem://, which lives in one process).
func OutputSchemes() []string {
	return driver.SchemesWith(func(t driver.Traits) bool { return t.Shared })
}

// FromPods reports whether pods on a cluster reach the store at rawURL (a bucket, not
// this machine's directory). A URL whose scheme has no driver here is not.
func FromPods(rawURL string) bool {
	u, err := url.Parse(rawURL)
	if err != nil {
		return false
	}
	d, ok := driver.Lookup(u.Scheme)
	return ok && d.Traits().FromPods
}

// PodSchemes are the schemes of the stores pods reach, as a person reads them
// ("gs://, s3://"), for the errors of a store they do not reach.
func PodSchemes() string {
	return driver.List(driver.SchemesWith(func(t driver.Traits) bool { return t.FromPods }))
}

// PodCredentials are the environment variables that point each linked driver's client
// at credentials in dir, a Secret mounted in a pod: all of them, since a pod reads Data
// references on other schemes than its store's. Sorted by scheme.
func PodCredentials(dir string) []driver.EnvVar {
	var out []driver.EnvVar
	for _, s := range driver.Schemes() {
		d, _ := driver.Lookup(s)
		out = append(out, d.PodCredentials(dir)...)
	}
	return out
}

// WithEndpoint returns rawURL with endpoint as its custom endpoint when its scheme's
// driver takes one (gs://: the setting gcs_endpoint) and it names none; other URLs are
// returned unchanged.
func WithEndpoint(rawURL, endpoint string) string {
	u, err := url.Parse(rawURL)
	if endpoint == "" || err != nil {
		return rawURL
	}
	d, ok := driver.Lookup(u.Scheme)
	if e, can := d.(driver.Endpointer); ok && can {
		return e.WithEndpoint(u, endpoint)
	}
	return rawURL
}

// OpenGCSBucket opens gs://BUCKET[/PREFIX] as a plain bucket (Data references, not a
// store), on the same endpoint a store would use: the URL's endpoint parameter, else
// STORAGE_EMULATOR_HOST in either form, else real GCS.
func OpenGCSBucket(ctx context.Context, rawURL string) (*blob.Bucket, error) {
	t, err := locate(rawURL)
	if err != nil {
		return nil, err
	}
	if t.Scheme != "gs" {
		return nil, errs.Errorf(errs.InvalidArgument, "%q is not a gs:// URL", rawURL)
	}
	return t.d.Open(ctx, t.Location, false)
}

// openBucket opens t's bucket through its driver. An error the driver coded says its
// fix; another gets the generic hint.
func openBucket(ctx context.Context, t located, create bool) (*blob.Bucket, error) {
	b, err := t.d.Open(ctx, t.Location, create)
	if p, ok := t.d.(driver.Prober); ok && err == nil {
		if err = p.Probe(ctx, b, t.Location); err != nil {
			b.Close()
		}
	}
	if err == nil {
		return b, nil
	}
	if c, ok := t.d.Code(err); ok && errs.CodeOf(err) == errs.Internal {
		err = errs.Wrap(c, err)
	}
	if errs.CodeOf(err) != errs.Internal {
		return nil, fmt.Errorf("open store %q: %w", t.Record, err)
	}
	return nil, fmt.Errorf("open store %q: %w (check the URL, the credentials, and that the bucket or directory exists)", t.Record, err)
}

// coded gives err (from an operation on key) the code its driver (else gocloud) gives
// it, and a hint that names the fix for the codes a person can act on.
func (s *Store) coded(op, key string, err error) error {
	c, ok := s.codeOf(err)
	if !ok || errs.CodeOf(err) != errs.Internal {
		return fmt.Errorf("%s %s: %w", op, key, err)
	}
	return errs.Errorf(c, "%s %s in store %s: %w%s", op, key, s.url, err, hints[c])
}

// codeOf is the code of an error from the store's bucket: its driver's, else gocloud's.
func (s *Store) codeOf(err error) (errs.Code, bool) {
	if c, ok := s.d.Code(err); ok {
		return c, true
	}
	return driver.GocloudCode(err)
}

// notFound reports whether err from the store's bucket says the object is not there (a
// refusal is not: gcsblob calls GCS's 403 NotFound, the gs:// driver PermissionDenied).
func (s *Store) notFound(err error) bool {
	c, ok := s.codeOf(err)
	return ok && c == errs.NotFound
}

// hints name the fix of a store error with this code.
var hints = map[errs.Code]string{
	errs.PermissionDenied:  " (the store's credentials may not do this: check them, and the bucket's or directory's permissions)",
	errs.ResourceExhausted: " (the store is full or over a quota: free space, or raise the quota)",
	errs.Unavailable:       " (the store did not answer: check the network, and try again)",
}

// Scheme is the store's URL scheme, whose driver is store/driver's Lookup(Scheme).
func (s *Store) Scheme() string { return s.d.Scheme() }

// Shared reports whether other processes (a job's supervisor, another command, a node)
// read what this store holds: every scheme but mem://, one process's memory.
func (s *Store) Shared() bool { return s.d.Traits().Shared }
