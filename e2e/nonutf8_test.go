package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A file whose name is not valid UTF-8 (issue 45) arrived in the job's tree renamed, each
// bad byte made U+FFFD, silently. Now it is left out with a warning naming it (its bytes
// escaped); docs/packaging.md says why.
func TestNonUTF8FileName(t *testing.T) {
	e := newEnv(t)
	bad := "caf\xe9.txt" // Latin-1, as an old archive leaves it
	if err := os.WriteFile(filepath.Join(e.dir, bad), []byte("x"), 0o644); err != nil {
		t.Skipf("this file system refuses the name: %v", err)
	}
	os.WriteFile(filepath.Join(e.dir, "ls.py"), []byte("import os\ndef main():\n    return sorted(os.listdir('.'))\n"), 0o644)
	r := e.run("run", "ls.py::main")
	t.Logf("exit %d: %s %s", r.code, r.stdout, r.stderr)
	if r.code != 0 {
		t.Fatalf("run: %d %q", r.code, r.stderr)
	}
	if strings.Contains(r.stdout, "\ufffd") || strings.Contains(r.stdout, `\ufffd`) || strings.Contains(r.stdout, "caf") {
		t.Errorf("the file arrived renamed: %q", r.stdout)
	}
	if !strings.Contains(r.stderr, `caf\xe9.txt`) || !strings.Contains(r.stderr, "not valid UTF-8") {
		t.Errorf("no warning names the file: %q", r.stderr)
	}
}
