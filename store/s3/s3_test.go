package s3_test

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/kinetic-run/kinetic/store"
	"github.com/kinetic-run/kinetic/store/driver"
	"github.com/kinetic-run/kinetic/store/storetest"
	"github.com/kinetic-run/kinetic/testkit/s3test"
)

// s3Env gives this process the emulator's credentials (the AWS SDK signs every request).
func s3Env(t *testing.T) {
	for _, kv := range s3test.Env() {
		k, v, _ := cut(kv)
		t.Setenv(k, v)
	}
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
}

func cut(kv string) (string, string, bool) {
	for i := range kv {
		if kv[i] == '=' {
			return kv[:i], kv[i+1:], true
		}
	}
	return kv, "", false
}

// TestConformanceS3 (in store/s3, so that the store package's own tests run without the
// s3 driver linked: TestOpenWithoutDriver): the whole conformance suite on s3:// (gofakes3,
// an S3 emulator in this process) under a prefix path (store/storetest's TestEveryScheme
// runs it without one).
func TestConformanceS3(t *testing.T) {
	s3Env(t)
	srv := s3test.Start(t, "127.0.0.1")
	for _, prefix := range []string{"team-a"} {
		t.Run("prefix="+prefix, func(t *testing.T) {
			storetest.Run(t, func(t *testing.T) *store.Store {
				bucket := srv.NewBucket(t)
				if prefix != "" {
					// A neighbour under another prefix must not show up in, or be removed
					// by, the store.
					other, err := store.Open(context.Background(), srv.URL(bucket, "other"))
					if err != nil {
						t.Fatal(err)
					}
					if err := other.Put(context.Background(), "jobs/zz/handle.json", []byte("{}")); err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() {
						if ok, err := other.Exists(context.Background(), "jobs/zz/handle.json"); !ok || err != nil {
							t.Errorf("the neighbouring prefix lost its object: %v, %v", ok, err)
						}
						other.Close()
					})
				}
				s, err := store.Open(context.Background(), srv.URL(bucket, prefix))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				return s
			})
		})
	}
}

// TestS3Location: the path is the key prefix, and s3blob's own parameters pass through.
func TestS3Location(t *testing.T) {
	d, ok := driver.Lookup("s3")
	if !ok {
		t.Fatal("s3:// is not registered")
	}
	u, _ := url.Parse("s3://b/team-a?region=eu-west-1")
	got, err := d.Parse(u, "s3://b/team-a?region=eu-west-1")
	want := driver.Location{Scheme: "s3", Open: "s3://b?prefix=team-a%2F&region=eu-west-1", Record: "s3://b/team-a?region=eu-west-1", Bucket: "b", Prefix: "team-a/"}
	if err != nil || got != want {
		t.Fatalf("Parse = %+v, %v; want %+v", got, err, want)
	}
	for raw, says := range map[string]string{"s3:///x": "needs a bucket", "s3://k:s@b": "credentials do not belong", "s3://b/p?prefix=q/": "not both"} {
		u, _ := url.Parse(raw)
		if _, err := d.Parse(u, raw); err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("Parse(%q) = %v, want an error saying %q", raw, err, says)
		}
	}
}
