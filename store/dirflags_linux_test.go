package store_test

import "golang.org/x/sys/unix"

// dirFlags reads a directory's inode flags (chattr's), ok false where there are none.
func dirFlags(path string) (uint32, bool) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return 0, false
	}
	defer unix.Close(fd)
	f, err := unix.IoctlGetUint32(fd, unix.FS_IOC_GETFLAGS)
	return f, err == nil
}
