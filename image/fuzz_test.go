package image

import (
	"strings"
	"testing"
)

// FuzzParseChoice checks that container_image values from users never panic, that an
// accepted custom image parses again to itself, and that errors name the input.
func FuzzParseChoice(f *testing.F) {
	for _, s := range []string{"", "bundled", "prebuilt", "python:3.11", "127.0.0.1:5000/a/b:c", "gcr.io/x/y@sha256:" + strings.Repeat("0", 64), "https://x/y", "A/B", "x:y:z", "[::1]:5000/a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseChoice(s)
		if err != nil {
			if !strings.Contains(err.Error(), "container_image") {
				t.Fatalf("error %q does not name container_image", err)
			}
			return
		}
		if c.Mode != Custom {
			return
		}
		again, err := ParseReference(c.Ref.String())
		if err != nil {
			t.Fatalf("%q parsed to %q, which does not parse again: %v", s, c.Ref, err)
		}
		if again.Name() != c.Ref.Name() {
			t.Fatalf("%q → %q → %q", s, c.Ref.Name(), again.Name())
		}
		_, _ = ParseRepository(s)
	})
}
