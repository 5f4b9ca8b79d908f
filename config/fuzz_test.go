package config

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzParseProfiles checks the parser never panics on any input, and that whatever it
// accepts survives Marshal and a second parse unchanged (and Marshal is then stable).
func FuzzParseProfiles(f *testing.F) {
	for _, s := range []string{
		"", "null", "{}", "[]", twoProfiles,
		`{"current": null, "profiles": {"a": {"zone": "", "x": 1}}, "v": [1, {"<": "&"}]}`,
		`{"profiles": {"a": null, "b": {"project": "p", "colour": "\u00e9"}}}`,
		`{"current": 3}`, `{"profiles": {"a": {"zone": {}}}}`, "{\"current\": \"\xff\"}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := ParseProfiles(data)
		if err != nil {
			return
		}
		out, err := a.Marshal()
		if err != nil {
			t.Fatalf("Marshal of a parsed file: %v", err)
		}
		b, err := ParseProfiles(out)
		if err != nil {
			t.Fatalf("reparse of\n%s\nfailed: %v", out, err)
		}
		if diff := cmp.Diff(a, b, fileCmp...); diff != "" {
			t.Fatalf("round trip changed the file (-first +second):\n%s", diff)
		}
		out2, err := b.Marshal()
		if err != nil || !bytes.Equal(out, out2) {
			t.Fatalf("Marshal not stable:\n%s\n---\n%s", out, out2)
		}
	})
}
