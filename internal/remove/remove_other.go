//go:build !unix

package remove

import (
	"errors"
	"os"
)

// errIsDir is never returned here: os.Remove removes an empty directory too.
var errIsDir = errors.New("is a directory")

func unlink(path string) error { return os.Remove(path) }

func rmdir(path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return errors.New("not a directory")
	}
	return os.Remove(path)
}
