package config

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// fileCmp compares Files including preserved unknown fields, but not where they were read.
var fileCmp = []cmp.Option{cmp.AllowUnexported(File{}), cmpopts.IgnoreFields(File{}, "path"), cmpopts.EquateEmpty()}

func TestParseProfiles(t *testing.T) {
	tests := []struct {
		name, in string
		want     *File
	}{
		{"empty file", "", &File{}},
		{"whitespace", " \n", &File{}},
		{"null", "null", &File{}},
		{"reference file", twoProfiles, &File{Current: "dev", Profiles: map[string]Profile{
			"dev":  {"project": "p-dev", "zone": "europe-west4-a", "cluster": "c-dev", "namespace": "ns-dev", "backend": "gke"},
			"prod": {"project": "p-prod", "zone": "us-east5-b", "cluster": "c-prod"},
		}}},
		{"null current and empty strings", `{"current": null, "profiles": {"a": {"zone": ""}}}`,
			&File{Profiles: map[string]Profile{"a": {}}}},
		{"unknown keys kept or dropped", `{"version": 2, "profiles": {"a": {"colour": "blue", "weight": 3, "nested": {"x": 1}}}}`,
			&File{Profiles: map[string]Profile{"a": {"colour": "blue"}}, extra: map[string]json.RawMessage{"version": json.RawMessage("2")}}},
		{"null profile dropped", `{"profiles": {"a": null}}`, &File{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseProfiles([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got, append(fileCmp, cmp.Transformer("raw", func(b json.RawMessage) string { return string(b) }))...); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseProfilesErrors(t *testing.T) {
	for name, in := range map[string]string{
		"truncated":            `{"profiles": {`,
		"array":                `[]`,
		"current not string":   `{"current": 3}`,
		"profiles not object":  `{"profiles": ["dev"]}`,
		"profile not object":   `{"profiles": {"dev": "x"}}`,
		"known key not string": `{"profiles": {"dev": {"zone": 5}}}`,
	} {
		if _, err := ParseProfiles([]byte(in)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "profiles.json")
	f := &File{}
	if err := f.Put("dev", Profile{"project": "p", "zone": "z", "store": "/data/store", "backend": "k8s"}); err != nil {
		t.Fatal(err)
	}
	if err := f.Put("x", Profile{"future_key": "kept"}); err != nil {
		t.Fatal(err)
	}
	if err := f.Use("dev"); err != nil {
		t.Fatal(err)
	}
	if err := f.Save(path); err != nil {
		t.Fatal(err)
	}
	got, err := LoadProfiles(path)
	if err != nil {
		t.Fatal(err)
	}
	want := &File{Current: "dev", Profiles: map[string]Profile{
		"dev": {"project": "p", "zone": "z", "store": "file:///data/store", "backend": "k8s"},
		"x":   {"future_key": "kept"},
	}}
	if diff := cmp.Diff(want, got, fileCmp...); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// The reference reads project/zone/cluster/namespace from every profile: always written.
	data, _ := os.ReadFile(path)
	for _, w := range []string{`"cluster": null`, `"namespace": null`, `"current": "dev"`} {
		if !strings.Contains(string(data), w) {
			t.Errorf("file lacks %s:\n%s", w, data)
		}
	}
	for p, want := range map[string]os.FileMode{path: 0o600, filepath.Dir(path): 0o700} {
		if st, err := os.Stat(p); err != nil || st.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v (%v)", p, st.Mode().Perm(), want, err)
		}
	}
}

func TestUnknownTopLevelPreserved(t *testing.T) {
	path := writeFile(t, `{"current": null, "profiles": {}, "telemetry": {"on": false, "url": "a<b"}}`)
	err := Update(path, func(f *File) error { return f.Put("dev", Profile{"zone": "z"}) })
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if !strings.Contains(string(data), `"url": "a<b"`) || !strings.Contains(string(data), `"dev"`) {
		t.Errorf("unknown field lost or mangled:\n%s", data)
	}
}

func TestFileOperations(t *testing.T) {
	f, err := ParseProfiles([]byte(twoProfiles))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"dev", "prod"}, f.Names()); diff != "" {
		t.Error(diff)
	}
	if err := f.Use("nope"); !errors.Is(err, ErrProfileNotFound) || !strings.Contains(err.Error(), "dev, prod") {
		t.Errorf("Use(nope) = %v", err)
	}
	if err := f.Put("bad name", Profile{}); err == nil {
		t.Error("Put accepted a name with a space")
	}
	if err := f.Put("ok", Profile{"backend": "slurm"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("Put with a bad backend = %v", err)
	}
	if wasCurrent, err := f.Remove("dev"); err != nil || !wasCurrent || f.Current != "" {
		t.Errorf("Remove(dev) = %v, %v; current %q", wasCurrent, err, f.Current)
	}
	if _, err := f.Remove("dev"); !errors.Is(err, ErrProfileNotFound) {
		t.Errorf("second Remove(dev) = %v", err)
	}
}

func TestLoadMissingAndCorrupt(t *testing.T) {
	f, err := LoadProfiles(filepath.Join(t.TempDir(), "absent.json"))
	if err != nil || len(f.Profiles) != 0 {
		t.Errorf("missing file: %v, %v", f, err)
	}
	path := writeFile(t, "{not json")
	_, err = LoadProfiles(path)
	var ce *CorruptFileError
	if !errors.As(err, &ce) || ce.Path != path || !strings.Contains(err.Error(), path) {
		t.Errorf("corrupt file: %v", err)
	}
	// In a person's words: where the file stops being JSON, never the decoder's Go text.
	for content, want := range map[string]string{
		"{not json":                         "not valid JSON at line 1, column 2",
		"{\n  \"current\": \"a\",\n  oops}": "not valid JSON at line 3, column 3",
		`{"current": "a"`:                   "it ends too early",
		`[1, 2]`:                            "found a JSON array where a JSON object belongs",
		`{"profiles": "x"}`:                 `"profiles" must be an object mapping names to profiles: found a JSON string where an object belongs`,
		`{"profiles": {"a": {"zone": 1}}}`:  `profile "a": "zone" must be a string: found a JSON number where a string belongs`,
	} {
		_, err := LoadProfiles(writeFile(t, content))
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "invalid character") || strings.Contains(err.Error(), "Go value") || strings.Contains(err.Error(), "unmarshal") {
			t.Errorf("%q: %v, want %q", content, err, want)
		}
	}
}
