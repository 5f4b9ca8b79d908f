//go:build !linux

package outdir

import "os"

// rename renames the directory old to new (os.Rename fails if new is a directory).
func rename(old, new string) error { return os.Rename(old, new) }
