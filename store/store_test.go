package store_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kinetic-run/kinetic/store"
)

// The conformance suite on every scheme (file, mem, gs, s3) is store/storetest's
// TestEveryScheme; the tests here are the store's own paths.

func TestOpenErrors(t *testing.T) {
	ctx := context.Background()
	ro := filepath.Join(t.TempDir(), "ro")
	if err := os.Mkdir(ro, 0o500); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct{ url, want string }{
		"empty":        {"", "no store URL"},
		"scheme":       {"ftp://x/y", `unsupported scheme "ftp"`},
		"relative":     {"file://rel/dir", "absolute path"},
		"not writable": {"file://" + ro + "/sub", "store"},
	} {
		t.Run(name, func(t *testing.T) {
			if os.Geteuid() == 0 && name == "not writable" {
				t.Skip("root can write anywhere")
			}
			_, err := store.Open(ctx, tc.url)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Open(%q) = %v, want an error containing %q", tc.url, err, tc.want)
			}
		})
	}
}

// TestPutFile: the object holds the file's content, on a file store (renamed into place)
// and elsewhere (copied), and a key fileblob would escape is copied, not renamed.
func TestPutFile(t *testing.T) {
	ctx := context.Background()
	for _, u := range []string{"file://" + t.TempDir() + "/st", "mem://"} {
		s, err := store.Open(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		for _, key := range []string{"jobs/job-a/result.pkl", "odd key/with:chars/x.pkl"} {
			src := filepath.Join(t.TempDir(), "result.pkl")
			if err := os.WriteFile(src, []byte("value of "+key), 0o644); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(src)
			if err != nil {
				t.Fatal(err)
			}
			err = s.PutFile(ctx, key, f)
			f.Close()
			if err != nil {
				t.Fatalf("%s: PutFile(%q): %v", u, key, err)
			}
			got, err := s.Get(ctx, key)
			if err != nil || string(got) != "value of "+key {
				t.Fatalf("%s: Get(%q) = %q, %v", u, key, got, err)
			}
			objs, err := s.List(ctx, "")
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, o := range objs {
				found = found || o.Key == key
			}
			if !found {
				t.Fatalf("%s: %q not listed: %v", u, key, objs)
			}
		}
	}
}
