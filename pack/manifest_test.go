package pack

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kinetic-run/kinetic/store"
)

var (
	emptySum = hex.EncodeToString(func() []byte { h := sha256.Sum256(nil); return h[:] }())
	sumA     = strings.Repeat("a", 64)
)

func TestParseManifestRefusesHostileInput(t *testing.T) {
	for name, body := range map[string]string{
		"not json":          `{`,
		"trailing data":     `{"version":1,"entries":[]} {}`,
		"unknown field":     `{"version":1,"entries":[],"extra":1}`,
		"version":           `{"version":2,"entries":[]}`,
		"absolute":          `{"version":1,"entries":[{"path":"/etc/passwd","type":"file","sha256":"` + emptySum + `"}]}`,
		"dotdot":            `{"version":1,"entries":[{"path":"a/../../x","type":"file","sha256":"` + emptySum + `"}]}`,
		"dot":               `{"version":1,"entries":[{"path":"./x","type":"file","sha256":"` + emptySum + `"}]}`,
		"empty component":   `{"version":1,"entries":[{"path":"a//x","type":"file","sha256":"` + emptySum + `"}]}`,
		"trailing slash":    `{"version":1,"entries":[{"path":"a/","type":"dir"}]}`,
		"backslash":         `{"version":1,"entries":[{"path":"..\\x","type":"dir"}]}`,
		"nul":               `{"version":1,"entries":[{"path":"a\u0000b","type":"dir"}]}`,
		"empty path":        `{"version":1,"entries":[{"path":"","type":"dir"}]}`,
		"unsorted":          `{"version":1,"entries":[{"path":"b","type":"dir"},{"path":"a","type":"dir"}]}`,
		"duplicate":         `{"version":1,"entries":[{"path":"a","type":"dir"},{"path":"a","type":"dir"}]}`,
		"below a symlink":   `{"version":1,"entries":[{"path":"l","type":"symlink","target":"d"},{"path":"l/x","type":"file","sha256":"` + emptySum + `"}]}`,
		"below a file":      `{"version":1,"entries":[{"path":"f","type":"file","sha256":"` + emptySum + `"},{"path":"f/x","type":"dir"}]}`,
		"symlink absolute":  `{"version":1,"entries":[{"path":"l","type":"symlink","target":"/etc"}]}`,
		"symlink up":        `{"version":1,"entries":[{"path":"a/l","type":"symlink","target":"../../etc"}]}`,
		"symlink chain":     `{"version":1,"entries":[{"path":"a/l2","type":"symlink","target":".."},{"path":"l1","type":"symlink","target":"a/l2/.."}]}`,
		"symlink to abs":    `{"version":1,"entries":[{"path":"a","type":"symlink","target":"b/x"},{"path":"b","type":"symlink","target":"/"}]}`,
		"symlink loop":      `{"version":1,"entries":[{"path":"a","type":"symlink","target":"b/x"},{"path":"b","type":"symlink","target":"a/y"}]}`,
		"symlink empty":     `{"version":1,"entries":[{"path":"l","type":"symlink","target":""}]}`,
		"symlink with mode": `{"version":1,"entries":[{"path":"l","type":"symlink","target":"x","mode":4095}]}`,
		"setuid":            `{"version":1,"entries":[{"path":"f","type":"file","mode":2541,"sha256":"` + emptySum + `"}]}`,
		"dir with content":  `{"version":1,"entries":[{"path":"d","type":"dir","size":3}]}`,
		"negative size":     `{"version":1,"entries":[{"path":"f","type":"file","size":-1,"sha256":"` + emptySum + `"}]}`,
		"huge size":         `{"version":1,"entries":[{"path":"f","type":"file","size":99999999999999,"sha256":"` + sumA + `"}]}`,
		"huge total":        `{"version":1,"entries":[{"path":"f","type":"file","size":68719476736,"sha256":"` + sumA + `"},{"path":"g","type":"file","size":1,"sha256":"` + sumA + `"}]}`,
		"bad hash":          `{"version":1,"entries":[{"path":"f","type":"file","sha256":"XYZ"}]}`,
		"upper-case hash":   `{"version":1,"entries":[{"path":"f","type":"file","sha256":"` + strings.ToUpper(sumA) + `"}]}`,
		"pack out of range": `{"version":1,"entries":[{"path":"f","type":"file","size":1,"sha256":"` + sumA + `","pack":0}]}`,
		"negative pack":     `{"version":1,"packs":[{"sha256":"` + sumA + `","size":10}],"entries":[{"path":"f","type":"file","size":1,"sha256":"` + sumA + `","pack":-1}]}`,
		"past pack end":     `{"version":1,"packs":[{"sha256":"` + sumA + `","size":10}],"entries":[{"path":"f","type":"file","size":4,"sha256":"` + sumA + `","pack":0,"offset":7}]}`,
		"negative offset":   `{"version":1,"packs":[{"sha256":"` + sumA + `","size":10}],"entries":[{"path":"f","type":"file","size":4,"sha256":"` + sumA + `","pack":0,"offset":-1}]}`,
		"offset no pack":    `{"version":1,"entries":[{"path":"f","type":"file","size":4,"sha256":"` + sumA + `","offset":3}]}`,
		"bad pack hash":     `{"version":1,"packs":[{"sha256":"x","size":10}],"entries":[]}`,
		"empty pack":        `{"version":1,"packs":[{"sha256":"` + sumA + `","size":0}],"entries":[]}`,
		"unknown type":      `{"version":1,"entries":[{"path":"d","type":"fifo"}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := ParseManifest([]byte(body)); !errors.Is(err, ErrBadManifest) {
				t.Fatalf("ParseManifest = %v, want ErrBadManifest", err)
			}
		})
	}
}

func TestParseManifestAcceptsLinksInside(t *testing.T) {
	body := `{"version":1,"entries":[{"path":"a","type":"dir","mode":493},{"path":"a/l","type":"symlink","target":"../b/./c"},{"path":"b","type":"symlink","target":"a"},{"path":"top","type":"symlink","target":"a/l"}]}`
	if _, err := ParseManifest([]byte(body)); err != nil {
		t.Fatal(err)
	}
}

func TestMaterializeRefusesExistingSymlinks(t *testing.T) {
	ctx := context.Background()
	st := openStore(t, "mem://")
	outside := t.TempDir()
	for name, body := range map[string]string{
		"dir":          `{"version":1,"entries":[{"path":"d","type":"dir","mode":493},{"path":"d/f","type":"file","mode":420,"sha256":"` + emptySum + `"}]}`,
		"implicit dir": `{"version":1,"entries":[{"path":"d/f","type":"file","mode":420,"sha256":"` + emptySum + `"}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			dst := t.TempDir()
			if err := os.Symlink(outside, filepath.Join(dst, "d")); err != nil {
				t.Fatal(err)
			}
			ref := putManifest(t, st, body)
			if err := Materialize(ctx, st, ref, dst); err == nil || !strings.Contains(err.Error(), "symlink") {
				t.Fatalf("Materialize = %v, want a refusal", err)
			}
			if ents, _ := os.ReadDir(outside); len(ents) != 0 {
				t.Fatalf("wrote outside dest: %v", ents)
			}
		})
	}
	// A file where a symlink stands replaces the link, never writes through it.
	dst := t.TempDir()
	target := filepath.Join(outside, "victim")
	os.WriteFile(target, []byte("safe"), 0o644)
	os.Symlink(target, filepath.Join(dst, "f"))
	ref := putManifest(t, st, `{"version":1,"entries":[{"path":"f","type":"file","mode":420,"sha256":"`+emptySum+`"}]}`)
	if err := Materialize(ctx, st, ref, dst); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(target); string(b) != "safe" {
		t.Fatalf("wrote through a symlink: %q", b)
	}
}

