//go:build !linux

package store_test

func dirFlags(path string) (uint32, bool) { return 0, false }
