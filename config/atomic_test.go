package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/kinetic-run/kinetic/testkit/faultfs"
)

// noLeftovers fails if anything but the profiles file is in dir.
func noLeftovers(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Name() != "profiles.json" {
			t.Errorf("left behind: %s", e.Name())
		}
	}
}

func TestSaveLeavesNoTempFiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "profiles.json")
	for i := range 3 {
		f := &File{}
		if err := f.Put("p", Profile{"zone": strings.Repeat("z", i+1)}); err != nil {
			t.Fatal(err)
		}
		if err := f.Save(path); err != nil {
			t.Fatal(err)
		}
	}
	noLeftovers(t, filepath.Dir(path))
}

// TestSaveFailureKeepsOriginal fills the disk (a small tmpfs) so that writing the new
// content fails with ENOSPC, and checks the old file is untouched and nothing is left.
func TestSaveFailureKeepsOriginal(t *testing.T) {
	dir := faultfs.Tmpfs(t, 64)
	path := filepath.Join(dir, "profiles.json")
	if err := os.WriteFile(path, []byte(twoProfiles), 0o600); err != nil {
		t.Fatal(err)
	}
	faultfs.Fill(t, dir)
	f := &File{}
	if err := f.Put("other", Profile{"zone": strings.Repeat("z", 64<<10)}); err != nil {
		t.Fatal(err)
	}
	if err := f.Save(path); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Save on a full disk = %v, want ENOSPC", err)
	}
	if data, _ := os.ReadFile(path); string(data) != twoProfiles {
		t.Errorf("original changed:\n%s", data)
	}
	for _, e := range mustReadDir(t, dir) {
		if e != "profiles.json" && e != "filler" {
			t.Errorf("left behind: %s", e)
		}
	}
}

func mustReadDir(t *testing.T, dir string) []string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func TestSaveReadOnlyDir(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root ignores directory permissions; TestSaveFailureKeepsOriginal covers the failure path")
	}
	path := writeFile(t, twoProfiles)
	dir := filepath.Dir(path)
	if err := os.Chmod(dir, 0o500); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o700) })
	if err := (&File{}).Save(path); err == nil {
		t.Fatal("Save into a read-only directory succeeded")
	}
	if data, _ := os.ReadFile(path); string(data) != twoProfiles {
		t.Errorf("original changed:\n%s", data)
	}
	noLeftovers(t, dir)
}

func TestSaveFollowsSymlink(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real.json")
	link := filepath.Join(dir, "profiles.json")
	if err := os.WriteFile(real, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, link); err != nil {
		t.Skip(err)
	}
	if err := Update(link, func(f *File) error { return f.Put("dev", Profile{}) }); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("symlink replaced by a file")
	}
	if f, err := LoadProfiles(real); err != nil || f.Profiles["dev"] == nil {
		t.Errorf("target not updated: %v %v", f, err)
	}
}

// TestUpdateConcurrent runs many read-modify-write cycles at once; with the lock none
// of them may be lost.
func TestUpdateConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "profiles.json")
	const n = 20
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			errs <- Update(path, func(f *File) error {
				return f.Put("p"+string(rune('a'+i)), Profile{"zone": "z"})
			})
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	f, err := LoadProfiles(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Profiles) != n {
		t.Errorf("%d profiles after %d concurrent updates: %v", len(f.Profiles), n, f.Names())
	}
}
