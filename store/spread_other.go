//go:build !linux

package store

// spreadBatches is a no-op off Linux (spread_linux.go).
func spreadBatches(dir string) {}
