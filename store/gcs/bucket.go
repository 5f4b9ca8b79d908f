// Package gcs is the store's gs:// driver (store/driver): imported for its side effect,
// it registers gs:// over gocloud's gcsblob, on Cloud Storage with Application Default
// Credentials (checked first, so that none found is said in words) or on a custom
// endpoint (an emulator) without credentials, and owns gs:// URLs, the probe of a
// store's bucket, the pods' credential variable, matchGlob listings and the codes of
// Cloud Storage's refusals (driver.go). It also creates a store's bucket with its
// retention rule. It is apart from store so that what needs only the Store type links no
// Google SDK.
package gcs

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"cloud.google.com/go/storage"
	"gocloud.dev/blob"
	"gocloud.dev/blob/gcsblob" // gs://
	"gocloud.dev/gcp"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/option"
	storagev1 "google.golang.org/api/storage/v1"

	"github.com/kinetic-run/kinetic/errs"
	"github.com/kinetic-run/kinetic/internal/gcpkey"
	"github.com/kinetic-run/kinetic/store"
	"github.com/kinetic-run/kinetic/store/driver"
)

func init() { driver.Register(gsDriver{}) }

// BeforeList sets GCS's matchGlob on gcsblob's listing query: Cloud Storage then returns
// only the objects whose names match glob (a store's status.json objects, say, one
// request per 1,000 of them however many other objects there are). An emulator that
// does not know the parameter (fake-gcs-server v1.56.1 reads only prefix, delimiter,
// offsets, versions and paging) lists everything; store.ListNamed matches the names
// again either way.
func (gsDriver) BeforeList(glob string) func(as func(any) bool) error {
	return func(as func(any) bool) error {
		var q *storage.Query
		if as(&q) {
			q.MatchGlob = glob
		}
		return nil
	}
}

// ErrNoCredentials: no Application Default Credentials were found for a bucket on Google
// Cloud Storage.
var ErrNoCredentials = errs.New(errs.FailedPrecondition, "no Google credentials to reach Cloud Storage: run `gcloud auth application-default login`, or set GOOGLE_APPLICATION_CREDENTIALS to a service-account key file")

// open opens a gs:// bucket: on Cloud Storage with Application Default Credentials (a
// user's, a key file's, or a pod's through the metadata server), or on a custom endpoint
// (an emulator such as fake-gcs-server) with an unauthenticated client.
func open(ctx context.Context, bucket, endpoint string) (*blob.Bucket, error) {
	if endpoint != "" {
		return openOnEndpoint(ctx, bucket, endpoint)
	}
	creds, err := gcp.DefaultCredentials(ctx)
	if err != nil {
		if p := os.Getenv("GOOGLE_APPLICATION_CREDENTIALS"); p != "" {
			// It is set: "set it" would not help; what is wrong with the file does.
			return nil, errs.Wrap(errs.FailedPrecondition, gcpkey.Error(ErrNoCredentials, fmt.Sprintf("no Google credentials to reach Cloud Storage: GOOGLE_APPLICATION_CREDENTIALS=%s %s: set it to a service-account key file, or unset it and run `gcloud auth application-default login`",
				p, gcpkey.Problem(p)), err))
		}
		return nil, ErrNoCredentials
	}
	if err := firstToken(ctx, creds); err != nil {
		return nil, err
	}
	client, err := gcp.NewHTTPClient(gcp.DefaultTransport(), gcp.CredentialsTokenSource(creds))
	if err != nil {
		return nil, fmt.Errorf("a Cloud Storage client: %w", err)
	}
	return gcsblob.OpenBucket(ctx, client, bucket, nil)
}

// tokenTimeout bounds the first token's fetch: a metadata server that does not answer
// would otherwise hold the first request of every command for the client's retries.
const tokenTimeout = 15 * time.Second

// firstToken fetches an access token from creds once, so that credentials that give
// none (a metadata server without a service account, an expired login, a revoked key)
// are said in words before any request, not as a request's retry text.
func firstToken(ctx context.Context, creds *google.Credentials) error {
	from := "the credentials file"
	if len(creds.JSON) == 0 {
		from = "this machine's metadata server"
	}
	done := make(chan error, 1)
	go func() { _, err := creds.TokenSource.Token(); done <- err }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(tokenTimeout):
		err = errors.New("no answer")
	}
	if err == nil {
		return nil
	}
	why := ""
	var re *oauth2.RetrieveError
	if errors.As(err, &re) && re.ErrorCode != "" {
		why = " (" + re.ErrorCode
		if re.ErrorDescription != "" {
			why += ": " + errs.Quote(re.ErrorDescription)
		}
		why += ")"
	}
	return errs.Errorf(errs.FailedPrecondition, "the Google credentials found (from %s) give no access token to reach Cloud Storage%s: run `gcloud auth application-default login`, or set GOOGLE_APPLICATION_CREDENTIALS to a service-account key file", from, why)
}

