package toolcache

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
)

// TestFillOnceFromEmpty: an empty cache is filled once by concurrent callers, and the
// directory appears whole.
func TestFillOnceFromEmpty(t *testing.T) {
	t.Setenv(EnvDir, t.TempDir())
	dir, err := Dir("tool-v1")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "tool")
	var builds atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := Fill(context.Background(), dir, func() bool { return Executable(bin) }, func(_ context.Context, tmp string) error {
				builds.Add(1)
				return os.WriteFile(filepath.Join(tmp, "tool"), []byte("#!/bin/sh\n"), 0o755)
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if n := builds.Load(); n != 1 {
		t.Fatalf("built %d times, want 1", n)
	}
	if !Executable(bin) {
		t.Fatalf("%s missing after Fill", bin)
	}
}

// TestFillFailureLeavesNothing: a failed build leaves no directory behind, so the next
// caller builds again instead of finding half a tool.
func TestFillFailureLeavesNothing(t *testing.T) {
	t.Setenv(EnvDir, t.TempDir())
	dir, _ := Dir("tool-v2")
	boom := errors.New("boom")
	err := Fill(context.Background(), dir, func() bool { return false }, func(_ context.Context, tmp string) error {
		os.WriteFile(filepath.Join(tmp, "half"), []byte("x"), 0o644)
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("%s exists after a failed build: %v", dir, err)
	}
	root, _ := Root()
	if ents, _ := os.ReadDir(root); len(ents) != 1 { // the lock file only
		t.Fatalf("left behind in %s: %v", root, ents)
	}
}
