package dirsize

import (
	"os"
	"path/filepath"
	"testing"
)

func TestOf(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755)
	os.WriteFile(filepath.Join(dir, "x"), make([]byte, 100), 0o644)
	os.WriteFile(filepath.Join(dir, "a", "b", "y"), make([]byte, 23), 0o644)
	os.Symlink(filepath.Join(dir, "x"), filepath.Join(dir, "link")) // not counted twice
	if n := Of(dir); n != 123 {
		t.Fatalf("Of = %d, want 123", n)
	}
	if n := Of(filepath.Join(dir, "gone")); n != 0 {
		t.Fatalf("Of(missing) = %d, want 0", n)
	}
}
