package data

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gocloud.dev/blob"
	_ "gocloud.dev/blob/fileblob"

	"github.com/kinetic-run/kinetic/testkit/gcstest"
)

// fileGCS stands a directory in for gs://<bucket>: the open hook maps the bucket URL to
// a fileblob bucket over dir.
func fileGCS(t *testing.T, bucket string, objects map[string]string) OpenBucket {
	t.Helper()
	dir := t.TempDir()
	buildTree(t, dir, objects)
	return func(ctx context.Context, u string) (*blob.Bucket, error) {
		if u != "gs://"+bucket {
			t.Errorf("opened %q, want gs://%s", u, bucket)
		}
		return blob.OpenBucket(ctx, "file://"+dir+"?metadata=skip")
	}
}

var gcsObjects = map[string]string{
	"datasets/imdb/train/part-0.parquet": "p0",
	"datasets/imdb/train/part-1.parquet": "p1",
	"datasets/imdb/README.md":            "imdb",
	"datasets/imdb-other/x":              "not under imdb/",
	"weights/model.h5":                   "weights",
}

func TestMaterializeGCS(t *testing.T) {
	ctx := context.Background()
	open := fileGCS(t, "my-bucket", gcsObjects)

	ref, err := Parse("gs://my-bucket/datasets/imdb/", true, false)
	if err != nil || ref.Kind != GSDir {
		t.Fatalf("%+v %v", ref, err)
	}
	dest := filepath.Join(t.TempDir(), "data")
	p, err := Materialize(ctx, nil, ref, dest, open)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"train/part-0.parquet": "p0", "train/part-1.parquet": "p1", "README.md": "imdb"}
	if diff := cmp.Diff(want, readTree(t, p)); p != dest || diff != "" {
		t.Errorf("gs-dir at %s (-want +got):\n%s", p, diff)
	}

	ref, err = Parse("gs://my-bucket/weights/model.h5", false, false)
	if err != nil || ref.Kind != GSObject {
		t.Fatalf("%+v %v", ref, err)
	}
	dest = t.TempDir()
	p, err = Materialize(ctx, nil, ref, dest, open)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); p != filepath.Join(dest, "model.h5") || string(b) != "weights" {
		t.Errorf("gs-object at %s = %q", p, b)
	}

	// A directory named without its slash is a missing object: the message says so.
	ref, _ = Parse("gs://my-bucket/datasets/imdb", false, false)
	if _, err := Materialize(ctx, nil, ref, t.TempDir(), open); err == nil || !strings.Contains(err.Error(), "end the URI with a slash") {
		t.Errorf("missing object: %v", err)
	}
	ref, _ = Parse("gs://my-bucket/nothing/", false, false)
	if _, err := Materialize(ctx, nil, ref, t.TempDir(), open); err == nil || !strings.Contains(err.Error(), "no objects under") {
		t.Errorf("empty prefix: %v", err)
	}
	// The whole bucket.
	ref, _ = Parse("gs://my-bucket", false, false)
	if ref.Kind != GSDir || ref.URI != "gs://my-bucket/" {
		t.Fatalf("whole bucket: %+v", ref)
	}
	p, err = Materialize(ctx, nil, ref, t.TempDir(), open)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(gcsObjects, readTree(t, p)); diff != "" {
		t.Errorf("whole bucket (-want +got):\n%s", diff)
	}
}

