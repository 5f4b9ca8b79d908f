package gcpkey

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestProblem: each way a key file is unusable is said without Google's library's
// words.
func TestProblem(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(content), 0o600)
		return p
	}
	for _, c := range []struct{ path, want string }{
		{filepath.Join(dir, "missing.json"), "does not exist"},
		{dir, "is a directory"},
		{write("garbage.json", "{not json"), "is not a JSON object"},
		{write("list.json", "[]"), "is not a JSON object"},
		{write("number.json", `{"type": 7}`), `has no "type" naming`},
		{write("notype.json", `{"client_email": "a@b"}`), `has no "type" naming`},
		{write("odd.json", `{"type": "kerberos"}`), `has type "kerberos"`},
		{write("sa.json", `{"type": "service_account"}`), "is a service_account file that Google's library could not use"},
	} {
		if got := Problem(c.path); !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, want %q", filepath.Base(c.path), got, c.want)
		}
	}
}

// FuzzProblem: whatever a key file holds, the answer is a person's sentence,
// never the JSON decoder's words.
func FuzzProblem(f *testing.F) {
	for _, s := range []string{"", "{not json", `{"type": "service_account"}`, `{"type": 7}`, `[]`, "\x00\xff"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(t.TempDir(), "key.json")
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		got := Problem(p)
		if got == "" || strings.Contains(got, "invalid character") || strings.Contains(got, "json:") || strings.Contains(got, "unexpected end") {
			t.Errorf("%q: %q", b, got)
		}
	})
}
