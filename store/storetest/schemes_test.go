package storetest_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/kinetic-run/kinetic/store"
	_ "github.com/kinetic-run/kinetic/store/gcs" // gs://
	_ "github.com/kinetic-run/kinetic/store/s3"  // s3://
	"github.com/kinetic-run/kinetic/store/storetest"
	"github.com/kinetic-run/kinetic/testkit/gcstest"
	"github.com/kinetic-run/kinetic/testkit/s3test"
)

// openers give a fresh, empty store of each scheme, on the real thing or its emulator
// started by the test. A new driver adds its own here: TestEveryScheme fails for a
// registered scheme without one.
var openers = map[string]func(t *testing.T) func(t *testing.T) string{
	"file": func(*testing.T) func(t *testing.T) string {
		return func(t *testing.T) string { return "file://" + t.TempDir() }
	},
	"mem": func(*testing.T) func(t *testing.T) string {
		return func(*testing.T) string { return "mem://" }
	},
	"gs": func(t *testing.T) func(t *testing.T) string {
		srv := gcstest.Start(t)
		return func(t *testing.T) string { return "gs://" + srv.NewBucket(t) + "?endpoint=" + srv.URL() }
	},
	"s3": func(t *testing.T) func(t *testing.T) string {
		for _, kv := range s3test.Env() {
			k, v, _ := strings.Cut(kv, "=")
			t.Setenv(k, v)
		}
		t.Setenv("AWS_CONFIG_FILE", os.DevNull)
		t.Setenv("AWS_SHARED_CREDENTIALS_FILE", os.DevNull)
		srv := s3test.Start(t, "127.0.0.1")
		return func(t *testing.T) string { return srv.URL(srv.NewBucket(t), "") }
	},
}

// TestEveryScheme runs the conformance suite on every scheme this program registers
// (store.Schemes: the drivers register themselves), each on a fresh store per case.
func TestEveryScheme(t *testing.T) {
	for _, scheme := range store.Schemes() {
		t.Run(scheme, func(t *testing.T) {
			start, ok := openers[scheme]
			if !ok {
				t.Fatalf("%s:// is registered but the suite has no way to open one: add it to openers", scheme)
			}
			url := start(t)
			storetest.Run(t, func(t *testing.T) *store.Store {
				s, err := store.Open(context.Background(), url(t))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				return s
			})
		})
	}
	if got := strings.Join(store.Schemes(), " "); got != "file gs mem s3" {
		t.Errorf("registered schemes = %q, want the four drivers this test links", got)
	}
}
