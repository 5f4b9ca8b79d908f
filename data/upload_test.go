package data

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kinetic-run/kinetic/store"
)

func openStore(t *testing.T, url string) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// fileState maps every file of a file:// store to its inode and modification time: a
// rewritten object gets a new inode (writes are renames).
func fileState(t *testing.T, dir string) map[string][2]int64 {
	t.Helper()
	m := map[string][2]int64{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		m[p] = [2]int64{int64(fi.Sys().(*syscall.Stat_t).Ino), fi.ModTime().UnixNano()}
		return nil
	})
	return m
}

// readTree returns relative path → content of every file under root.
func readTree(t *testing.T, root string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		m[filepath.ToSlash(rel)] = string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

var sampleTree = map[string]string{
	"train/a.csv":     "1,2,3\n",
	"train/b.csv":     "4,5,6\n",
	"test/deep/c.csv": "7,8,9\n",
	"README":          "readme",
	".complete":       "a user file with the marker's name",
	"empty":           "",
}

func TestUploadOnceAndMaterialize(t *testing.T) {
	for _, kind := range []string{"file", "mem"} {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			storeDir := t.TempDir()
			url := "file://" + storeDir
			if kind == "mem" {
				url = "mem://"
			}
			st := openStore(t, url)
			src := buildTree(t, t.TempDir(), sampleTree)
			ref, err := Parse(src, false, false)
			if err != nil {
				t.Fatal(err)
			}
			var last, total int64
			if err := Upload(ctx, st, &ref, func(d, tot int64) { last, total = d, tot }); err != nil {
				t.Fatal(err)
			}
			want, _ := ContentHash(src)
			if ref.Hash != want || ref.Prefix != "data/sha256/"+want+"/" {
				t.Fatalf("ref = %+v, want hash %s", ref, want)
			}
			if last != total || total != 6+6+6+6+int64(len(sampleTree[".complete"])) {
				t.Errorf("progress ended at %d of %d", last, total)
			}
			if err := Validate(ref); err != nil {
				t.Fatal(err)
			}
			objs, _ := st.List(ctx, ref.Prefix)
			if len(objs) != len(sampleTree)+1 {
				t.Fatalf("%d objects, want %d files + marker: %+v", len(objs), len(sampleTree), objs)
			}

			// The second upload writes nothing.
			var before map[string][2]int64
			if kind == "file" {
				before = fileState(t, storeDir)
			}
			ref2, _ := Parse(src, false, false)
			if err := Upload(ctx, st, &ref2, nil); err != nil {
				t.Fatal(err)
			}
			if ref2.Hash != ref.Hash {
				t.Fatal("hash changed between uploads")
			}
			if objs2, _ := st.List(ctx, ref.Prefix); len(objs2) != len(objs) {
				t.Errorf("second upload: %d objects, then %d", len(objs), len(objs2))
			}
			if kind == "file" {
				if diff := cmp.Diff(before, fileState(t, storeDir)); diff != "" {
					t.Errorf("second upload rewrote objects (-before +after):\n%s", diff)
				}
			}

			// Round trip.
			dest := filepath.Join(t.TempDir(), "mnt", "data")
			p, err := Materialize(ctx, st, ref, dest, nil)
			if err != nil {
				t.Fatal(err)
			}
			if p != dest {
				t.Errorf("path %s, want %s", p, dest)
			}
			if diff := cmp.Diff(sampleTree, readTree(t, dest)); diff != "" {
				t.Errorf("materialised tree (-want +got):\n%s", diff)
			}
			if h, _ := ContentHash(dest); h != ref.Hash {
				t.Errorf("materialised tree hashes to %s, want %s", h, ref.Hash)
			}
		})
	}
}

func TestUploadSingleFile(t *testing.T) {
	ctx := context.Background()
	st := openStore(t, "mem://")
	f := filepath.Join(t.TempDir(), "weights.h5")
	os.WriteFile(f, []byte("weights"), 0o600)
	ref, err := Parse(f, false, false)
	if err != nil || ref.Kind != LocalFile {
		t.Fatalf("%+v %v", ref, err)
	}
	if err := Upload(ctx, st, &ref, nil); err != nil {
		t.Fatal(err)
	}
	objs, _ := st.List(ctx, ref.Prefix)
	keys := []string{}
	for _, o := range objs {
		keys = append(keys, strings.TrimPrefix(o.Key, ref.Prefix))
	}
	if diff := cmp.Diff([]string{".complete", "files/weights.h5"}, keys); diff != "" {
		t.Errorf("keys (-want +got):\n%s", diff)
	}
	dest := t.TempDir()
	p, err := Materialize(ctx, st, ref, dest, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); p != filepath.Join(dest, "weights.h5") || string(b) != "weights" {
		t.Errorf("materialised %s = %q", p, b)
	}
}

