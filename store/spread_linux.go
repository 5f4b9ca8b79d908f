package store

import (
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// fsTopdirFL is FS_TOPDIR_FL (linux/fs.h; chattr +T): ext4 places each directory made in
// a directory so marked in a block group of its own choosing, as it does the file
// system's top-level directories, instead of beside its parent.
const fsTopdirFL = 0x00020000

// spreadBatches marks a file store's groups/ directory so that each batch's directory
// (where its inputs' results are written: GroupResultsPrefix) lands in a block group
// of its own. Without it a batch's thousand new files went where the last batch's had
// just been deleted, and ext4 without a journal scans every recently deleted inode of
// a block group before it gives out a new one: a map run right after another spent
// more time allocating inodes than running its inputs (docs/store.md). Best effort:
// another file system ignores or refuses the flag, and nothing else depends on it.
func spreadBatches(dir string) {
	groups := filepath.Join(dir, "groups")
	if err := os.Mkdir(groups, 0o700); err != nil && !os.IsExist(err) {
		return
	}
	fd, err := unix.Open(groups, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	flags, err := unix.IoctlGetUint32(fd, unix.FS_IOC_GETFLAGS)
	if err != nil || flags&fsTopdirFL != 0 {
		return
	}
	unix.IoctlSetPointerInt(fd, unix.FS_IOC_SETFLAGS, int(flags|fsTopdirFL))
}
