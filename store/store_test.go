package store_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kinetic-run/kinetic/store"
	"github.com/kinetic-run/kinetic/store/storetest"
)

func TestConformanceFile(t *testing.T) {
	storetest.Run(t, func(t *testing.T) *store.Store {
		s, err := store.Open(context.Background(), "file://"+t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}

func TestConformanceMem(t *testing.T) {
	storetest.Run(t, func(t *testing.T) *store.Store {
		s, err := store.Open(context.Background(), "mem://")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}

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
