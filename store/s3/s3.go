// Package s3 is the store's s3:// driver: imported for its side effect, it registers
// s3:// with the store over gocloud's s3blob (and the AWS SDK it needs, which package
// store itself does not link). Credentials come from the AWS SDK's usual chain.
package s3

import (
	"context"
	"errors"
	"net/http"
	"net/url"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
	"gocloud.dev/blob"
	_ "gocloud.dev/blob/s3blob" // s3://

	"github.com/kinetic-run/kinetic/errs"
	"github.com/kinetic-run/kinetic/store/driver"
)

func init() { driver.Register(s3Driver{}) }

type s3Driver struct{}

func (s3Driver) Scheme() string { return "s3" }

func (s3Driver) Check(u *url.URL) error {
	if err := driver.CheckBucket(u); err != nil {
		return errs.Wrap(errs.InvalidArgument, err)
	}
	return nil
}

// Parse: the path is the key prefix; s3blob's own parameters (region, endpoint,
// use_path_style, ...) pass through to it.
func (s3Driver) Parse(u *url.URL, record string) (driver.Location, error) {
	q, err := driver.BucketURL(u, record)
	if err != nil {
		return driver.Location{}, err
	}
	open := url.URL{Scheme: "s3", Host: u.Host, RawQuery: q.Encode()}
	return driver.Location{Scheme: "s3", Open: open.String(), Record: record, Bucket: u.Host, Prefix: q.Get("prefix"), Endpoint: q.Get("endpoint")}, nil
}

func (s3Driver) Open(ctx context.Context, loc driver.Location, _ bool) (*blob.Bucket, error) {
	return blob.OpenBucket(ctx, loc.Open)
}

// Traits: a bucket pods reach.
func (s3Driver) Traits() driver.Traits { return driver.Traits{FromPods: true, Shared: true} }

// PodCredentials: an AWS shared credentials file, credentials.
func (s3Driver) PodCredentials(dir string) []driver.EnvVar {
	return []driver.EnvVar{{Name: "AWS_SHARED_CREDENTIALS_FILE", Value: dir + "/credentials"}}
}

// apiCodes are the errs codes of S3's error codes that gocloud calls Unknown.
var apiCodes = map[string]errs.Code{
	"SlowDown":              errs.ResourceExhausted,
	"ServiceUnavailable":    errs.Unavailable,
	"InternalError":         errs.Unavailable,
	"InvalidAccessKeyId":    errs.PermissionDenied,
	"SignatureDoesNotMatch": errs.PermissionDenied,
	"ExpiredToken":          errs.PermissionDenied,
	"QuotaExceeded":         errs.ResourceExhausted,
}

// Code: S3's error code or status, then the network's, then gocloud's.
func (s3Driver) Code(err error) (errs.Code, bool) {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		if c, ok := apiCodes[ae.ErrorCode()]; ok {
			return c, true
		}
	}
	var re *awshttp.ResponseError
	if errors.As(err, &re) && re.HTTPStatusCode() >= http.StatusInternalServerError {
		return errs.Unavailable, true
	}
	if c, ok := driver.GocloudCode(err); ok {
		return c, true
	}
	return driver.SystemCode(err)
}
