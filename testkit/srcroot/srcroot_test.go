package srcroot

import (
	"os"
	"path/filepath"
	"testing"
)

func TestDirFindsTheModule(t *testing.T) {
	d, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(d, "testkit", "srcroot", "srcroot.go")); err != nil {
		t.Fatalf("Dir() = %s, which does not hold this package: %v", d, err)
	}
	// A nested module (the test tools' own go.mod) is not this module.
	nested := t.TempDir()
	os.WriteFile(filepath.Join(nested, "go.mod"), []byte("module example.com/tools\n"), 0o644)
	if declares(filepath.Join(nested, "go.mod")) {
		t.Error("a go.mod of another module declares this one")
	}
	t.Chdir(nested)
	if d, err := Dir(); err == nil {
		t.Errorf("outside the repository: Dir() = %s, no error", d)
	}
}