func TestCrashedUploadIsRedoneAndNeverMaterialised(t *testing.T) {
	ctx := context.Background()
	storeDir := t.TempDir()
	st := openStore(t, "file://"+storeDir)
	src := buildTree(t, t.TempDir(), sampleTree)
	ref, _ := Parse(src, false, false)
	if err := Upload(ctx, st, &ref, nil); err != nil {
		t.Fatal(err)
	}
	// A crash: some files written, no marker.
	st.Delete(ctx, MarkerKey(ref.Hash))
	st.Delete(ctx, FilesPrefix(ref.Hash)+"train/a.csv")

	_, err := Materialize(ctx, st, ref, t.TempDir(), nil)
	if !errors.Is(err, ErrIncomplete) {
		t.Fatalf("materialise without marker: %v, want ErrIncomplete", err)
	}
	kept := fileState(t, filepath.Join(storeDir, "data", "sha256", ref.Hash, "files", "test"))

	ref2, _ := Parse(src, false, false)
	if err := Upload(ctx, st, &ref2, nil); err != nil {
		t.Fatal(err)
	}
	if ok, _ := st.Exists(ctx, MarkerKey(ref.Hash)); !ok {
		t.Fatal("the redone upload wrote no marker")
	}
	if diff := cmp.Diff(kept, fileState(t, filepath.Join(storeDir, "data", "sha256", ref.Hash, "files", "test"))); diff != "" {
		t.Errorf("files the crashed upload had written were rewritten:\n%s", diff)
	}
	dest := t.TempDir()
	if _, err := Materialize(ctx, st, ref2, dest, nil); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(sampleTree, readTree(t, dest)); diff != "" {
		t.Errorf("materialised tree (-want +got):\n%s", diff)
	}
}

func TestMaterializeRefusesTamperedStore(t *testing.T) {
	ctx := context.Background()
	st := openStore(t, "mem://")
	src := buildTree(t, t.TempDir(), map[string]string{"a": "A", "b/c": "C"})
	ref, _ := Parse(src, false, false)
	if err := Upload(ctx, st, &ref, nil); err != nil {
		t.Fatal(err)
	}
	// A changed file.
	st.Put(ctx, FilesPrefix(ref.Hash)+"b/c", []byte("X"))
	if _, err := Materialize(ctx, st, ref, t.TempDir(), nil); err == nil || !strings.Contains(err.Error(), "does not match its digest") {
		t.Errorf("changed object: %v", err)
	}
	// A marker naming a path outside dest.
	evil := `{"version":1,"kind":"local-dir","hash":"` + ref.Hash + `","files":[{"path":"../evil","size":1,"digest":"` + strings.Repeat("00", 32) + `"}]}`
	st.Put(ctx, MarkerKey(ref.Hash), []byte(evil))
	dest := filepath.Join(t.TempDir(), "d")
	if _, err := Materialize(ctx, st, ref, dest, nil); err == nil || !strings.Contains(err.Error(), "not a clean relative path") {
		t.Errorf("marker with ../evil: %v", err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(dest), "evil")); err == nil {
		t.Error("a file was written outside dest")
	}
	// A marker that does not hash to ref.Hash.
	other := `{"version":1,"kind":"local-dir","hash":"` + ref.Hash + `","files":[{"path":"a","size":1,"digest":"` + strings.Repeat("11", 32) + `"}]}`
	st.Put(ctx, MarkerKey(ref.Hash), []byte(other))
	if _, err := Materialize(ctx, st, ref, t.TempDir(), nil); err == nil || !strings.Contains(err.Error(), "the store was changed") {
		t.Errorf("forged marker: %v", err)
	}
}

func TestVerifyingReaderCatchesChange(t *testing.T) {
	e := &fileEntry{rel: "f"}
	dir := t.TempDir()
	e.abs = filepath.Join(dir, "f")
	os.WriteFile(e.abs, []byte("before"), 0o644)
	if err := hashFile(context.Background(), newSHA(), e, make([]byte, 4)); err != nil {
		t.Fatal(err)
	}
	h := newSHA()
	newFileHash(h, "f")
	r := &verifyingReader{r: strings.NewReader("after!"), h: h, want: e.sum, size: e.size, name: e.abs}
	if _, err := io.ReadAll(r); err == nil || !strings.Contains(err.Error(), "changed while it was being uploaded") {
		t.Fatalf("changed content: %v", err)
	}
	h = newSHA()
	newFileHash(h, "f")
	r = &verifyingReader{r: strings.NewReader("before"), h: h, want: e.sum, size: e.size, name: e.abs}
	if _, err := io.ReadAll(r); err != nil {
		t.Fatalf("same content: %v", err)
	}
}

func TestUploadNonLocalIsNoop(t *testing.T) {
	st := openStore(t, "mem://")
	ref, _ := Parse("gs://bucket/x/", false, false)
	if err := Upload(context.Background(), st, &ref, nil); err != nil || ref.Hash != "" {
		t.Fatalf("%+v %v", ref, err)
	}
}
