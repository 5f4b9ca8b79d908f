//go:build !linux

package atomicfile

func openUnnamed(dir string) (int, bool, error) { return -1, false, nil }

func linkUnnamed(fd int, path string) error { panic("atomicfile: no unnamed files here") }
