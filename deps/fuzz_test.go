package deps

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
)

// noIncludes is the fuzzers' file reader: includes never touch the disk.
func noIncludes(string) ([]byte, error) { return nil, fs.ErrNotExist }

const fuzzPath = "/fuzz/requirements.txt"

func addSeeds(f *testing.F, glob string) {
	files, _ := filepath.Glob(glob)
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
}

// checkRoundTrip asserts parse(print(r)) prints the same as r.
func checkRoundTrip(t *testing.T, r *Requirements) {
	t.Helper()
	lines := r.Lines()
	r2, err := parseRequirementsWith(noIncludes, fuzzPath, []byte(strings.Join(lines, "\n")))
	if err != nil {
		t.Fatalf("printed lines do not parse: %v\n%q", err, lines)
	}
	if !slices.Equal(lines, r2.Lines()) {
		t.Fatalf("round trip changed the lines:\n%q\n%q", lines, r2.Lines())
	}
	cons := r.ConstraintLines()
	r3, err := parseRequirementsWith(noIncludes, fuzzPath, []byte(strings.Join(cons, "\n")))
	if err != nil {
		t.Fatalf("printed constraints do not parse: %v\n%q", err, cons)
	}
	if !slices.Equal(cons, r3.Lines()) {
		t.Fatalf("constraint round trip changed the lines:\n%q\n%q", cons, r3.Lines())
	}
	// Filtering and hashing never panic, and hashing is deterministic.
	kept, _ := r.Filtered()
	if EnvKey(kept, "i", "c", "v") != EnvKey(kept, "i", "c", "v") {
		t.Fatal("EnvKey not deterministic")
	}
	_ = DroppedMessage(r.Requirements(), false)
}

func FuzzParseRequirements(f *testing.F) {
	addSeeds(f, "testdata/golden/*/tree/*.txt")
	addSeeds(f, "testdata/golden/*/tree/*/*.txt")
	for _, s := range []string{
		"jax[tpu]>=0.4; python_version > \"3.9\"  # kn:keep\n",
		"a @ https://e.com/a.whl ; os_name == 'nt' --hash=sha256:ab\n",
		"numpy \\\n >=1 \\\n",
		"-i https://x/simple --pre\n--find-links '/a b'\n-r x.txt\n",
		"a; (os_name == 'x' or \"y\" not in sys_platform) and extra == \"z\"",
		"git+https://g.com/o/r@v1#egg=r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := parseRequirementsWith(noIncludes, fuzzPath, data)
		if err != nil {
			return
		}
		checkRoundTrip(t, r)
	})
}

func FuzzPyproject(f *testing.F) {
	addSeeds(f, "testdata/golden/*/tree/pyproject.toml")
	f.Add([]byte("[project]\ndependencies = [\"a[x]>=1 ; os_name == 'nt'\", 'jax # kn:keep'] # kn:keep\n"))
	f.Add([]byte("[project]\ndynamic = [\"dependencies\"]\n[tool.setuptools.dynamic]\ndependencies = {file = \"r.txt\"}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		const path = "/fuzz/pyproject.toml"
		r, err := parsePyprojectWith(noIncludes, path, data)
		if err != nil {
			return
		}
		checkRoundTrip(t, r)
		// Print back as TOML and parse again: same lines.
		if len(r.ConstraintLines()) > 0 {
			return // only from dynamic requirements files, covered above
		}
		var deps []string
		for _, e := range r.Entries {
			if e.Req == nil {
				return // directives come from dynamic requirements files
			}
			deps = append(deps, e.Req.String())
		}
		doc := map[string]any{"project": map[string]any{"name": "x", "dependencies": deps}}
		out, err := toml.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		r2, err := parsePyprojectWith(noIncludes, path, out)
		if err != nil {
			t.Fatalf("printed pyproject does not parse: %v\n%s", err, out)
		}
		if !slices.Equal(r.Lines(), r2.Lines()) {
			t.Fatalf("pyproject round trip changed the lines:\n%q\n%q", r.Lines(), r2.Lines())
		}
	})
}
