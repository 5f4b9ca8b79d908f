package store_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/kinetic-run/kinetic/store"
	_ "github.com/kinetic-run/kinetic/store/gcs" // gs://
	"github.com/kinetic-run/kinetic/store/storetest"
	"github.com/kinetic-run/kinetic/testkit/gcstest"
)

// A prefix (the URL's path) gives each store its own part of a bucket, and the
// conformance suite holds inside it.
func TestConformanceGCSPrefix(t *testing.T) {
	srv := gcstest.Start(t)
	storetest.Run(t, func(t *testing.T) *store.Store {
		bucket := srv.NewBucket(t)
		other, err := store.Open(context.Background(), "gs://"+bucket+"/other?endpoint="+srv.URL())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { other.Close() })
		// A neighbour under another prefix must not show up in, or be removed by, the store.
		if err := other.Put(context.Background(), "jobs/zz/handle.json", []byte("{}")); err != nil {
			t.Fatal(err)
		}
		s, err := store.Open(context.Background(), "gs://"+bucket+"/team-a?endpoint="+srv.URL())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if ok, err := other.Exists(context.Background(), "jobs/zz/handle.json"); !ok || err != nil {
				t.Errorf("the neighbouring prefix lost its object: %v, %v", ok, err)
			}
			s.Close()
		})
		return s
	})
}

func TestGCSPathIsPrefix(t *testing.T) {
	ctx := context.Background()
	srv := gcstest.Start(t)
	bucket := srv.NewBucket(t)
	sub, err := store.Open(ctx, "gs://"+bucket+"/team-a/?endpoint="+srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if err := sub.Put(ctx, store.HandleKey("j1"), []byte("h")); err != nil {
		t.Fatal(err)
	}
	root, err := store.Open(ctx, "gs://"+bucket+"?endpoint="+srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if got, err := root.Get(ctx, "team-a/"+store.HandleKey("j1")); err != nil || string(got) != "h" {
		t.Fatalf("Get(team-a/...) through the bucket root = %q, %v", got, err)
	}
	if ids, err := root.ListDirs(ctx, "jobs/"); err != nil || len(ids) != 0 {
		t.Fatalf("the root store sees jobs %v (%v): the prefix was ignored", ids, err)
	}
	if sub.Bucket() != bucket {
		t.Fatalf("Bucket() = %q, want %q", sub.Bucket(), bucket)
	}
}

// STORAGE_EMULATOR_HOST (the Google client's variable) works without credentials, and
// the store's URL carries the endpoint, so another process that reads it from a job
// handle reaches the same emulator without the variable.
func TestGCSEmulatorHostEnv(t *testing.T) {
	ctx := context.Background()
	srv := gcstest.Start(t)
	bucket := srv.NewBucket(t)
	t.Setenv("STORAGE_EMULATOR_HOST", srv.Endpoint())
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", "/nonexistent/credentials.json") // must not be read
	s, err := store.Open(ctx, "gs://"+bucket)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if want := "gs://" + bucket + "?endpoint=" + srv.URL(); s.URL() != want {
		t.Fatalf("URL() = %q, want %q", s.URL(), want)
	}
	if err := s.Put(ctx, store.StatusKey("j"), []byte("ok")); err != nil {
		t.Fatal(err)
	}

	t.Setenv("STORAGE_EMULATOR_HOST", "")
	again, err := store.Open(ctx, s.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if got, err := again.Get(ctx, store.StatusKey("j")); err != nil || string(got) != "ok" {
		t.Fatalf("reopened from URL(): Get = %q, %v", got, err)
	}
	if again.URL() != s.URL() {
		t.Fatalf("URL() changed on reopening: %q, then %q", s.URL(), again.URL())
	}

	// The URL's endpoint wins over the variable.
	t.Setenv("STORAGE_EMULATOR_HOST", "127.0.0.1:1")
	if _, err := store.Open(ctx, s.URL()); err != nil {
		t.Fatalf("endpoint parameter with another STORAGE_EMULATOR_HOST: %v", err)
	}
}

func TestOpenGCSUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now: connections are refused
	raw := "gs://kinetic-nowhere?endpoint=http://" + addr
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	start := time.Now()
	s, err := store.Open(ctx, raw)
	if err == nil {
		s.Close()
		t.Fatalf("Open(%q) succeeded", raw)
	}
	for _, want := range []string{raw, "cannot reach", "connection refused"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Open(%q) = %v\nwant it to contain %q", raw, err, want)
		}
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Open took %s, past its context's deadline", d)
	}
}

func TestOpenGCSMissingBucket(t *testing.T) {
	srv := gcstest.Start(t)
	raw := "gs://no-such-bucket?endpoint=" + srv.URL()
	_, err := store.Open(context.Background(), raw)
	if err == nil || !strings.Contains(err.Error(), raw) || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("Open(%q) = %v, want an error naming the URL and saying the bucket does not exist", raw, err)
	}
}

func TestOpenGCSURLErrors(t *testing.T) {
	t.Setenv("STORAGE_EMULATOR_HOST", "")
	ctx := context.Background()
	for name, tc := range map[string]struct{ url, want, never string }{
		"no bucket":            {"gs:///x", "needs a bucket", ""},
		"credentials":          {"gs://user:s3cret@b", "credentials do not belong", "s3cret"},
		"endpoint credentials": {"gs://b?endpoint=http://u:s3cret@127.0.0.1:1", "no credentials", "s3cret"},
		"endpoint scheme":      {"gs://b?endpoint=ftp://127.0.0.1:1", `parameter endpoint "ftp://127.0.0.1:1"`, ""},
		"endpoint path":        {"gs://b?endpoint=http://127.0.0.1:1/storage/v1", "no path", ""},
		"endpoint and option":  {"gs://b?endpoint=http://127.0.0.1:1&anonymous=true", `"anonymous" cannot be combined`, ""},
		"path and prefix":      {"gs://b/p?prefix=q/&endpoint=http://127.0.0.1:1", "not both", ""},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := store.Open(ctx, tc.url)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Open(%q) = %v, want an error containing %q", tc.url, err, tc.want)
			}
			if tc.never != "" && strings.Contains(err.Error(), tc.never) {
				t.Fatalf("the error shows the secret: %v", err)
			}
		})
	}
	t.Run("bad STORAGE_EMULATOR_HOST", func(t *testing.T) {
		t.Setenv("STORAGE_EMULATOR_HOST", "http://127.0.0.1:1/x")
		_, err := store.Open(ctx, "gs://b")
		if err == nil || !strings.Contains(err.Error(), "STORAGE_EMULATOR_HOST") {
			t.Fatalf("Open = %v, want an error naming STORAGE_EMULATOR_HOST", err)
		}
	})
}
