package store

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"google.golang.org/api/googleapi"
	"google.golang.org/api/option"
	storagev1 "google.golang.org/api/storage/v1"
)

// RetentionDays is the age in days after which the lifecycle rule of a bucket Kinetic
// creates deletes the store's job records, batch manifests and content-addressed blobs.
const RetentionDays = 30

// ExpiringAreas are the parts of the layout the lifecycle rule covers. outputs/ is not
// among them: what a job writes under KINETIC_OUTPUT_DIR is kept until someone deletes
// it. (data/ is not either: its completion marker is written after its files, and an
// expiry that took the files first would leave a marker over missing data.)
var ExpiringAreas = []string{"jobs/", "groups/", "blobs/", TombstonesPrefix}

// ErrBucketExists is returned by CreateBucket when the bucket is already there; it is
// then left exactly as it was.
var ErrBucketExists = errors.New("bucket already exists")

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
// RetentionDays after they were written, and nothing else. It uses the GCS JSON API,
// with Application Default Credentials, or unauthenticated on a custom endpoint (the
// emulator), as Open does. An existing bucket is not touched: ErrBucketExists.
func CreateBucket(ctx context.Context, rawURL string, o BucketOptions) error {
	if !strings.HasPrefix(rawURL, "gs://") {
		return fmt.Errorf("create bucket for %q: only gs:// stores are created by kinetic (make other stores with their own tools; a file:// store is created on first use)", rawURL)
	}
	t, err := normalise(rawURL)
	if err != nil {
		return err
	}
	bucket, prefix := t.bucket, t.prefix
	if t.endpoint == "" {
		u, err := url.Parse(t.open)
		if err != nil {
			return fmt.Errorf("store URL %q: %w", rawURL, err)
		}
		bucket, prefix = u.Host, u.Query().Get("prefix")
	}
	if o.Project == "" {
		return fmt.Errorf("create bucket %q: GCS needs the project that will own it: give --project, KINETIC_PROJECT or a profile's project", bucket)
	}
	opts := []option.ClientOption{option.WithScopes(storagev1.DevstorageReadWriteScope)}
	if t.endpoint != "" {
		opts = []option.ClientOption{option.WithoutAuthentication(), option.WithEndpoint(t.endpoint + "/storage/v1/"),
			option.WithHTTPClient(&http.Client{Transport: http.DefaultTransport})}
	}
	svc, err := storagev1.NewService(ctx, opts...)
	if err != nil {
		return fmt.Errorf("create bucket %q: %w", bucket, err)
	}
	b := &storagev1.Bucket{Name: bucket, Location: o.Location, Lifecycle: Lifecycle(prefix)}
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
	for _, a := range ExpiringAreas {
		match = append(match, prefix+a)
	}
	return &storagev1.BucketLifecycle{Rule: []*storagev1.BucketLifecycleRule{{
		Action:    &storagev1.BucketLifecycleRuleAction{Type: "Delete"},
		Condition: &storagev1.BucketLifecycleRuleCondition{Age: googleapi.Int64(RetentionDays), MatchesPrefix: match},
	}}}
}
