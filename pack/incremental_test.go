package pack

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kinetic-run/kinetic/store"
)

var stores = map[string]func(t testing.TB) *store.Store{
	"file": func(t testing.TB) *store.Store { return openStore(t, "file://"+t.TempDir()) },
	"mem":  func(t testing.TB) *store.Store { return openStore(t, "mem://") },
}

func openStore(t testing.TB, url string) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// tree is a test fixture builder: path → content, with optional modes and symlinks.
type tree struct {
	files map[string]string
	modes map[string]os.FileMode
	links map[string]string
}

func (tr tree) build(t testing.TB, root string) {
	t.Helper()
	for name, body := range tr.files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if m, ok := tr.modes[name]; ok {
			mode = m
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	for name, target := range tr.links {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
}

// snapshot lists a tree: files as "mode content-hash", dirs as "dir mode", links as "-> target".
func snapshot(t testing.TB, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel == "." {
			return nil
		}
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			out[rel] = "-> " + l
		case fi.IsDir():
			out[rel+"/"] = "dir " + fi.Mode().Perm().String()
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = fi.Mode().Perm().String() + " " + short(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func short(b []byte) string {
	if len(b) <= 16 {
		return string(b)
	}
	h := sha256.Sum256(b)
	return fmt.Sprintf("%d:%x", len(b), h[:6])
}

func scanUpload(t testing.TB, st *store.Store, root, cache string, uo UploadOptions) (*Manifest, ManifestRef, UploadStats) {
	t.Helper()
	ctx := context.Background()
	m, err := Scan(ctx, root, Options{CacheDir: cache})
	if err != nil {
		t.Fatal(err)
	}
	if uo.CacheDir == "" {
		uo.CacheDir = cache
	}
	ref, stats, err := Upload(ctx, st, m, uo)
	if err != nil {
		t.Fatal(err)
	}
	return m, ref, stats
}

func checkMaterialize(t testing.TB, st *store.Store, ref ManifestRef, src string) {
	t.Helper()
	dst := t.TempDir()
	if err := Materialize(context.Background(), st, ref, dst); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(snapshot(t, src), snapshot(t, dst)); d != "" {
		t.Fatalf("materialised tree (-source +materialised):\n%s", d)
	}
}

func randBytes(r *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return string(b)
}

func TestRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			src := t.TempDir()
			tree{
				files: map[string]string{
					"main.py":             "print(1)\n",
					"run.sh":              "#!/bin/sh\n",
					"secret.cfg":          "k=v",
					"ro.txt":              "read only",
					"empty":               "",
					"pkg/__init__.py":     "",
					"pkg/mod.py":          "x = 1\n",
					"pkg/copy.py":         "x = 1\n", // same content as mod.py
					"pkg/sub/deep.py":     randBytes(r, 5000),
					"assets/big.bin":      randBytes(r, 3<<20), // a blob of its own
					"assets/big-copy.bin": "",
				},
				modes: map[string]os.FileMode{"run.sh": 0o755, "secret.cfg": 0o600, "ro.txt": 0o444},
				links: map[string]string{"link.py": "pkg/mod.py", "pkglink": "pkg", "pkg/sub/up": "../mod.py", "dangling": "nothere"},
			}.build(t, src)
			os.WriteFile(filepath.Join(src, "assets/big-copy.bin"), mustRead(t, filepath.Join(src, "assets/big.bin")), 0o640)
			os.Chmod(filepath.Join(src, "pkg/sub"), 0o750)
			st := open(t)
			m, ref, stats := scanUpload(t, st, src, "", UploadOptions{})
			if stats.Files != 11 || stats.UploadedObjects != 3 { // one pack, one blob, the manifest
				t.Errorf("stats = %+v, want 11 files and 3 objects", stats)
			}
			if len(m.Packs) != 1 {
				t.Errorf("packs = %v, want 1", m.Packs)
			}
			checkMaterialize(t, st, ref, src)

			// Materialising again over the same directory gives the same tree.
			dst := t.TempDir()
			for range 2 {
				if err := Materialize(context.Background(), st, ref, dst); err != nil {
					t.Fatal(err)
				}
			}
			if d := cmp.Diff(snapshot(t, src), snapshot(t, dst)); d != "" {
				t.Fatalf("materialised twice (-source +materialised):\n%s", d)
			}
		})
	}
}

