package pack

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// Names that are not valid UTF-8 are left out with a note, never carried renamed.
func TestScanLeavesOutNonUTF8Names(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "ok.txt"), []byte("ok"), 0o644)
	if err := os.WriteFile(filepath.Join(root, "caf\xe9.txt"), []byte("x"), 0o644); err != nil {
		t.Skip(err)
	}
	os.MkdirAll(filepath.Join(root, "d\xff", "sub"), 0o755)
	os.WriteFile(filepath.Join(root, "d\xff", "sub", "f"), []byte("f"), 0o644)
	os.Symlink("t\xfe", filepath.Join(root, "link"))
	m, err := Scan(context.Background(), root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, e := range m.Entries {
		if !utf8.ValidString(e.Path) || !utf8.ValidString(e.Target) {
			t.Errorf("entry %q -> %q is not valid UTF-8", e.Path, e.Target)
		}
		paths = append(paths, e.Path)
	}
	if strings.Join(paths, ",") != "ok.txt" {
		t.Errorf("entries = %v, want only ok.txt", paths)
	}
	notes := strings.Join(m.Notes, "\n")
	for _, want := range []string{`"caf\xe9.txt"`, `directory "d\xff"`, `symlink link: its target "t\xfe"`} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes %q do not say %s", notes, want)
		}
	}
}
