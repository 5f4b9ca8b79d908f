package gcs

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"gocloud.dev/blob"
	"google.golang.org/api/googleapi"

	"github.com/kinetic-run/kinetic/errs"
	"github.com/kinetic-run/kinetic/store/driver"
)

// gsDriver is the gs:// driver: a bucket on Cloud Storage, or on a custom endpoint
// (an emulator) named by the URL's endpoint parameter or STORAGE_EMULATOR_HOST.
type gsDriver struct{}

// EndpointParam is the gs:// URL parameter that names a custom JSON API endpoint, e.g.
// gs://bucket?endpoint=http://127.0.0.1:4443.
const EndpointParam = "endpoint"

func (gsDriver) Scheme() string { return "gs" }

func (gsDriver) Check(u *url.URL) error {
	if err := driver.CheckBucket(u); err != nil {
		return errs.Wrap(errs.InvalidArgument, err)
	}
	return nil
}

// Parse: the path is the key prefix; an endpoint (the parameter, else
// STORAGE_EMULATOR_HOST, which then goes into the recorded URL so that a pod reaches
// the same bucket) is spoken to without credentials, so no other parameter goes with it.
func (gsDriver) Parse(u *url.URL, record string) (driver.Location, error) {
	q, err := driver.BucketURL(u, record)
	if err != nil {
		return driver.Location{}, err
	}
	ep, fromEnv, err := endpointOf(q.Get(EndpointParam))
	if err != nil {
		// The query is left out: it may hold what the error is about, a secret.
		return driver.Location{}, errs.Errorf(errs.InvalidArgument, "store URL %q: %w", "gs://"+u.Host, err)
	}
	why := "is not supported for gs:// (kinetic reaches Cloud Storage with Application Default Credentials)"
	if ep != "" {
		why = "cannot be combined with a custom endpoint (it is used without credentials)"
	}
	if err := driver.OnlyParams(q, record, why, EndpointParam, "prefix"); err != nil {
		return driver.Location{}, err
	}
	loc := driver.Location{Scheme: "gs", Record: record, Bucket: u.Host, Prefix: q.Get("prefix"), Endpoint: ep}
	if ep != "" && fromEnv {
		sep := "?"
		if strings.Contains(record, "?") {
			sep = "&"
		}
		loc.Record = record + sep + EndpointParam + "=" + ep
	}
	q.Del(EndpointParam)
	loc.Open = (&url.URL{Scheme: "gs", Host: u.Host, RawQuery: q.Encode()}).String()
	return loc, nil
}

// endpointOf returns the custom GCS endpoint as scheme://host[:port]: param if given,
// else STORAGE_EMULATOR_HOST (fromEnv), else "" (real GCS). Both accept host:port (plain
// HTTP, as the Google client reads the variable) or an http(s) URL with no path.
func endpointOf(param string) (ep string, fromEnv bool, err error) {
	v, name := param, "parameter "+EndpointParam
	if v == "" {
		v, name, fromEnv = os.Getenv("STORAGE_EMULATOR_HOST"), "STORAGE_EMULATOR_HOST", true
		if v == "" {
			return "", false, nil
		}
	}
	s := v
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	e, err := url.Parse(s)
	if err != nil || (e.Scheme != "http" && e.Scheme != "https") || e.Host == "" ||
		(e.Path != "" && e.Path != "/") || e.RawQuery != "" || e.Fragment != "" || e.User != nil {
		what := v
		if err == nil && e.User != nil {
			c := *e
			c.User = nil
			what = c.String()
		}
		return "", false, fmt.Errorf("%s %q: want host:port or http(s)://host[:port], with no path and no credentials", name, what)
	}
	return e.Scheme + "://" + e.Host, fromEnv, nil
}

// ProbeTimeout bounds the check Open makes that a bucket answers. The Google client
// retries refused connections and 5xx answers until its context ends, so without a bound
// an unreachable endpoint would hang Open.
const ProbeTimeout = 20 * time.Second