func mustRead(t testing.TB, p string) []byte {
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestScanSymlinksLeavingTheTree(t *testing.T) {
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "shared.py"), []byte("shared"), 0o644)
	src := t.TempDir()
	tree{
		files: map[string]string{"a/b.py": "b"},
		links: map[string]string{
			"abs-inside":  filepath.Join(src, "a/b.py"),
			"file-out":    filepath.Join(outside, "shared.py"),
			"dir-out":     outside,
			"up-and-back": "../" + filepath.Base(src) + "/a/b.py",
		},
	}.build(t, src)
	m, err := Scan(context.Background(), src, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, e := range m.Entries {
		got[e.Path] = e.Type + " " + e.Target
	}
	want := map[string]string{
		"a":           "dir ",
		"a/b.py":      "file ",
		"abs-inside":  "symlink a/b.py",
		"up-and-back": "file ",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("entries (-want +got):\n%s", d)
	}
	// Links to what lies outside are never read: each is named in a note.
	if len(m.Notes) != 2 || !strings.Contains(strings.Join(m.Notes, "\n"), "dir-out") || !strings.Contains(strings.Join(m.Notes, "\n"), "file-out") {
		t.Errorf("notes = %q, want one naming dir-out and one naming file-out", m.Notes)
	}
}

func filePaths(m *Manifest) []string {
	var out []string
	for _, e := range m.Entries {
		if e.Type != TypeDir {
			out = append(out, e.Path)
		}
	}
	return out
}

