//go:build !unix

package gcstest

func lockFile(string) (func(), error) { return nil, errNoLock }