// Open opens the bucket, with Application Default Credentials, or without on an
// endpoint.
func (d gsDriver) Open(ctx context.Context, loc driver.Location, _ bool) (*blob.Bucket, error) {
	b, err := open(ctx, loc.Bucket, loc.Endpoint)
	if err != nil {
		return nil, err
	}
	if loc.Prefix != "" {
		b = blob.PrefixedBucket(b, loc.Prefix)
	}
	return b, nil
}

// Probe checks that a store's bucket answers (one list call, bounded by ProbeTimeout),
// so that a wrong bucket, missing credentials or an unreachable endpoint fail when the
// store is opened, with its URL, rather than in the middle of a submission. (A plain
// bucket of Data references is not probed: a reader may get objects it may not list.)
func (d gsDriver) Probe(ctx context.Context, b *blob.Bucket, loc driver.Location) error {
	pctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	ok, err := b.IsAccessible(pctx)
	if err != nil {
		hint := "check the credentials (Application Default Credentials) and the network"
		if loc.Endpoint != "" {
			hint = "is the endpoint " + loc.Endpoint + " up?"
		}
		c, known := d.Code(err)
		if !known {
			c = errs.Unavailable
		}
		return errs.Errorf(c, "cannot reach bucket %q: %w (%s)", loc.Bucket, err, hint)
	}
	if !ok {
		return errs.Errorf(errs.NotFound, "bucket %q does not exist (create it with `kinetic store create`)", loc.Bucket)
	}
	return nil
}

// Traits: a bucket pods reach.
func (gsDriver) Traits() driver.Traits { return driver.Traits{FromPods: true, Shared: true} }

// PodCredentials: a service-account key, key.json, for Application Default Credentials.
func (gsDriver) PodCredentials(dir string) []driver.EnvVar {
	return []driver.EnvVar{{Name: "GOOGLE_APPLICATION_CREDENTIALS", Value: dir + "/key.json"}}
}

// apiCodes are the errs codes of Cloud Storage's HTTP statuses. gcsblob calls 403
// NotFound (GCS says "denied on resource (or it may not exist)"); a store says what the
// status says.
var apiCodes = map[int]errs.Code{
	http.StatusUnauthorized:        errs.PermissionDenied,
	http.StatusForbidden:           errs.PermissionDenied,
	http.StatusNotFound:            errs.NotFound,
	http.StatusConflict:            errs.FailedPrecondition,
	http.StatusPreconditionFailed:  errs.FailedPrecondition,
	http.StatusTooManyRequests:     errs.ResourceExhausted,
	http.StatusInsufficientStorage: errs.ResourceExhausted,
}

// Code: Cloud Storage's status, then the network's, then gocloud's.
func (gsDriver) Code(err error) (errs.Code, bool) {
	var ge *googleapi.Error
	if errors.As(err, &ge) {
		if c, ok := apiCodes[ge.Code]; ok {
			return c, true
		}
		if ge.Code >= 500 {
			return errs.Unavailable, true
		}
	}
	if c, ok := driver.SystemCode(err); ok {
		return c, true
	}
	return driver.GocloudCode(err)
}

// WithEndpoint returns the URL with endpoint as its endpoint parameter unless it has one
// (the setting gcs_endpoint).
func (gsDriver) WithEndpoint(u *url.URL, endpoint string) string {
	q := u.Query()
	if q.Get(EndpointParam) == "" {
		q.Set(EndpointParam, endpoint)
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// Location takes a gs:// store URL apart: the bucket, the key prefix ("" or ending in
// "/") and the custom endpoint ("" for real GCS; else from the URL's endpoint parameter
// or STORAGE_EMULATOR_HOST), as a store would use them.
func Location(rawURL string) (bucket, prefix, endpoint string, err error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "gs" {
		return "", "", "", errs.Errorf(errs.InvalidArgument, "%q is not a gs:// URL", rawURL)
	}
	loc, err := gsDriver{}.Parse(u, rawURL)
	if err != nil {
		return "", "", "", err
	}
	return loc.Bucket, loc.Prefix, loc.Endpoint, nil
}
