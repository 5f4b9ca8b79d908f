package driver

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"syscall"

	"gocloud.dev/gcerrors"

	"github.com/kinetic-run/kinetic/errs"
)

// BucketURL checks the parts every bucket URL (gs://, s3://) shares: a bucket (the
// host), no credentials (a store URL is recorded in job handles), and the path as the
// key prefix (gocloud's openers ignore the path, which would put gs://b/team-a and
// gs://b/team-b in one place): the returned query has it as its prefix parameter.
func BucketURL(u *url.URL, raw string) (url.Values, error) {
	if err := CheckBucket(u); err != nil {
		return nil, errs.Errorf(errs.InvalidArgument, "store URL %q: %w", redacted(u, raw), err)
	}
	q := u.Query()
	if p := strings.Trim(u.Path, "/"); p != "" {
		if q.Get("prefix") != "" {
			return nil, errs.Errorf(errs.InvalidArgument, "store URL %q: give the prefix as the path or as ?prefix=, not both", raw)
		}
		q.Set("prefix", p+"/")
	}
	return q, nil
}

// CheckBucket is Check for a bucket URL: a bucket, and no credentials in it.
func CheckBucket(u *url.URL) error {
	if u.Host == "" {
		return fmt.Errorf("a %s:// URL needs a bucket, as in %s://my-bucket/prefix", u.Scheme, u.Scheme)
	}
	if u.User != nil {
		return errors.New("credentials do not belong in a store URL (it is recorded in job handles); use the cloud's usual credential chain (Application Default Credentials, AWS_PROFILE)")
	}
	return nil
}

func redacted(u *url.URL, raw string) string {
	if u.User == nil {
		return raw
	}
	c := *u
	c.User = nil
	return c.String()
}

// OnlyParams refuses a query parameter not in allowed, naming raw and why.
func OnlyParams(q url.Values, raw, why string, allowed ...string) error {
	for k := range q {
		ok := false
		for _, a := range allowed {
			ok = ok || k == a
		}
		if !ok {
			return errs.Errorf(errs.InvalidArgument, "store URL %q: parameter %q %s", raw, k, why)
		}
	}
	return nil
}

// gocloudCodes are the errs codes of gocloud's (gcerrors.AlreadyExists: the object a
// write said must not exist does; errs has FailedPrecondition for it).
var gocloudCodes = map[gcerrors.ErrorCode]errs.Code{
	gcerrors.NotFound:           errs.NotFound,
	gcerrors.AlreadyExists:      errs.FailedPrecondition,
	gcerrors.FailedPrecondition: errs.FailedPrecondition,
	gcerrors.PermissionDenied:   errs.PermissionDenied,
	gcerrors.ResourceExhausted:  errs.ResourceExhausted,
	gcerrors.InvalidArgument:    errs.InvalidArgument,
	gcerrors.Canceled:           errs.Cancelled,
	gcerrors.DeadlineExceeded:   errs.DeadlineExceeded,
}

// GocloudCode is the errs code of gocloud's code for err (ok false for Unknown,
// Internal, Unimplemented and an error not from gocloud).
func GocloudCode(err error) (errs.Code, bool) {
	c, ok := gocloudCodes[gcerrors.Code(err)]
	return c, ok
}

// SystemCode is the errs code of an operating system error in err's chain: a full disk
// or quota is ResourceExhausted, a read-only file system or a refused permission
// PermissionDenied, a missing file NotFound, a refused or unreachable connection
// Unavailable.
func SystemCode(err error) (errs.Code, bool) {
	var no syscall.Errno
	if errors.As(err, &no) {
		if c, ok := errnoCodes[no]; ok {
			return c, true
		}
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return errs.Unavailable, true
	}
	return 0, false
}

var errnoCodes = map[syscall.Errno]errs.Code{
	syscall.ENOSPC:       errs.ResourceExhausted,
	syscall.EDQUOT:       errs.ResourceExhausted,
	syscall.EFBIG:        errs.ResourceExhausted,
	syscall.EROFS:        errs.PermissionDenied,
	syscall.EACCES:       errs.PermissionDenied,
	syscall.EPERM:        errs.PermissionDenied,
	syscall.ENOENT:       errs.NotFound,
	syscall.ECONNREFUSED: errs.Unavailable,
	syscall.ECONNRESET:   errs.Unavailable,
	syscall.EHOSTUNREACH: errs.Unavailable,
	syscall.ENETUNREACH:  errs.Unavailable,
	syscall.ETIMEDOUT:    errs.Unavailable,
}