// openOnEndpoint opens a gs:// bucket on a custom endpoint (an emulator such as
// fake-gcs-server) with an unauthenticated client.
func openOnEndpoint(ctx context.Context, bucket, endpoint string) (*blob.Bucket, error) {
	client := &gcp.HTTPClient{Client: http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}}
	return gcsblob.OpenBucket(ctx, client, bucket, &gcsblob.Options{
		ClientOptions: []option.ClientOption{
			// Later options win over the ones gcsblob derives from STORAGE_EMULATOR_HOST.
			option.WithoutAuthentication(),
			option.WithEndpoint(endpoint + "/storage/v1/"),
		},
	})
}

// ErrBucketExists is returned by CreateBucket when the bucket is already there; it is
// then left exactly as it was.
var ErrBucketExists = errs.New(errs.FailedPrecondition, "bucket already exists")

// BucketOptions say where a new bucket goes.
type BucketOptions struct {
	// Project is the Google Cloud project that owns the bucket (required by GCS).
	Project string
	// Location is the bucket's location, e.g. "us-central1" or "EU"; "" lets GCS choose
	// its default (the US multi-region).
	Location string
}

// CreateBucket creates the bucket of the gs:// store at rawURL with a lifecycle rule
// that deletes objects under the store's ExpiringAreas (below the URL's prefix, if any)
// store.RetentionDays after they were written, and nothing else. It uses the GCS JSON API,
// with Application Default Credentials, or unauthenticated on a custom endpoint (the
// emulator), as Open does. An existing bucket is not touched: ErrBucketExists.
func CreateBucket(ctx context.Context, rawURL string, o BucketOptions) error {
	if !strings.HasPrefix(rawURL, "gs://") {
		return fmt.Errorf("create bucket for %q: only gs:// stores are created by kinetic (make other stores with their own tools; a file:// store is created on first use)", rawURL)
	}
	bucket, prefix, endpoint, err := Location(rawURL)
	if err != nil {
		return err
	}
	if o.Project == "" {
		return fmt.Errorf("create bucket %q: GCS needs the project that will own it: give --project, KINETIC_PROJECT or a profile's project", bucket)
	}
	opts := []option.ClientOption{option.WithScopes(storagev1.DevstorageReadWriteScope)}
	if endpoint != "" {
		opts = []option.ClientOption{option.WithoutAuthentication(), option.WithEndpoint(endpoint + "/storage/v1/"),
			option.WithHTTPClient(&http.Client{Transport: http.DefaultTransport})}
	}
	svc, err := storagev1.NewService(ctx, opts...)
	if err != nil {
		return fmt.Errorf("create bucket %q: %w", bucket, err)
	}
	// Uniform bucket-level access, always: access is the bucket's IAM policy alone (no
	// object ACLs), and organisations that enforce it (the constraint
	// storage.uniformBucketLevelAccess) refuse a bucket without it with 412.
	b := &storagev1.Bucket{Name: bucket, Location: o.Location, Lifecycle: Lifecycle(prefix),
		IamConfiguration: &storagev1.BucketIamConfiguration{UniformBucketLevelAccess: &storagev1.BucketIamConfigurationUniformBucketLevelAccess{Enabled: true}}}
	if _, err := svc.Buckets.Insert(o.Project, b).Context(ctx).Do(); err != nil {
		var ge *googleapi.Error
		if errors.As(err, &ge) && ge.Code == http.StatusConflict {
			return fmt.Errorf("create bucket %q: %w (it was left as it is; its lifecycle rules are its owner's)", bucket, ErrBucketExists)
		}
		return fmt.Errorf("create bucket %q in project %q: %w", bucket, o.Project, err)
	}
	return nil
}

// Lifecycle is the rule CreateBucket sets for a store whose keys start with prefix ("" or
// ending in "/"): delete what is under prefix+jobs/, prefix+groups/ and prefix+blobs/
// once it is RetentionDays old.
func Lifecycle(prefix string) *storagev1.BucketLifecycle {
	var match []string
	for _, a := range store.ExpiringAreas {
		match = append(match, prefix+a)
	}
	return &storagev1.BucketLifecycle{Rule: []*storagev1.BucketLifecycleRule{{
		Action:    &storagev1.BucketLifecycleRuleAction{Type: "Delete"},
		Condition: &storagev1.BucketLifecycleRuleCondition{Age: googleapi.Int64(store.RetentionDays), MatchesPrefix: match},
	}}}
}
