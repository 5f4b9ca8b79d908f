package bar

import (
	"bytes"
	"regexp"
	"testing"
)

// TestStyle: a bar says what, the ok and failed counts once items ended, a percentage,
// the bar, the count, and the time so far and the time left; cleared when finished.
func TestStyle(t *testing.T) {
	var w bytes.Buffer
	b := New(&w, 10, "batch grp-x", Options{})
	b.Counts(4, 1)
	b.Set(5, 10)
	got := w.String()
	if !regexp.MustCompile(`kinetic: batch grp-x: 4 ok, 1 failed +50% \|█{12} {12}\| \(5/10[^)]*\) \[\d+s:\d+s\]`).MatchString(got) {
		t.Errorf("bar drawn as %q", got)
	}
	var u bytes.Buffer
	ub := New(&u, 2<<20, "uploading the working directory", Options{Bytes: true})
	ub.Set(1<<20, 2<<20)
	if !regexp.MustCompile(`kinetic: uploading the working directory +50% \|█{12} {12}\| \(1\.0/2\.1 MB[^)]*\) \[\d+s:\d+s\]`).MatchString(u.String()) {
		t.Errorf("byte bar drawn as %q", u.String())
	}
}
