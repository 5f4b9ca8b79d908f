//go:build !unix

// Package filelock is the module's one advisory file lock. Without flock (not a unix
// system) its locks are no-ops: writes stay atomic, only concurrent builds may repeat.
package filelock

import "context"

// Lock takes no lock here.
func Lock(string) (func(), error) { return func() {}, nil }

// LockContext takes no lock here.
func LockContext(context.Context, string, func()) (func(), error) { return func() {}, nil }
