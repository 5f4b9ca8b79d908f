// Package driver is what a store scheme's driver implements, and the registry of the
// schemes linked into a program, as gocloud's blob/driver sits under blob: package store
// asks the driver of a URL's scheme to take the URL apart, open its bucket, say whether
// pods reach it and what credentials they need, and map its errors to errs codes.
//
// Each scheme registers itself from an init in its own package: store/filestore
// (file://) and store/memstore (mem://), which package store links itself (they need
// nothing beyond the standard library and gocloud's drivers of the same name), and
// store/gcs (gs://) and store/s3 (s3://), which link a cloud's SDK and which a program
// imports for their side effect (cmd/kinetic, cmd/kinetic-runner). Register is the one
// scheme list: config's store setting, the output directories, the backends' question
// "can a pod reach this store?" all ask it (docs/architecture.md, "Adding a store").
package driver

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"

	"gocloud.dev/blob"

	"github.com/kinetic-run/kinetic/config/storeschemes"
	"github.com/kinetic-run/kinetic/errs"
)

// Driver is one URL scheme's store driver.
type Driver interface {
	// Scheme is the URL scheme, without "://" ("gs").
	Scheme() string
	// Check refuses a URL of this scheme that cannot name a store, with no side effect
	// (config runs it on the store setting): an errs.InvalidArgument error that says what
	// a good URL looks like.
	Check(u *url.URL) error
	// Parse takes a URL of this scheme apart into a Location; record is the URL as the
	// user gave it. It refuses what Check refuses, and parameters the driver does not
	// take, with errs.InvalidArgument.
	Parse(u *url.URL, record string) (Location, error)
	// Open opens the Location's bucket (its Prefix applied). With create, a store that is
	// made on first use (a directory) is made, and checked writable. (A store's bucket is
	// then probed if the driver is a Prober.)
	Open(ctx context.Context, loc Location, create bool) (*blob.Bucket, error)
	// Traits say what is true of every store of this scheme.
	Traits() Traits
	// PodCredentials are the environment variables that point this scheme's client
	// library at credentials in dir, a directory mounted in a pod (the Kubernetes
	// backend's store_secret): none for a scheme a pod never reaches.
	PodCredentials(dir string) []EnvVar
	// Code is the errs code of an error from this driver's bucket (ok false: none it
	// knows; the store then uses gocloud's code, else Internal).
	Code(err error) (c errs.Code, ok bool)
}

// Globber is a driver whose bucket matches names in a listing itself (GCS's matchGlob):
// BeforeList returns the ListOptions.BeforeList that asks the bucket to return only the
// objects whose whole names in the bucket (the Location's prefix included) match glob.
type Globber interface {
	BeforeList(glob string) func(as func(any) bool) error
}

// Prober is a driver that checks, when a store is opened, that its bucket answers.
type Prober interface {
	Probe(ctx context.Context, b *blob.Bucket, loc Location) error
}

// Endpointer is a driver whose URLs may name a custom endpoint (an emulator):
// WithEndpoint returns rawURL with endpoint set unless rawURL names one already (the
// setting gcs_endpoint).
type Endpointer interface {
	WithEndpoint(u *url.URL, endpoint string) string
}

// Traits say what is true of every store of a scheme.
type Traits struct {
	// FromPods: a pod on a cluster reaches the store (a bucket), not only this machine.
	FromPods bool
	// Shared: other processes read what one writes (not mem://, which lives in one
	// process): a job's output directory may have this scheme.
	Shared bool
}

// EnvVar is one environment variable of a pod.
type EnvVar struct{ Name, Value string }

// Location is a store URL taken apart by its driver.
type Location struct {
	Scheme string
	// Open is what the driver opens: the URL for gocloud's URL mux, with Kinetic's own
	// parameters removed and the driver's defaults added.
	Open string
	// Record is the URL the store reports (Store.URL) and job handles carry: the URL as
	// given, plus what came from the environment (an emulator's endpoint), so that
	// another machine or a pod reaches the same bucket.
	Record string
	// Bucket is the bucket's name (a file store's directory); Prefix the key prefix in
	// it ("" or ending in "/"); Endpoint a custom endpoint (scheme://host[:port]) or "".
	Bucket, Prefix, Endpoint string
	// Dir is a file store's root directory, where a key is a path ("" elsewhere, and for
	// a file store with a prefix parameter).
	Dir string
}

var (
	mu      sync.RWMutex
	drivers = map[string]Driver{}
)

// Register makes d the driver of its scheme, and the scheme one that config's store
// setting accepts. It panics when the scheme is taken: two drivers of one scheme is a
// programming error.
func Register(d Driver) {
	mu.Lock()
	defer mu.Unlock()
	s := d.Scheme()
	if _, ok := drivers[s]; ok {
		panic(fmt.Sprintf("store driver: scheme %q registered twice", s))
	}
	drivers[s] = d
	storeschemes.Add(s, d.Check)
}

// Lookup returns the driver of scheme, and whether this program links one.
func Lookup(scheme string) (Driver, bool) {
	mu.RLock()
	defer mu.RUnlock()
	d, ok := drivers[scheme]
	return d, ok
}

// Schemes are the registered schemes, sorted.
func Schemes() []string {
	mu.RLock()
	defer mu.RUnlock()
	out := make([]string, 0, len(drivers))
	for s := range drivers {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// SchemesWith are the registered schemes whose Traits satisfy keep, sorted.
func SchemesWith(keep func(Traits) bool) []string {
	var out []string
	for _, s := range Schemes() {
		if d, _ := Lookup(s); keep(d.Traits()) {
			out = append(out, s)
		}
	}
	return out
}

// List is schemes as a person reads them: "file://, gs://".
func List(schemes []string) string {
	var s []string
	for _, sc := range schemes {
		s = append(s, sc+"://")
	}
	return strings.Join(s, ", ")
}

// Packages name the package that registers a scheme's driver, for the error of a
// program that did not link it.
var Packages = map[string]string{
	"gs": "github.com/kinetic-run/kinetic/store/gcs",
	"s3": "github.com/kinetic-run/kinetic/store/s3",
}

// ErrNoDriver: the URL's scheme has no driver in this program.
var ErrNoDriver = errs.New(errs.InvalidArgument, "no store driver for the scheme")

// For returns the driver of u's scheme, or an error that names rawURL, the schemes
// this program links and, for a known scheme it does not link, the package to link.
func For(rawURL string, u *url.URL) (Driver, error) {
	if d, ok := Lookup(u.Scheme); ok {
		return d, nil
	}
	if pkg := Packages[u.Scheme]; pkg != "" {
		return nil, fmt.Errorf("store URL %q: this program was built without the %s:// driver (it links %s for that)%.0w", rawURL, u.Scheme, pkg, ErrNoDriver)
	}
	return nil, fmt.Errorf("store URL %q: unsupported scheme %q (use %s)%.0w", rawURL, u.Scheme, List(Schemes()), ErrNoDriver)
}