func TestExcludes(t *testing.T) {
	files := map[string]string{
		"main.py":                 "",
		"README.md":               "",
		".git/HEAD":               "",
		"pkg/__pycache__/m.pyc":   "",
		"pkg/m.py":                "",
		".venv/bin/python":        "",
		"venv/x":                  "",
		"node_modules/a/i.js":     "",
		".tox/x":                  "",
		".mypy_cache/x":           "",
		".ruff_cache/x":           "",
		".pytest_cache/x":         "",
		"nb/.ipynb_checkpoints/x": "",
		"nb/.DS_Store":            "",
		"data/train.csv":          "",
		"data/keep.csv":           "",
		"logs/a.log":              "",
		"src/logs/b.log":          "",
		"build/out.o":             "",
		"build/keep.txt":          "",
		"src/build":               "", // a file named build
		"a1.tmp":                  "",
		"ab.tmp":                  "",
		"x(1).py":                 "",
		"deep/a/b/c.ckpt":         "",
	}
	for name, tc := range map[string]struct {
		ignore    string
		gitignore string
		opts      Options
		want      []string
	}{
		"defaults": {
			want: []string{"README.md", "a1.tmp", "ab.tmp", "build/keep.txt", "build/out.o", "data/keep.csv", "data/train.csv", "deep/a/b/c.ckpt", "logs/a.log", "main.py", "pkg/m.py", "src/build", "src/logs/b.log", "x(1).py"},
		},
		"no default excludes": {
			opts: Options{NoDefaultExcludes: true},
			want: []string{".mypy_cache/x", ".pytest_cache/x", ".ruff_cache/x", ".tox/x", ".venv/bin/python", "README.md", "a1.tmp", "ab.tmp", "build/keep.txt", "build/out.o", "data/keep.csv", "data/train.csv", "deep/a/b/c.ckpt", "logs/a.log", "main.py",
				"nb/.DS_Store", "nb/.ipynb_checkpoints/x", "node_modules/a/i.js", "pkg/m.py", "src/build", "src/logs/b.log", "venv/x", "x(1).py"},
		},
		// The tree travels whole (seed 001): what git ignores still ships; only
		// .kineticignore keeps things out.
		"gitignore not read": {
			gitignore: "build/\n*.tmp\ndata/\n",
			want:      []string{".gitignore", "README.md", "a1.tmp", "ab.tmp", "build/keep.txt", "build/out.o", "data/keep.csv", "data/train.csv", "deep/a/b/c.ckpt", "logs/a.log", "main.py", "pkg/m.py", "src/build", "src/logs/b.log", "x(1).py"},
		},
		"kineticignore": {
			ignore: strings.Join([]string{
				"# comment",
				"data/*",         // anchored, contents only
				"!data/keep.csv", // negation re-includes
				"logs/",          // directories named logs, anywhere
				"/build/*",
				"!/build/keep.txt",
				"?1.tmp", // ? is one character
				"x(1).py",
				"**/*.ckpt",
				"*.md   ",
			}, "\n"),
			want: []string{".kineticignore", "ab.tmp", "build/keep.txt", "data/keep.csv", "main.py", "pkg/m.py", "src/build"},
		},
		"dir-only pattern spares files": {
			ignore: "build/\n",
			want:   []string{".kineticignore", "README.md", "a1.tmp", "ab.tmp", "data/keep.csv", "data/train.csv", "deep/a/b/c.ckpt", "logs/a.log", "main.py", "pkg/m.py", "src/build", "src/logs/b.log", "x(1).py"},
		},
		"excluded dir cannot be re-included": {
			ignore: "data\n!data/keep.csv\n",
			want:   []string{".kineticignore", "README.md", "a1.tmp", "ab.tmp", "build/keep.txt", "build/out.o", "deep/a/b/c.ckpt", "logs/a.log", "main.py", "pkg/m.py", "src/build", "src/logs/b.log", "x(1).py"},
		},
		"skip": {
			opts: Options{Skip: []string{"data", "/logs/", "src/logs/b.log", "nothere"}},
			want: []string{"README.md", "a1.tmp", "ab.tmp", "build/keep.txt", "build/out.o", "deep/a/b/c.ckpt", "main.py", "pkg/m.py", "src/build", "x(1).py"},
		},
		"explicit excludes": {
			opts: Options{Excludes: []string{"build", "data"}},
			want: []string{".mypy_cache/x", ".pytest_cache/x", ".ruff_cache/x", ".tox/x", ".venv/bin/python", "README.md", "a1.tmp", "ab.tmp", "deep/a/b/c.ckpt", "logs/a.log", "main.py",
				"nb/.DS_Store", "nb/.ipynb_checkpoints/x", "node_modules/a/i.js", "pkg/m.py", "src/logs/b.log", "venv/x", "x(1).py"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			src := t.TempDir()
			tree{files: files}.build(t, src)
			if tc.ignore != "" {
				os.WriteFile(filepath.Join(src, IgnoreFile), []byte(tc.ignore), 0o644)
			}
			if tc.gitignore != "" {
				os.WriteFile(filepath.Join(src, ".gitignore"), []byte(tc.gitignore), 0o644)
			}
			m, err := Scan(context.Background(), src, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, filePaths(m)); d != "" {
				t.Errorf("shipped (-want +got):\n%s", d)
			}
			// Archive ships the same files.
			var buf bytes.Buffer
			st, err := Archive(context.Background(), src, &buf, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if st.Files != len(tc.want) {
				t.Errorf("Archive shipped %d files, Scan %d", st.Files, len(tc.want))
			}
		})
	}
}

func TestBadIgnoreFileIsAnError(t *testing.T) {
	src := t.TempDir()
	os.WriteFile(filepath.Join(src, IgnoreFile), []byte("ok\n[z-a]\n"), 0o644)
	if _, err := Scan(context.Background(), src, Options{}); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("Scan = %v, want an error naming line 2", err)
	}
}

func TestSkipPaths(t *testing.T) {
	got := SkipPaths("/p/root", "/p/root/sub", []string{"data", "/p/root/x/y", "/elsewhere", "../../outside", "/p/root"})
	if d := cmp.Diff([]string{"sub/data", "x/y"}, got); d != "" {
		t.Error(d)
	}
}

// smallTree writes n small files and one large one.
func smallTree(t testing.TB, root string, n int) {
	r := rand.New(rand.NewPCG(3, 4))
	files := map[string]string{"weights.bin": randBytes(r, 2<<20)}
	for i := range n {
		files[fmt.Sprintf("src/m%03d/f%03d.py", i/50, i)] = randBytes(r, 200+r.IntN(3000))
	}
	tree{files: files}.build(t, root)
}

