package s3_test

import (
	"context"
	"fmt"
	"net/url"
	"testing"

	"github.com/kinetic-run/kinetic/errs"
	"github.com/kinetic-run/kinetic/store"
	"github.com/kinetic-run/kinetic/store/storetest"
	"github.com/kinetic-run/kinetic/testkit/s3test"
)

// s3Error is S3's XML error body.
func s3Error(method, path string, status int, code string) *storetest.Fault {
	return &storetest.Fault{Method: method, PathContains: path, Status: status, ContentType: "application/xml",
		Body: fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>refused by the test</Message><RequestId>t</RequestId></Error>`, code)}
}

// TestS3ErrorCodes: the codes of S3's refusals reach the store's caller (the s3test
// emulator behind a proxy that answers as S3 refuses): AccessDenied and a bad key are
// PermissionDenied, SlowDown ResourceExhausted, InternalError Unavailable, a missing
// object NotFound, an existing one's Create FailedPrecondition.
func TestS3ErrorCodes(t *testing.T) {
	s3Env(t)
	srv := s3test.Start(t, "127.0.0.1")
	proxy := storetest.StartFaultProxy(t, srv.Endpoint())
	bucket := srv.NewBucket(t)
	u, err := url.Parse(srv.URL(bucket, ""))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("endpoint", proxy.URL())
	u.RawQuery = q.Encode()
	ctx := context.Background()
	s, err := store.Open(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	key := "jobs/a/status.json"
	if err := s.Put(ctx, key, []byte("{}")); err != nil {
		t.Fatal(err)
	}
	storetest.WantCode(t, s, storetest.Get("jobs/none/status.json"), errs.NotFound)
	storetest.WantCode(t, s, storetest.Create(key), errs.FailedPrecondition)
	for _, c := range []struct {
		fault *storetest.Fault
		op    storetest.Op
		want  errs.Code
	}{
		{s3Error("PUT", "/jobs/b/x", 403, "AccessDenied"), storetest.Put("jobs/b/x"), errs.PermissionDenied},
		{s3Error("PUT", "/jobs/b/x", 403, "InvalidAccessKeyId"), storetest.PutFrom("jobs/b/x"), errs.PermissionDenied},
		{s3Error("PUT", "/jobs/b/x", 503, "SlowDown"), storetest.Put("jobs/b/x"), errs.ResourceExhausted},
		{s3Error("PUT", "/jobs/b/x", 500, "InternalError"), storetest.Put("jobs/b/x"), errs.Unavailable},
		{s3Error("GET", "/jobs/a/status.json", 403, "AccessDenied"), storetest.Get(key), errs.PermissionDenied},
		{s3Error("GET", "list-type", 403, "AccessDenied"), storetest.List("jobs/"), errs.PermissionDenied},
		{s3Error("DELETE", "/jobs/a/status.json", 403, "AccessDenied"), storetest.Delete(key), errs.PermissionDenied},
	} {
		t.Run(fmt.Sprintf("%s %s", c.op.Name, c.want), func(t *testing.T) {
			proxy.Set(c.fault)
			defer proxy.Set(nil)
			storetest.WantCode(t, s, c.op, c.want)
			if proxy.Hits() == 0 {
				t.Errorf("the fault was never met: the operation did not make the request it was set for")
			}
		})
	}
}
