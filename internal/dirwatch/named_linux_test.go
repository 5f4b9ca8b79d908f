package dirwatch

import "testing"

// FuzzNamed: whatever the kernel's buffer holds, named never panics.
func FuzzNamed(f *testing.F) {
	f.Add([]byte{1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 8, 0, 0, 0, 's', 't', 'a', 't', 'u', 's', 0, 0})
	f.Fuzz(func(t *testing.T, buf []byte) {
		named(buf, map[string]bool{"status": true}) // never panics, whatever the kernel gave
	})
}
