package atomicfile

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
)

// unnamedWorks skips a test where the temporary directory's file system has no
// unnamed files (the named temporary file is then all there is to test).
func unnamedWorks(t *testing.T, dir string) {
	t.Helper()
	fd, ok, err := openUnnamed(dir)
	if !ok || err != nil {
		t.Skipf("no O_TMPFILE in %s (%v)", dir, err)
	}
	syscall.Close(fd)
}

// A link that fails for want of /proc (a container without it) leaves nothing, turns
// unnamed files off, and the write, and the ones after it, take the named temporary file.
func TestWriteWithoutProcFallsBack(t *testing.T) {
	dir := t.TempDir()
	unnamedWorks(t, dir)
	defer noTmpfile.Store(false)
	p := filepath.Join(dir, "f")
	fd, _, err := openUnnamed(dir)
	if err != nil {
		t.Fatal(err)
	}
	noProc := func(int, string) error { return syscall.ENOENT }
	if done, err := writeUnnamed(fd, dir, p, []byte("one"), 0o644, false, false, noProc); done || err != nil {
		t.Fatalf("done %v, %v: want the caller to write it the old way", done, err)
	}
	if !noTmpfile.Load() {
		t.Fatal("the failed link did not turn unnamed files off")
	}
	if _, ok, _ := openUnnamed(dir); ok {
		t.Fatal("unnamed files are still tried")
	}
	if err := Write(p, []byte("one"), 0o644, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := Create(filepath.Join(dir, "sub", "g"), []byte("two"), 0o600, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"f": "one", "sub/g": "two"} {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(b) != want {
			t.Errorf("%s: %q, %v", name, b, err)
		}
	}
	noTemps(t, dir)
	noTemps(t, filepath.Join(dir, "sub"))
}

// Create through an unnamed file is exclusive: of concurrent Creates of one path exactly
// one wins, the others get fs.ErrExist, and the file is the winner's, whole.
func TestCreateUnnamedExclusive(t *testing.T) {
	dir := t.TempDir()
	unnamedWorks(t, dir)
	p := filepath.Join(dir, "claim")
	var wg sync.WaitGroup
	var mu sync.Mutex
	won, lost := 0, 0
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := Create(p, bytes.Repeat([]byte{byte('a' + i)}, 64<<10), 0o600, 0o700)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				won++
			case errors.Is(err, fs.ErrExist):
				lost++
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if won != 1 || lost != 7 {
		t.Fatalf("%d won, %d lost; want 1 and 7", won, lost)
	}
	b, _ := os.ReadFile(p)
	if len(b) != 64<<10 || !bytes.Equal(b, bytes.Repeat(b[:1], len(b))) {
		t.Fatalf("the claimed file is not one writer's whole content (%d bytes)", len(b))
	}
	noTemps(t, dir)
	if noTmpfile.Load() {
		t.Fatal("unnamed files were turned off")
	}
}

// A reader never sees a partial file while writers replace it, new or existing.
func TestWriteReaderSeesWholeFiles(t *testing.T) {
	dir := t.TempDir()
	unnamedWorks(t, dir)
	p := filepath.Join(dir, "f")
	contents := [][]byte{bytes.Repeat([]byte("a"), 100<<10), bytes.Repeat([]byte("b"), 3)}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if i%10 == 0 {
					os.Remove(p) // the next write makes it anew
				}
				if err := Write(p, contents[(i+w)%2], 0o600, 0o700); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for range 2000 {
		b, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil || !bytes.Equal(b, contents[0]) && !bytes.Equal(b, contents[1]) {
			close(stop)
			wg.Wait()
			t.Fatalf("read %d bytes (%v): not one whole content", len(b), err)
		}
	}
	close(stop)
	wg.Wait()
	noTemps(t, dir)
}

// A file made between the look that found nothing and the link (another writer's) is
// replaced whole, as a rename replaces it, and leaves no temporary file.
func TestUnnamedReplacesFileMadeMeanwhile(t *testing.T) {
	dir := t.TempDir()
	unnamedWorks(t, dir)
	p := filepath.Join(dir, "f")
	fd, _, err := openUnnamed(dir)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(p, []byte("the other writer's"), 0o600)
	if done, err := writeUnnamed(fd, dir, p, []byte("mine"), 0o644, false, false, linkUnnamed); !done || err != nil {
		t.Fatalf("done %v, %v", done, err)
	}
	if b, _ := os.ReadFile(p); string(b) != "mine" {
		t.Fatalf("read %q", b)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o644 {
		t.Fatalf("mode %v", fi.Mode().Perm())
	}
	noTemps(t, dir)
}