func TestMaterializeRefusesBadRefs(t *testing.T) {
	st := openStore(t, "mem://")
	ref := putManifest(t, st, `{"version":1,"entries":[]}`)
	for name, r := range map[string]ManifestRef{
		"key not content addressed": {Key: "jobs/x/manifest.json", SHA256: ref.SHA256},
		"wrong hash":                {Key: store.BlobKey(sumA), SHA256: sumA},
		"not hex":                   {Key: "blobs/sha256/../x", SHA256: "../x"},
	} {
		if err := Materialize(context.Background(), st, r, t.TempDir()); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func putManifest(t testing.TB, st *store.Store, body string) ManifestRef {
	t.Helper()
	key, sum, err := st.PutBlob(context.Background(), []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return ManifestRef{Key: key, SHA256: sum, Size: int64(len(body))}
}

func FuzzParseManifest(f *testing.F) {
	// A real manifest, with a pack, a blob, links and modes.
	src := f.TempDir()
	smallTree(f, src, 5)
	os.Symlink("src", filepath.Join(src, "l"))
	os.WriteFile(filepath.Join(src, "empty"), nil, 0o755)
	m, err := Scan(context.Background(), src, Options{})
	if err != nil {
		f.Fatal(err)
	}
	if _, _, err := Upload(context.Background(), openStore(f, "mem://"), m, UploadOptions{}); err != nil {
		f.Fatal(err)
	}
	real, _ := m.Marshal()
	f.Add(real)
	f.Add([]byte(`{"version":1,"entries":[{"path":"a","type":"dir","mode":493},{"path":"a/e","type":"file","mode":420,"sha256":"` + emptySum + `"},{"path":"a/l","type":"symlink","target":"e"},{"path":"b","type":"symlink","target":"a/l"}]}`))
	f.Add([]byte(`{"version":1,"entries":[{"path":"a/l2","type":"symlink","target":".."},{"path":"l1","type":"symlink","target":"a/l2/.."}]}`))
	f.Add([]byte(`{"version":1,"entries":[{"path":"../x","type":"file","sha256":"` + emptySum + `"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseManifest(data)
		if err != nil {
			if !errors.Is(err, ErrBadManifest) {
				t.Fatalf("error does not wrap ErrBadManifest: %v", err)
			}
			return
		}
		// Whatever a valid manifest says, materialising it writes only inside dest.
		if len(m.Entries) > 200 {
			return
		}
		st := openStore(t, "mem://")
		ref := putManifest(t, st, string(data))
		parent := t.TempDir()
		dst := filepath.Join(parent, "dst")
		_ = Materialize(context.Background(), st, ref, dst)
		ents, _ := os.ReadDir(parent)
		for _, e := range ents {
			if e.Name() != "dst" {
				t.Fatalf("wrote %s outside dest", e.Name())
			}
		}
		realDst, err := filepath.EvalSymlinks(dst)
		if err != nil {
			return // Materialize failed before creating dest
		}
		filepath.Walk(dst, func(p string, fi os.FileInfo, err error) error {
			if err != nil || fi.Mode()&os.ModeSymlink == 0 {
				return nil
			}
			if r, err := filepath.EvalSymlinks(p); err == nil && r != realDst && !strings.HasPrefix(r, realDst+string(filepath.Separator)) {
				l, _ := os.Readlink(p)
				t.Fatalf("symlink %s -> %s resolves to %s, outside %s", p, l, r, dst)
			}
			return nil
		})
	})
}
