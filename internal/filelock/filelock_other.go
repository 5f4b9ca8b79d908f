//go:build !unix

// Package filelock serialises processes on this machine with advisory file locks.
package filelock

import "errors"

// Lock is not available here.
func Lock(string) (func(), error) { return nil, errors.New("file locks need a unix system") }
