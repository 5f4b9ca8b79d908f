package image

import (
	"fmt"
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

// FuzzWheelMetadata feeds wheel file names and specifiers (from users' wheel
// directories) to the pinned-wheel checks: they must never panic, and a version always
// satisfies "==" itself when it is numeric.
func FuzzWheelMetadata(f *testing.F) {
	f.Add("kn_demo-1.0-py3-none-any.whl", "1.0", ">=1,<2")
	f.Add("x-2.3.4-1-cp311-abi3-manylinux_2_17_x86_64.manylinux2014_x86_64.whl", "3.11", "!=3.12")
	f.Add("bad.whl", "1..2", "~=1")
	f.Fuzz(func(t *testing.T, file, version, spec string) {
		if m := wheelNameRE.FindStringSubmatch(file); m != nil {
			compatible(py311, m[3], m[4], m[5])
		}
		satisfies(version, spec)
		if _, ok := numeric(version); ok && !satisfies(version, "=="+version) {
			t.Fatalf("%q does not satisfy ==%q", version, version)
		}
		if m := requiresRE.FindStringSubmatch(spec); m != nil {
			extraOnlyRE.MatchString(m[4])
		}
	})
}

// FuzzCheckPython: the python_version a client sends (untrusted protocol input) never
// panics, is accepted exactly when it is "3.10" to "3.13", and an error quotes it.
func FuzzCheckPython(f *testing.F) {
	for _, s := range []string{"3.12", "3.9", "3.14", "2.7", "3", "3.12.1", "3.012", " 3.12", "3.12\n", "", "x.y", "3.-1", "99999999999999999999.1"} {
		f.Add(s)
	}
	ok := map[string]bool{}
	for m := MinPythonMinor; m <= MaxPythonMinor; m++ {
		ok[fmt.Sprintf("3.%d", m)] = true
	}
	f.Fuzz(func(t *testing.T, s string) {
		err := CheckPython(s)
		if (err == nil) != ok[s] {
			t.Fatalf("CheckPython(%q) = %v", s, err)
		}
		if err != nil && !strings.Contains(err.Error(), fmt.Sprintf("%q", s)) && !strings.Contains(err.Error(), "Python "+s) {
			t.Fatalf("error %q does not name %q", err, s)
		}
	})
}
