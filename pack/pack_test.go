package pack

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func write(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func listTree(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, p)
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			out[rel] = "-> " + l
		case fi.Mode().IsRegular():
			b, _ := os.ReadFile(p)
			out[rel] = fi.Mode().Perm().String() + " " + string(b)
		}
		return nil
	})
	return out
}

func TestArchiveRoundTrip(t *testing.T) {
	src := t.TempDir()
	write(t, src, map[string]string{
		"main.py":                 "print(1)",
		"pkg/__init__.py":         "",
		"pkg/mod.py":              "x = 1",
		".git/HEAD":               "ref",
		"pkg/__pycache__/m.pyc":   "junk",
		"node_modules/a/index.js": "junk",
		"data/big.bin":            "skipme",
	})
	if err := os.Chmod(filepath.Join(src, "main.py"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("pkg/mod.py", filepath.Join(src, "link.py")); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	st, err := Archive(context.Background(), src, &buf, Options{Skip: []string{"data"}})
	if err != nil {
		t.Fatal(err)
	}
	if st.Files != 3 {
		t.Errorf("Files = %d, want 3", st.Files)
	}
	dst := t.TempDir()
	if err := Extract(bytes.NewReader(buf.Bytes()), dst); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"main.py":         "-rwxr-xr-x print(1)",
		"pkg/__init__.py": "-rw-r--r-- ",
		"pkg/mod.py":      "-rw-r--r-- x = 1",
		"link.py":         "-> pkg/mod.py",
	}
	if d := cmp.Diff(want, listTree(t, dst)); d != "" {
		t.Errorf("extracted tree (-want +got):\n%s", d)
	}
	var again bytes.Buffer
	if _, err := Archive(context.Background(), src, &again, Options{Skip: []string{"data"}}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), again.Bytes()) {
		t.Error("the same tree gave two different archives")
	}
}

type entry struct {
	name, link string
	typ        byte
	body       string
}

func makeArchive(t testing.TB, entries []entry) []byte {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Linkname: e.link, Typeflag: e.typ, Mode: 0o644, Size: int64(len(e.body))}
		if e.typ != tar.TypeReg {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if e.typ == tar.TypeReg {
			tw.Write([]byte(e.body))
		}
	}
	tw.Close()
	gz.Close()
	return buf.Bytes()
}

func TestExtractRefusesEscapes(t *testing.T) {
	for name, entries := range map[string][]entry{
		"absolute":         {{name: "/etc/passwd", typ: tar.TypeReg, body: "x"}},
		"dotdot":           {{name: "a/../../x", typ: tar.TypeReg, body: "x"}},
		"symlink absolute": {{name: "l", link: "/etc", typ: tar.TypeSymlink}},
		"symlink up":       {{name: "a/l", link: "../../etc", typ: tar.TypeSymlink}},
		"through symlink":  {{name: "l", link: "d", typ: tar.TypeSymlink}, {name: "l/x", typ: tar.TypeReg, body: "x"}},
		"onto symlink":     {{name: "l", link: "f", typ: tar.TypeSymlink}, {name: "l", typ: tar.TypeReg, body: "x"}},
		"device":           {{name: "dev", typ: tar.TypeChar}},
		"hardlink":         {{name: "h", link: "x", typ: tar.TypeLink}},
	} {
		t.Run(name, func(t *testing.T) {
			dst := t.TempDir()
			err := Extract(bytes.NewReader(makeArchive(t, entries)), dst)
			if err == nil || !strings.Contains(err.Error(), "working directory archive") {
				t.Fatalf("Extract = %v, want a refusal", err)
			}
		})
	}
}

func TestFindRoot(t *testing.T) {
	home := t.TempDir()
	write(t, home, map[string]string{
		"proj/pyproject.toml":          "",
		"proj/src/app/__init__.py":     "",
		"proj/src/app/sub/__init__.py": "",
		"proj/src/app/sub/m.py":        "",
		"loose/pkg/__init__.py":        "",
		"loose/pkg/m.py":               "",
		"reqs/a/b/requirements.txt":    "",
		"reqs/a/b/c/d.py":              "",
	})
	for name, tc := range map[string]struct{ start, want string }{
		"climbs packages then marker": {"proj/src/app/sub", "proj"},
		"no marker stops above pkgs":  {"loose/pkg", "loose"},
		"nearest marker":              {"reqs/a/b/c", "reqs/a/b"},
		"never above home":            {"", ""},
	} {
		t.Run(name, func(t *testing.T) {
			got := FindRoot(filepath.Join(home, tc.start), home)
			if want := filepath.Join(home, tc.want); got != want {
				t.Errorf("FindRoot = %s, want %s", got, want)
			}
		})
	}
}

func FuzzExtract(f *testing.F) {
	f.Add(makeArchive(f, []entry{{name: "a/b.py", typ: tar.TypeReg, body: "x"}, {name: "l", link: "a/b.py", typ: tar.TypeSymlink}}))
	f.Add(makeArchive(f, []entry{{name: "../x", typ: tar.TypeReg, body: "x"}}))
	f.Add([]byte{0x1f, 0x8b})
	f.Fuzz(func(t *testing.T, data []byte) {
		dst := t.TempDir()
		_ = Extract(bytes.NewReader(data), dst)
		// Whatever happened, nothing may exist outside dst: every path under dst's parent
		// other than dst itself belongs to the test framework, so check only that every
		// symlink inside dst resolves inside dst.
		var names []string
		filepath.Walk(dst, func(p string, fi os.FileInfo, err error) error {
			if err == nil && fi.Mode()&os.ModeSymlink != 0 {
				l, _ := os.Readlink(p)
				r := filepath.Clean(filepath.Join(filepath.Dir(p), l))
				if !strings.HasPrefix(r, dst) {
					t.Fatalf("symlink %s -> %s escapes %s", p, l, dst)
				}
				names = append(names, p)
			}
			return nil
		})
		sort.Strings(names)
	})
}
