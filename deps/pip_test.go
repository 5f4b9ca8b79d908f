package deps

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kinetic-run/kinetic/testkit/tier"
)

// TestLinesAcceptedByPip feeds the canonical lines of every golden tree to pip's own
// requirements-file parser (when python3 with pip is available) and checks that pip
// reads the same requirements: what we print is what pip understands.
func TestLinesAcceptedByPip(t *testing.T) {
	tier.Heavy(t, "runs pip")
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	const script = `
import sys
try:
    from pip._internal.req.req_file import parse_requirements
    from pip._internal.network.session import PipSession
except ImportError:
    print("SKIP"); sys.exit(0)
session = PipSession()
args = sys.argv[1:]
for i in range(0, len(args), 3):
    name, req, con = args[i:i+3]
    n = sum(1 for _ in parse_requirements(req, session=session))
    n += sum(1 for _ in parse_requirements(con, session=session, constraint=True))
    print(name, n)
`
	var args []string
	var want strings.Builder
	dir := t.TempDir()
	cases, _ := filepath.Glob("testdata/golden/*/tree")
	for _, tree := range cases {
		name := filepath.Base(filepath.Dir(tree))
		if strings.HasPrefix(name, "err-") {
			continue
		}
		start := tree
		if b, err := os.ReadFile(filepath.Join(filepath.Dir(tree), "start")); err == nil {
			start = filepath.Join(tree, strings.TrimSpace(string(b)))
		}
		r, err := Discover(start, tree)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		req, con := filepath.Join(dir, name+".r.txt"), filepath.Join(dir, name+".c.txt")
		if err := os.WriteFile(req, []byte(strings.Join(r.Lines(), "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(con, []byte(strings.Join(r.ConstraintLines(), "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, name, req, con)
		fmt.Fprintf(&want, "%s %d\n", name, len(r.Requirements())+len(r.Constraints))
	}
	out, err := exec.Command(py, append([]string{"-c", script}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("pip rejects our lines: %v\n%s", err, out)
	}
	if strings.TrimSpace(string(out)) == "SKIP" {
		t.Skip("python3 has no pip")
	}
	if string(out) != want.String() {
		t.Errorf("pip read:\n%s\nwant:\n%s", out, want.String())
	}
}
