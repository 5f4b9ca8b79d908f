// Package faultfs gives tests a real small file system to fill up: a tmpfs of a few MiB
// mounted in a temporary directory (root only; the test is skipped elsewhere, and CI
// runs as root), so ENOSPC comes from the kernel, not from a fake.
package faultfs

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// Tmpfs mounts a tmpfs of sizeKiB KiB in a new temporary directory and unmounts it
// when t ends.
func Tmpfs(t testing.TB, sizeKiB int) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("faultfs: mounting a tmpfs needs root (CI runs as root)")
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+strconv.Itoa(sizeKiB)+"k,mode=0755"); err != nil {
		t.Skipf("faultfs: cannot mount a tmpfs here: %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("faultfs: unmount %s: %v", dir, err)
		}
	})
	return dir
}

// Fill writes a file in dir until the file system is full and returns its path; remove
// it to free the space again.
func Fill(t testing.TB, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "filler")
	f, err := os.Create(p)
	if err != nil {
		t.Fatalf("faultfs: %v", err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				break
			}
			t.Fatalf("faultfs: fill: %v", err)
		}
	}
	// Small writes may still fit in a last partial page: use those up too.
	for {
		if _, err := f.Write(buf[:1]); err != nil {
			break
		}
	}
	return p
}

// Umount is exported for programs (not tests) that mounted with MountTmpfs.
func Umount(dir string) error { return syscall.Unmount(dir, syscall.MNT_DETACH) }

// MountTmpfs mounts a tmpfs of sizeKiB KiB on dir, outside a test.
func MountTmpfs(dir string, sizeKiB int) error {
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+strconv.Itoa(sizeKiB)+"k,mode=0755"); err != nil {
		return err
	}
	return nil
}
