//go:build unix

package pack

import (
	"io/fs"
	"syscall"
)

// inode returns fi's inode number, or 0 where the platform has none.
func inode(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}