func TestIncrementalUpload(t *testing.T) {
	for name, open := range stores {
		for _, withCache := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/cache=%v", name, withCache), func(t *testing.T) {
				st := open(t)
				src := t.TempDir()
				smallTree(t, src, 500)
				cache := ""
				if withCache {
					cache = t.TempDir()
				}
				// Small packs, so the tree spans several and an edit must not re-upload them all.
				uo := UploadOptions{PackSize: 64 << 10}
				m1, ref1, s1 := scanUpload(t, st, src, cache, uo)
				if s1.Files != 501 || s1.ReusedFiles != 0 || s1.UploadedBytes < s1.Bytes {
					t.Fatalf("first upload: %+v", s1)
				}
				if len(m1.Packs) < 5 {
					t.Fatalf("first upload made %d packs, want several", len(m1.Packs))
				}
				checkMaterialize(t, st, ref1, src)

				_, ref2, s2 := scanUpload(t, st, src, cache, uo)
				if s2.UploadedBytes != 0 || s2.UploadedObjects != 0 || s2.ReusedFiles != 501 || ref2 != ref1 {
					t.Fatalf("unchanged tree: %+v, ref %v (first %v)", s2, ref2, ref1)
				}

				// One small file changes.
				edited := "x = 'edited'\n"
				os.WriteFile(filepath.Join(src, "src/m004/f217.py"), []byte(edited), 0o644)
				_, ref3, s3 := scanUpload(t, st, src, cache, uo)
				if withCache {
					if want := int64(len(edited)) + ref3.Size; s3.UploadedObjects != 2 || s3.UploadedBytes != want {
						t.Errorf("one small file changed: %+v, want 2 objects of %d bytes", s3, want)
					}
				} else if s3.UploadedBytes > 4*4*(64<<10)+ref3.Size {
					t.Errorf("one small file changed, no index: uploaded %d bytes, want a few packs at most", s3.UploadedBytes)
				}
				if s3.ReusedFiles != 500 && withCache {
					t.Errorf("reused %d files, want 500", s3.ReusedFiles)
				}
				checkMaterialize(t, st, ref3, src)

				// The large file changes.
				r := rand.New(rand.NewPCG(5, 6))
				os.WriteFile(filepath.Join(src, "weights.bin"), []byte(randBytes(r, 2<<20)), 0o644)
				_, ref4, s4 := scanUpload(t, st, src, cache, uo)
				if want := int64(2<<20) + ref4.Size; s4.UploadedObjects != 2 || s4.UploadedBytes != want {
					t.Errorf("large file changed: %+v, want 2 objects of %d bytes", s4, want)
				}
				checkMaterialize(t, st, ref4, src)
				// The first manifest still materialises: nothing it needs went away.
				os.WriteFile(filepath.Join(src, "src/m004/f217.py"), []byte(randBytes(rand.New(rand.NewPCG(3, 4)), 1)), 0o644)
				if err := Materialize(context.Background(), st, ref1, t.TempDir()); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

func TestPackIndexNeverTrustedWithoutTheStore(t *testing.T) {
	src := t.TempDir()
	smallTree(t, src, 50)
	cache := t.TempDir()
	a := openStore(t, "mem://")
	scanUpload(t, a, src, cache, UploadOptions{})
	os.WriteFile(filepath.Join(src, "src/m000/f001.py"), []byte("changed"), 0o644)
	scanUpload(t, a, src, cache, UploadOptions{})
	// A second, empty store with the same URL: the index points at packs it lacks.
	b := openStore(t, "mem://")
	_, ref, stats := scanUpload(t, b, src, cache, UploadOptions{})
	if stats.ReusedFiles != 0 {
		t.Errorf("reused %d files from a store that holds nothing", stats.ReusedFiles)
	}
	checkMaterialize(t, b, ref, src)
}

func TestStaleIndexPackIsRepacked(t *testing.T) {
	src := t.TempDir()
	smallTree(t, src, 100)
	cache := t.TempDir()
	dir := t.TempDir()
	st := openStore(t, "file://"+dir)
	m, _, _ := scanUpload(t, st, src, cache, UploadOptions{})
	for _, p := range m.Packs { // someone cleans the store
		if err := st.Delete(context.Background(), store.BlobKey(p.SHA256)); err != nil {
			t.Fatal(err)
		}
	}
	_, ref, stats := scanUpload(t, st, src, cache, UploadOptions{})
	if stats.ReusedFiles != 1 { // only the large blob is still there
		t.Errorf("reused %d files, want 1", stats.ReusedFiles)
	}
	checkMaterialize(t, st, ref, src)
}

func TestHashCache(t *testing.T) {
	src := t.TempDir()
	smallTree(t, src, 40)
	past := time.Now().Add(-time.Hour)
	filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		return os.Chtimes(p, past, past)
	})
	cache := t.TempDir()
	ctx := context.Background()
	m1, err := Scan(ctx, src, Options{CacheDir: cache})
	if err != nil {
		t.Fatal(err)
	}
	if m1.Scan.HashedFiles != 41 {
		t.Fatalf("first scan hashed %d files, want 41", m1.Scan.HashedFiles)
	}
	m2, err := Scan(ctx, src, Options{CacheDir: cache})
	if err != nil {
		t.Fatal(err)
	}
	if m2.Scan.HashedFiles != 0 {
		t.Fatalf("unchanged scan hashed %d files, want 0", m2.Scan.HashedFiles)
	}
	if d := cmp.Diff(m1.Entries, m2.Entries); d != "" {
		t.Fatalf("cached scan differs:\n%s", d)
	}
	// Same size, new content: the mtime moves, so it is hashed again.
	p := filepath.Join(src, "src/m000/f003.py")
	b := mustRead(t, p)
	b[0] ^= 0xff
	os.WriteFile(p, b, 0o644)
	m3, err := Scan(ctx, src, Options{CacheDir: cache})
	if err != nil {
		t.Fatal(err)
	}
	if m3.Scan.HashedFiles != 1 {
		t.Errorf("one edit: hashed %d files, want 1", m3.Scan.HashedFiles)
	}
	h := sha256.Sum256(b)
	for _, e := range m3.Entries {
		if e.Path == "src/m000/f003.py" && e.SHA256 != hex.EncodeToString(h[:]) {
			t.Errorf("edited file has the old hash")
		}
	}
	// A just-written file is racily clean: it is hashed again next time.
	m4, _ := Scan(ctx, src, Options{CacheDir: cache})
	if m4.Scan.HashedFiles != 1 {
		t.Errorf("after a fresh edit: hashed %d files, want 1 (racily clean)", m4.Scan.HashedFiles)
	}
	// A corrupt cache is ignored.
	matches, _ := filepath.Glob(filepath.Join(cache, "hashes-*.json"))
	for _, f := range matches {
		os.WriteFile(f, []byte("{garbage"), 0o644)
	}
	m5, err := Scan(ctx, src, Options{CacheDir: cache})
	if err != nil || m5.Scan.HashedFiles != 41 {
		t.Errorf("corrupt cache: %v, hashed %d", err, m5.Scan.HashedFiles)
	}
}

