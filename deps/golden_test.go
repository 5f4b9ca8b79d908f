package deps

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// Golden key inputs.
const (
	goldenImage  = "us-docker.pkg.dev/kinetic/base:py311"
	goldenCat    = "tpu"
	goldenRunner = "v0.1.0"
)

// TestGolden runs Discover + Filtered + EnvKey on each tree under testdata/golden/CASE/tree
// (starting in the directory named by CASE/start, if present, and stopping at the tree)
// and compares a report with CASE/want.golden. Paths in the report are relative to the
// tree ($TREE). Run with -update to rewrite the golden files.
func TestGolden(t *testing.T) {
	cases, err := filepath.Glob("testdata/golden/*")
	if err != nil || len(cases) == 0 {
		t.Fatalf("no golden cases: %v", err)
	}
	for _, dir := range cases {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			tree, err := filepath.Abs(filepath.Join(dir, "tree"))
			if err != nil {
				t.Fatal(err)
			}
			start := tree
			if b, err := os.ReadFile(filepath.Join(dir, "start")); err == nil {
				start = filepath.Join(tree, strings.TrimSpace(string(b)))
			}
			got := strings.ReplaceAll(report(Discover(start, tree)), tree, "$TREE")
			wantFile := filepath.Join(dir, "want.golden")
			if *update {
				if err := os.WriteFile(wantFile, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(wantFile)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("report mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func report(r *Requirements, err error) string {
	if err != nil {
		return "error: " + err.Error() + "\n"
	}
	var b strings.Builder
	kept, dropped := r.Filtered()
	fmt.Fprintf(&b, "source: %s\n", r.Source)
	section := func(name string, lines []string) {
		fmt.Fprintf(&b, "%s:\n", name)
		for _, l := range lines {
			fmt.Fprintf(&b, "  %s\n", l)
		}
	}
	section("files", r.Files)
	section("lines", kept.Lines())
	section("constraints", kept.ConstraintLines())
	var ds []string
	for _, d := range dropped {
		ds = append(ds, fmt.Sprintf("%s: %s", d.location(), d.String()))
	}
	section("dropped", ds)
	fmt.Fprintf(&b, "message:\n%s", DroppedMessage(dropped, true))
	fmt.Fprintf(&b, "key: %s\n", EnvKey(kept, goldenImage, goldenCat, goldenRunner))
	return b.String()
}
