package store_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/kinetic-run/kinetic/errs"
	"github.com/kinetic-run/kinetic/store"
	"github.com/kinetic-run/kinetic/store/storetest"
	"github.com/kinetic-run/kinetic/testkit/gcstest"
)

// gcsError is Cloud Storage's JSON error body for status.
func gcsError(status int, reason string) *storetest.Fault {
	return &storetest.Fault{Status: status, ContentType: "application/json; charset=UTF-8",
		Body: fmt.Sprintf(`{"error":{"code":%d,"message":"refused by the test (%s)","errors":[{"domain":"global","reason":%q,"message":"refused by the test"}]}}`, status, reason, reason)}
}

// TestGCSErrorCodes: the codes of Cloud Storage's refusals reach the store's caller
// (fake-gcs-server behind a proxy that answers as GCS refuses): 401 and 403 are
// PermissionDenied (gcsblob alone calls 403 NotFound, so a refused Delete passed as done),
// 429 ResourceExhausted, a missing object NotFound, an existing one's Create
// FailedPrecondition.
func TestGCSErrorCodes(t *testing.T) {
	srv := gcstest.Start(t)
	proxy := storetest.StartFaultProxy(t, srv.URL())
	ctx := context.Background()
	s, err := store.Open(ctx, "gs://"+srv.NewBucket(t)+"?endpoint="+proxy.URL())
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
		method, path string
		status       int
		reason       string
		op           storetest.Op
		want         errs.Code
	}{
		{"POST", "/upload/", 403, "forbidden", storetest.Put("jobs/b/x"), errs.PermissionDenied},
		{"POST", "/upload/", 401, "required", storetest.PutFrom("jobs/b/x"), errs.PermissionDenied},
		{"POST", "/upload/", 429, "rateLimitExceeded", storetest.Put("jobs/b/x"), errs.ResourceExhausted},
		{"POST", "/upload/", 503, "backendError", storetest.Put("jobs/b/x"), errs.Unavailable},
		{"GET", "status.json", 403, "forbidden", storetest.Get(key), errs.PermissionDenied},
		{"GET", "status.json", 403, "forbidden", storetest.NewReader(key), errs.PermissionDenied},
		{"GET", "/o?", 403, "forbidden", storetest.List("jobs/"), errs.PermissionDenied},
		{"DELETE", "/o/", 403, "forbidden", storetest.Delete(key), errs.PermissionDenied},
	} {
		t.Run(fmt.Sprintf("%s %d", c.op.Name, c.status), func(t *testing.T) {
			proxy.Set(&storetest.Fault{Method: c.method, PathContains: c.path, Status: c.status,
				ContentType: gcsError(c.status, c.reason).ContentType, Body: gcsError(c.status, c.reason).Body})
			defer proxy.Set(nil)
			storetest.WantCode(t, s, c.op, c.want)
			if proxy.Hits() == 0 {
				t.Errorf("the fault was never met: the operation did not make the request it was set for")
			}
		})
	}
}