func TestCorruptionNamesTheFile(t *testing.T) {
	for name, tc := range map[string]struct {
		file    string
		corrupt func(m *Manifest) string // returns the key to corrupt
	}{
		"pack": {"src/m000/f000.py", func(m *Manifest) string { return store.BlobKey(m.Packs[0].SHA256) }},
		"blob": {"weights.bin", func(m *Manifest) string {
			for _, e := range m.Entries {
				if e.Path == "weights.bin" {
					return store.BlobKey(e.SHA256)
				}
			}
			return ""
		}},
	} {
		t.Run(name, func(t *testing.T) {
			src := t.TempDir()
			smallTree(t, src, 10)
			dir := t.TempDir()
			st := openStore(t, "file://"+dir)
			m, ref, _ := scanUpload(t, st, src, "", UploadOptions{})
			p := filepath.Join(dir, filepath.FromSlash(tc.corrupt(m)))
			b := mustRead(t, p)
			b[0] ^= 1
			os.WriteFile(p, b, 0o644)
			dst := t.TempDir()
			err := Materialize(context.Background(), st, ref, dst)
			if err == nil || !strings.Contains(err.Error(), tc.file) || !strings.Contains(err.Error(), "SHA-256") {
				t.Fatalf("Materialize = %v, want a hash error naming %s", err, tc.file)
			}
			if _, err := os.Stat(filepath.Join(dst, tc.file)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the corrupt file was written: %v", err)
			}
		})
	}
}

