package data

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "config.json")
	os.WriteFile(file, []byte("{}"), 0o644)
	t.Chdir(dir)

	ok := []struct {
		name          string
		path          string
		fuse, hfTrust bool
		want          Ref
	}{
		{"relative dir", ".", false, false, Ref{Kind: LocalDir, Source: ".", Path: dir}},
		{"relative file", "./config.json", false, false, Ref{Kind: LocalFile, Source: "./config.json", Path: file}},
		{"fuse local", file, true, false, Ref{Kind: LocalFile, Source: file, Path: file, Fuse: true}},
		{"gs dir", "gs://my-bucket/datasets/imagenet/", false, false, Ref{Kind: GSDir, Source: "gs://my-bucket/datasets/imagenet/", URI: "gs://my-bucket/datasets/imagenet/"}},
		{"gs object", "gs://my-bucket/datasets/weights.h5", true, false, Ref{Kind: GSObject, Source: "gs://my-bucket/datasets/weights.h5", URI: "gs://my-bucket/datasets/weights.h5", Fuse: true}},
		{"gs bucket", "gs://my-bucket/", false, false, Ref{Kind: GSDir, Source: "gs://my-bucket/", URI: "gs://my-bucket/"}},
		{"hf", "hf://imdb?split=train", false, false, Ref{Kind: HF, Source: "hf://imdb?split=train", URI: "hf://imdb?split=train"}},
		{"hf all params, canonical order", "hf://custom/repo?revision=main&config_name=en&split=train+test", false, true,
			Ref{Kind: HF, Source: "hf://custom/repo?revision=main&config_name=en&split=train+test", URI: "hf://custom/repo?split=train+test&config_name=en&revision=main", HFTrustRemoteCode: true}},
	}
	for _, tc := range ok {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(tc.path, tc.fuse, tc.hfTrust)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			// JSON round trip (the ref travels in the job spec).
			b, _ := json.Marshal(got)
			var back Ref
			if err := json.Unmarshal(b, &back); err != nil || !cmp.Equal(got, back) {
				t.Errorf("JSON round trip: %s -> %+v (%v)", b, back, err)
			}
		})
	}

	bad := []struct {
		name, path    string
		fuse, hfTrust bool
		msg           string
	}{
		{"empty", "", false, false, "the path is empty"},
		{"missing", "./nope", false, false, filepath.Join(dir, "nope") + " does not exist"},
		{"gs no bucket", "gs://", false, false, "no bucket"},
		{"gs no bucket slash", "gs:///x", false, false, "no bucket"},
		{"gs bad bucket", "gs://UPPER/x", false, false, "not a valid bucket name"},
		{"gs dotdot", "gs://b-b/a/../x", false, false, "'..'"},
		{"gs double slash", "gs://b-b/a//x", false, false, "empty"},
		{"hf fuse", "hf://imdb", true, false, "cannot be FUSE-mounted"},
		{"hf unknown param", "hf://imdb?subset=x", false, false, `unknown parameter "subset"`},
		{"hf empty split", "hf://imdb?split=", false, false, "split is empty"},
		{"hf twice", "hf://imdb?split=a&split=b", false, false, "more than once"},
		{"hf no repo", "hf://?split=train", false, false, "hf://NAME"},
		{"hf too deep", "hf://a/b/c", false, false, "hf://NAME"},
		{"hf bad split", "hf://imdb?split=tr ain", false, false, "not allowed"},
		{"hf not kv", "hf://imdb?train", false, false, "not key=value"},
		{"trust without hf", "gs://b-b/x", false, true, "applies only to hf://"},
		{"other scheme", "s3://b/x", false, false, `unsupported scheme "s3"`},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.path, tc.fuse, tc.hfTrust)
			if err == nil || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("Parse(%q) = %v, want an error containing %q", tc.path, err, tc.msg)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	h := strings.Repeat("ab", 32)
	good := []Ref{
		{Kind: LocalDir, Hash: h, Prefix: Prefix(h), Mount: "/data"},
		{Kind: GSDir, URI: "gs://b-b/x/", Fuse: true},
		{Kind: HF, URI: "hf://imdb?split=train"},
	}
	for _, r := range good {
		if err := Validate(r); err != nil {
			t.Errorf("%+v: %v", r, err)
		}
	}
	bad := []Ref{
		{Kind: LocalDir, Hash: "nothex"},
		{Kind: LocalDir, Hash: h, Prefix: "data/sha256/other/"},
		{Kind: LocalFile, Hash: h, Mount: "relative"},
		{Kind: LocalFile, Hash: h, Mount: "/"},
		{Kind: LocalFile, Hash: h, Mount: "/a/../b"},
		{Kind: GSDir, URI: "gs://b-b/x"},
		{Kind: HF, URI: "hf://imdb", Fuse: true},
		{Kind: "nfs"},
	}
	for _, r := range bad {
		if err := Validate(r); err == nil {
			t.Errorf("%+v: no error", r)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"gs://b/x/", "gs://b/x", "gs://", "hf://imdb?split=train", "hf://a/b?config_name=c&revision=r",
		"hf://?", "s3://x", ".", "/nonexistent", "gs://b//", "hf://x?split=train[:10%]"} {
		f.Add(s, false, false)
	}
	f.Fuzz(func(t *testing.T, p string, fuse, trust bool) {
		r, err := Parse(p, fuse, trust)
		if err != nil {
			return
		}
		if r.Kind == HF && r.Fuse {
			t.Fatalf("%q: fuse accepted for hf", p)
		}
		if r.Kind == GSDir || r.Kind == GSObject || r.Kind == HF {
			// The canonical URI parses again to the same kind.
			r2, err := Parse(r.URI, fuse, trust)
			if err != nil || r2.Kind != r.Kind || r2.URI != r.URI {
				t.Fatalf("%q -> %q does not re-parse: %+v %v", p, r.URI, r2, err)
			}
			if err := Validate(r); err != nil {
				t.Fatalf("%q: Validate: %v", p, err)
			}
		}
		if b, k, ok := GCS(r); ok && (b == "" || (k != "" && !cleanRel(strings.TrimSuffix(k, "/")))) {
			t.Fatalf("%q: bucket %q key %q", p, b, k)
		}
	})
}
