package store

import (
	"strings"
	"testing"
)

func TestLogDamage(t *testing.T) {
	good := "1 {\"success\":true}\n2 {\"success\":false}\n"
	for _, c := range []struct {
		name, log string
		sealed    bool
		want      string // a substring; "" for no damage
	}{
		{"whole", good, true, ""},
		{"open, a line being written", good + "3 {\"succ", false, ""},
		{"sealed, cut short", good + "3 {\"succ", true, "cut short: it ends in the middle of its line 3, after 2 whole"},
		{"garbage", "\x00\x01garbage{", true, "cut short: it ends in the middle of its line 1, after 0 whole"},
		{"garbage line", good + "\x00\x01garbage{\n4 {}\n", false, "its line 3 is not an input's envelope"},
		{"torn line then a whole one", "1 {\"succ\n2 {}\n", true, ""},
		{"emptied envelope", "1 \n", true, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := logDamage([]byte(c.log), c.sealed)
			if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
				t.Errorf("logDamage(%q, %v) = %q, want %q", c.log, c.sealed, got, c.want)
			}
		})
	}
}

// FuzzLogDamage: an envelope log is read from the store (anyone with write access to
// it may have written anything there); judging it never panics, and a log of whole
// envelope lines is never called damaged.
func FuzzLogDamage(f *testing.F) {
	f.Add([]byte("1 {\"success\":true}\n"), true)
	f.Add([]byte("\x00\x01garbage{"), false)
	f.Add([]byte("12 \n-1 {}\n"), true)
	f.Fuzz(func(t *testing.T, b []byte, sealed bool) {
		logDamage(b, sealed)
		var whole []byte
		for _, l := range strings.Split(string(b), "\n") {
			if envelopeLine([]byte(l)) {
				whole = append(append(whole, l...), '\n')
			}
		}
		if d := logDamage(whole, sealed); d != "" {
			t.Errorf("whole lines %q called damaged: %s", whole, d)
		}
	})
}