func TestMaterializeGCSEmulator(t *testing.T) {
	srv := gcstest.Start(t)
	bucket := srv.NewBucket(t)
	t.Setenv("STORAGE_EMULATOR_HOST", srv.Endpoint())
	ctx := context.Background()
	b, err := blob.OpenBucket(ctx, "gs://"+bucket)
	if err != nil {
		t.Fatal(err)
	}
	objs := map[string]string{
		"ds/":           "", // a folder placeholder, as the console makes
		"ds/a.txt":      "A",
		"ds/sub/b.txt":  "B",
		"ds/sub/empty/": "",
		"one/obj.bin":   "O",
	}
	for k, v := range objs {
		if err := b.WriteAll(ctx, k, []byte(v), nil); err != nil {
			t.Fatal(err)
		}
	}
	b.Close()

	ref, _ := Parse("gs://"+bucket+"/ds/", false, false)
	p, err := Materialize(ctx, nil, ref, t.TempDir(), nil) // the default opener
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"a.txt": "A", "sub/b.txt": "B"}, readTree(t, p)); diff != "" {
		t.Errorf("gs-dir (-want +got):\n%s", diff)
	}
	ref, _ = Parse("gs://"+bucket+"/one/obj.bin", false, false)
	p, err = Materialize(ctx, nil, ref, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); filepath.Base(p) != "obj.bin" || string(b) != "O" {
		t.Errorf("gs-object %s = %q", p, b)
	}
}

func TestMaterializeHFWithoutDatasets(t *testing.T) {
	ref, err := Parse("hf://imdb?split=train", false, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := exec0("python3", "-c", "import datasets"); err == nil {
		t.Skip("this machine's python3 has datasets; the error path cannot be exercised")
	}
	_, err = MaterializeHF(context.Background(), ref, t.TempDir(), "python3")
	if !errors.Is(err, ErrNoDatasets) || !strings.Contains(err.Error(), "add `datasets` to the job's requirements.txt") {
		t.Fatalf("got %v", err)
	}
	if _, err := Materialize(context.Background(), nil, ref, t.TempDir(), nil); !errors.Is(err, ErrNoDatasets) {
		t.Fatalf("Materialize: %v", err)
	}
	_, err = MaterializeHF(context.Background(), ref, t.TempDir(), filepath.Join(t.TempDir(), "no-python"))
	if err == nil || !strings.Contains(err.Error(), "KINETIC_PYTHON") {
		t.Fatalf("missing python: %v", err)
	}
}

// TestMaterializeHFScript runs the download script against a stand-in datasets module,
// to check the arguments load_dataset and save_to_disk receive.
func TestMaterializeHFScript(t *testing.T) {
	mod := t.TempDir()
	os.WriteFile(filepath.Join(mod, "datasets.py"), []byte(`
import json, os
def load_dataset(path, name=None, split=None, revision=None, trust_remote_code=None):
    return DS(dict(path=path, name=name, split=split, revision=revision, trust_remote_code=trust_remote_code))
class DS:
    def __init__(self, args): self.args = args
    def save_to_disk(self, dest):
        os.makedirs(dest, exist_ok=True)
        with open(os.path.join(dest, "args.json"), "w") as f: json.dump(self.args, f, sort_keys=True)
`), 0o644)
	t.Setenv("PYTHONPATH", mod)
	for _, tc := range []struct{ uri, want string }{
		{"hf://imdb?split=train", `{"name": null, "path": "imdb", "revision": null, "split": "train", "trust_remote_code": true}`},
		{"hf://owner/repo?config_name=en&revision=v1.0&split=train[:10%]", `{"name": "en", "path": "owner/repo", "revision": "v1.0", "split": "train[:10%]", "trust_remote_code": true}`},
	} {
		ref, err := Parse(tc.uri, false, true)
		if err != nil {
			t.Fatal(err)
		}
		dest := t.TempDir()
		p, err := MaterializeHF(context.Background(), ref, dest, "python3")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(filepath.Join(p, "args.json"))
		if string(b) != tc.want {
			t.Errorf("%s: load_dataset got %s, want %s", tc.uri, b, tc.want)
		}
	}
}

func TestLocalPath(t *testing.T) {
	dir := t.TempDir()
	ref, _ := Parse(dir, true, false)
	if p, ok := LocalPath(ref); !ok || p != dir {
		t.Errorf("fuse local: %q %v", p, ok)
	}
	ref, _ = Parse(dir, false, false)
	if _, ok := LocalPath(ref); ok {
		t.Error("non-fuse local used in place")
	}
	ref, _ = Parse("gs://b-x/d/", true, false)
	if _, ok := LocalPath(ref); ok {
		t.Error("gs used in place")
	}
}

func exec0(name string, args ...string) error { return exec.Command(name, args...).Run() }
