package atomicfile

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestWriteMakesDirsAndMode(t *testing.T) {
	old := syscall.Umask(0o077) // the mode asked for is the mode made, whatever the umask
	defer syscall.Umask(old)
	p := filepath.Join(t.TempDir(), "a", "b", "f")
	if err := Write(p, []byte("one"), 0o644, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := Write(p, []byte("two"), 0o644, 0o700); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil || string(b) != "two" {
		t.Fatalf("read %q, %v", b, err)
	}
	fi, _ := os.Stat(p)
	if fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", fi.Mode().Perm())
	}
	if fi, _ := os.Stat(filepath.Dir(p)); fi.Mode().Perm() != 0o700 {
		t.Errorf("dir mode %v, want 0700", fi.Mode().Perm())
	}
	noTemps(t, filepath.Dir(p))
}

// A rename that fails (a directory in the way) leaves the old content and no temporary
// file, and says which path.
func TestWriteFailureLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "busy")
	if err := os.MkdirAll(filepath.Join(p, "child"), 0o700); err != nil {
		t.Fatal(err)
	}
	err := Write(p, []byte("x"), 0o600, 0o700)
	if err == nil || !strings.Contains(err.Error(), p) {
		t.Fatalf("err %v, want one naming %s", err, p)
	}
	noTemps(t, dir)
	// Missing directories under an existing one are made; under a file, none can be.
	err = Write(filepath.Join(dir, "busy", "child", "x", "y"), []byte("x"), 0o600, 0o700)
	if err != nil {
		t.Fatalf("nested: %v", err)
	}
	f := filepath.Join(dir, "file")
	os.WriteFile(f, nil, 0o600)
	if err := Write(filepath.Join(f, "under"), []byte("x"), 0o600, 0o700); err == nil {
		t.Fatalf("under a file: %v", err)
	}
}

func TestWriteDurable(t *testing.T) {
	p := filepath.Join(t.TempDir(), "profiles.toml")
	if err := WriteDurable(p, []byte("k = 1\n"), 0o600, 0o700); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "k = 1\n" {
		t.Fatalf("read %q", b)
	}
}

func noTemps(t *testing.T, dir string) {
	t.Helper()
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".tmp-") {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
}