func TestFileChangedDuringUpload(t *testing.T) {
	for _, name := range []string{"src/m000/f000.py", "weights.bin"} {
		src := t.TempDir()
		smallTree(t, src, 10)
		st := openStore(t, "mem://")
		m, err := Scan(context.Background(), src, Options{})
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(src, name), []byte("changed behind our back"), 0o644)
		if _, _, err := Upload(context.Background(), st, m, UploadOptions{}); !errors.Is(err, ErrFileChanged) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: Upload = %v, want ErrFileChanged naming it", name, err)
		}
		objs, _ := st.List(context.Background(), "blobs/")
		for _, o := range objs {
			// The changed file's content (23 bytes), or weights.bin's 2 MiB when that is
			// the changed one: other files may be stored before the change is seen.
			if o.Size == 23 || (name == "weights.bin" && o.Size == 2<<20) {
				t.Errorf("%s: an object of the changed file was stored: %v", name, o)
			}
		}
	}
}

func TestProgress(t *testing.T) {
	src := t.TempDir()
	smallTree(t, src, 100)
	var calls [][2]int64
	scanUpload(t, openStore(t, "mem://"), src, "", UploadOptions{Progress: func(done, total int64) {
		calls = append(calls, [2]int64{done, total})
	}})
	if len(calls) < 2 {
		t.Fatalf("%d progress calls", len(calls))
	}
	last := calls[len(calls)-1]
	if last[0] != last[1] || last[1] < 2<<20 {
		t.Errorf("last progress %v, want done == total >= 2 MiB", last)
	}
	if !sort.SliceIsSorted(calls, func(i, j int) bool { return calls[i][0] < calls[j][0] }) {
		t.Error("progress went backwards")
	}
}

func TestSecretWarning(t *testing.T) {
	src := t.TempDir()
	tree{files: map[string]string{"main.py": "", ".env": "K=v", ".env.local": "", "certs/server.pem": "", "keys/id_rsa.pub": "", "environment.py": "", "pem.txt": ""}}.build(t, src)
	m, err := Scan(context.Background(), src, Options{})
	if err != nil {
		t.Fatal(err)
	}
	w := SecretWarning(m)
	for _, want := range []string{".env, .env.local, certs/server.pem, keys/id_rsa.pub", IgnoreFile} {
		if !strings.Contains(w, want) {
			t.Errorf("warning %q: want it to name %q", w, want)
		}
	}
	if strings.Contains(w, "environment.py") || strings.Contains(w, "pem.txt") {
		t.Errorf("warning %q names a file that is not credential-shaped", w)
	}
	os.WriteFile(filepath.Join(src, IgnoreFile), []byte(".env*\n*.pem\nid_rsa*\n"), 0o644)
	if m, err = Scan(context.Background(), src, Options{}); err != nil {
		t.Fatal(err)
	}
	if w := SecretWarning(m); w != "" {
		t.Errorf("with them ignored: %q, want no warning", w)
	}
}

func TestSizeWarning(t *testing.T) {
	m := &Manifest{Root: "/p", Entries: []Entry{
		{Path: "a.py", Type: TypeFile, Size: 10},
		{Path: "data", Type: TypeDir},
		{Path: "data/x", Type: TypeFile, Size: 300 << 20},
		{Path: "data/y", Type: TypeFile, Size: 100 << 20},
		{Path: "model.bin", Type: TypeFile, Size: 50 << 20},
	}}
	want := []SizeEntry{{"data/", 400 << 20, 2}, {"model.bin", 50 << 20, 1}}
	if d := cmp.Diff(want, m.LargestEntries(2)); d != "" {
		t.Error(d)
	}
	w := SizeWarning(m, DefaultWarnBytes)
	for _, s := range []string{"450.0 MiB", "data/", "model.bin", IgnoreFile, "Data(", EnvSizeWarnMB} {
		if !strings.Contains(w, s) {
			t.Errorf("warning lacks %q:\n%s", s, w)
		}
	}
	if w := SizeWarning(m, 500<<20); w != "" {
		t.Errorf("under the threshold: %q", w)
	}
}
