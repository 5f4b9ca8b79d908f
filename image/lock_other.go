//go:build !unix

package image

// lockPath is a no-op without flock: the registry check still keeps builds rare.
func lockPath(string) (func(), error) { return func() {}, nil }
