package pywheels

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKeepJaxIsNotTheRuntimes: the kn:keep test proves a user's pin wins only if it pins
// another version than the runtime's.
func TestKeepJaxIsNotTheRuntimes(t *testing.T) {
	if Pin("jax") == "" || Pin("jaxlib") == "" || Pin("keras") == "" || Pin("cloudpickle") == "" {
		t.Fatalf("the runtime pins %v do not pin jax, jaxlib, keras and cloudpickle", RuntimePins())
	}
	if KeepJax == Pin("jax") {
		t.Fatalf("KeepJax %s is the runtime's jax: the kn:keep test would not show the user's pin winning", KeepJax)
	}
}

// TestReadyNeedsTheWholeDirectory: a directory without the completion file (a build that
// died, an older layout) is not ready, and the error names the fix.
func TestReadyNeedsTheWholeDirectory(t *testing.T) {
	t.Setenv("KINETIC_TOOLS_CACHE", t.TempDir())
	dir, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "jax-0.0-py3-none-any.whl"), nil, 0o644)
	if _, err := Ready(); err == nil || !strings.Contains(err.Error(), "make test-tools") {
		t.Fatalf("Ready on an incomplete directory: %v, want an error naming make test-tools", err)
	}
	os.WriteFile(filepath.Join(dir, doneFile), []byte("jax-0.0-py3-none-any.whl\n"), 0o644)
	if got, err := Ready(); err != nil || got != dir {
		t.Fatalf("Ready = %q, %v; want %q", got, err, dir)
	}
}

// TestKeyFollowsTheRecipe: the cache key changes with the pins (a new pin is a new
// directory, never a stale one).
func TestKeyFollowsTheRecipe(t *testing.T) {
	before := Key()
	saved := runtimePins
	t.Cleanup(func() { runtimePins = saved })
	runtimePins = append(append([]string(nil), saved...), "extra==1.0")
	if Key() == before {
		t.Fatal("the key did not change with the pins")
	}
}
