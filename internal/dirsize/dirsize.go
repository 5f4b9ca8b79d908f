// Package dirsize measures a directory the way prune reports what it freed: the bytes
// of the regular files under it.
package dirsize

import (
	"io/fs"
	"path/filepath"
)

// Of is the bytes of the regular files under dir (0 for a directory that is gone;
// entries that vanish or cannot be read while it walks are left out).
func Of(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}
