package remove

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestFile(t *testing.T) {
	d := t.TempDir()
	f := filepath.Join(d, "f")
	os.WriteFile(f, []byte("x"), 0o600)
	if removed, err := File(f); err != nil || !removed {
		t.Fatalf("File = %v, %v; want true, nil", removed, err)
	}
	if _, err := os.Lstat(f); !os.IsNotExist(err) {
		t.Fatalf("%s is still there (%v)", f, err)
	}
	if removed, err := File(f); err != nil || removed {
		t.Fatalf("an absent file: %v, %v; want false, nil", removed, err)
	}
	if removed, err := File(filepath.Join(d, "no", "such", "dir", "f")); err != nil || removed {
		t.Fatalf("under an absent directory: %v, %v; want false, nil", removed, err)
	}
	sub := filepath.Join(d, "sub")
	os.MkdirAll(filepath.Join(sub, "x"), 0o700)
	if _, err := File(sub); err == nil {
		t.Fatal("a directory that holds something was removed as a file")
	}
	if removed, err := File(filepath.Join(sub, "x")); err != nil || !removed {
		t.Fatalf("an empty directory: %v, want it removed as os.Remove does", err)
	}
}

func TestAll(t *testing.T) {
	d := t.TempDir()
	for name, make := range map[string]func(p string){
		"absent": func(string) {},
		"empty":  func(p string) { os.Mkdir(p, 0o700) },
		"tree": func(p string) {
			os.MkdirAll(filepath.Join(p, "a", "b"), 0o700)
			os.WriteFile(filepath.Join(p, "a", "b", "f"), []byte("x"), 0o600)
			os.WriteFile(filepath.Join(p, "g"), []byte("x"), 0o600)
		},
		"file": func(p string) { os.WriteFile(p, []byte("x"), 0o600) },
	} {
		p := filepath.Join(d, name)
		make(p)
		if err := All(p); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Fatalf("%s: still there (%v)", name, err)
		}
	}
}

// TestAllWhileWritten: a tree that gets new files while it is removed (a supervisor's
// last writes) is removed once the writing stops (All alone fails with "directory not
// empty" when a file comes during its walk).
func TestAllWhileWritten(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "job")
	writeFor := func(d time.Duration) chan struct{} {
		if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o700); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i, end := 0, time.Now().Add(d); time.Now().Before(end); i++ {
				os.MkdirAll(filepath.Join(dir, "sub"), 0o700)
				os.WriteFile(filepath.Join(dir, "sub", fmt.Sprintf("f%d", i)), nil, 0o600)
			}
		}()
		return done
	}
	done := writeFor(150 * time.Millisecond)
	if err := AllWhileWritten(context.Background(), dir, 2*time.Second); err != nil {
		t.Fatalf("a tree written into for 150 ms: %v", err)
	}
	<-done
}
