package outdir

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func ino(t *testing.T, p string) uint64 {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

// A job that leaves its directory empty gives it back: the next job's directory is the
// same one (no new inode), and the first job's name is gone.
func TestEmptyDirectoryIsReused(t *testing.T) {
	outs := filepath.Join(t.TempDir(), "outputs")
	s := NewSpare()
	a, b := filepath.Join(outs, "a"), filepath.Join(outs, "b")
	if err := s.Make(a); err != nil {
		t.Fatal(err)
	}
	first := ino(t, a)
	s.Reclaim(a)
	if err := s.Make(b); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(a); !os.IsNotExist(err) {
		t.Fatalf("a job's empty directory outlived the next job's start: %v", err)
	}
	if ino(t, b) != first {
		t.Fatal("the next job got a new directory, not the spare")
	}
	s.Reclaim(b)
	s.Close()
	if ents, _ := os.ReadDir(outs); len(ents) != 0 {
		t.Fatalf("left in outputs/: %v", ents)
	}
}

// A job that wrote something keeps its directory, whole; the next job gets a new, empty
// one; a directory that exists already with an earlier attempt's outputs is kept.
func TestWrittenDirectoryStays(t *testing.T) {
	outs := filepath.Join(t.TempDir(), "outputs")
	s := NewSpare()
	defer s.Close()
	a, b, c := filepath.Join(outs, "a"), filepath.Join(outs, "b"), filepath.Join(outs, "c")
	s.Make(a)
	s.Reclaim(a) // a spare now
	if err := s.Make(b); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(b, "ckpt"), []byte("x"), 0o600)
	s.Reclaim(b)
	if got, err := os.ReadFile(filepath.Join(b, "ckpt")); err != nil || string(got) != "x" {
		t.Fatalf("b's output: %q, %v", got, err)
	}
	if err := s.Make(c); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(c); len(ents) != 0 {
		t.Fatalf("c starts with %v", ents)
	}
	// An earlier attempt's outputs in c: Make keeps them (and the spare).
	os.WriteFile(filepath.Join(c, "old"), []byte("y"), 0o600)
	s.Reclaim(c)
	s.Make(a)
	s.Reclaim(a) // the spare again
	if err := s.Make(c); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(c, "old")); string(got) != "y" {
		t.Fatalf("c's earlier output: %q", got)
	}
	if s.path == "" {
		t.Fatal("the spare was dropped though c could not take it")
	}
}

// A spare removed by someone else (a prune) is made anew.
func TestSpareRemovedMeanwhile(t *testing.T) {
	outs := filepath.Join(t.TempDir(), "outputs")
	s := NewSpare()
	defer s.Close()
	a, b := filepath.Join(outs, "a"), filepath.Join(outs, "b")
	s.Make(a)
	s.Reclaim(a)
	if err := os.Remove(a); err != nil { // `kinetic prune`: an ended job's empty directory
		t.Fatal(err)
	}
	if err := s.Make(b); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(b); err != nil || !fi.IsDir() {
		t.Fatalf("b: %v", err)
	}
}

// The same name made again while the spare waits there is the job's: the next job gets
// a directory of its own, never that one with what the job wrote.
func TestSameNameAgain(t *testing.T) {
	outs := filepath.Join(t.TempDir(), "outputs")
	s := NewSpare()
	defer s.Close()
	a, b := filepath.Join(outs, "a"), filepath.Join(outs, "b")
	s.Make(a)
	s.Reclaim(a)
	if err := s.Make(a); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(a, "ckpt"), []byte("x"), 0o600)
	s.Reclaim(a)
	if err := s.Make(b); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(a, "ckpt")); err != nil || string(got) != "x" {
		t.Fatalf("a's output: %q, %v", got, err)
	}
	if ents, _ := os.ReadDir(b); len(ents) != 0 {
		t.Fatalf("b starts with %v", ents)
	}
}

// What counts as something written: a file, a hidden file, an empty subdirectory.
func TestAnythingWrittenKeepsTheDirectory(t *testing.T) {
	outs := filepath.Join(t.TempDir(), "outputs")
	for name, write := range map[string]func(dir string) error{
		"file":   func(d string) error { return os.WriteFile(filepath.Join(d, "f"), nil, 0o600) },
		"hidden": func(d string) error { return os.WriteFile(filepath.Join(d, ".f"), nil, 0o600) },
		"subdir": func(d string) error { return os.Mkdir(filepath.Join(d, "ckpt"), 0o700) },
	} {
		s := NewSpare()
		dir := filepath.Join(outs, name)
		if err := s.Make(dir); err != nil {
			t.Fatal(err)
		}
		if err := write(dir); err != nil {
			t.Fatal(err)
		}
		s.Reclaim(dir)
		if _, err := os.Stat(dir); err != nil || s.path != "" {
			t.Errorf("%s: the directory was taken back (%v)", name, err)
		}
		s.Close()
	}
	if !empty(t.TempDir()) {
		t.Error("an empty directory reads as not empty")
	}
}
