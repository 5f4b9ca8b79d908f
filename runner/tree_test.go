package runner

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/kinetic-run/kinetic/pack"
	"github.com/kinetic-run/kinetic/store"
)

// TestReuseTreeIsolation: a worker reuses the tree it made for the same manifest, but a
// job that changed the tree never leaves the change to the next job.
func TestReuseTreeIsolation(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, "file://"+t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	src := t.TempDir()
	os.WriteFile(filepath.Join(src, "main.py"), []byte("x = 1\n"), 0o644)
	os.MkdirAll(filepath.Join(src, "pkg"), 0o755)
	os.WriteFile(filepath.Join(src, "pkg", "data.txt"), []byte("original"), 0o644)
	m, err := pack.Scan(ctx, src, pack.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ref, _, err := pack.Upload(ctx, st, m, pack.UploadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tree, err := reuseTree(ctx, st, ref, dir)
	if err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(tree, "pkg", "marker")
	// An untouched tree is reused as is (a file only we know about survives)...
	os.MkdirAll(filepath.Join(tree, "__pycache__"), 0o755) // bytecode caches do not count
	os.WriteFile(filepath.Join(tree, "__pycache__", "main.cpython-311.pyc"), []byte("pyc"), 0o644)
	if again, err := reuseTree(ctx, st, ref, dir); err != nil || again != tree {
		t.Fatalf("reuse: %s, %v", again, err)
	}
	// ...while any change a job makes is undone before the next one.
	for name, change := range map[string]func(){
		"modified": func() { os.WriteFile(filepath.Join(tree, "pkg", "data.txt"), []byte("changed!"), 0o644) },
		"added":    func() { os.WriteFile(marker, []byte("leak"), 0o644) },
		"removed":  func() { os.Remove(filepath.Join(tree, "main.py")) },
	} {
		t.Run(name, func(t *testing.T) {
			change()
			got, err := reuseTree(ctx, st, ref, dir)
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(filepath.Join(got, "pkg", "data.txt"))
			if err != nil || string(b) != "original" {
				t.Fatalf("data.txt = %q, %v", b, err)
			}
			if _, err := os.Stat(filepath.Join(got, "main.py")); err != nil {
				t.Fatal("main.py missing")
			}
			if _, err := os.Stat(marker); err == nil {
				t.Fatal("a file added by an earlier job survived")
			}
		})
	}
}
