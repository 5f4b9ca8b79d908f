package e2e

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// No user-facing text (docs, help, messages, docstrings, examples) speaks of "the seeds":
// the documentation this product was specified from is not the user's.
func TestNoSeedsWording(t *testing.T) {
	root := repoRoot()
	word := regexp.MustCompile(`(?i)\bthe seeds\b|\bseeds'`)
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		name := d.Name()
		if d.IsDir() {
			if strings.HasPrefix(name, ".") || name == "bin" || name == "dist" || name == "testdata" || name == "tests" {
				return filepath.SkipDir
			}
			return nil
		}
		ext := filepath.Ext(name)
		if strings.HasSuffix(name, "_test.go") || !(ext == ".go" || ext == ".py" || ext == ".md" || ext == ".toml" || name == "Makefile") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		for i, line := range strings.Split(string(b), "\n") {
			if word.MatchString(line) {
				rel, _ := filepath.Rel(root, p)
				t.Errorf("%s:%d speaks of the seeds: %s", rel, i+1, strings.TrimSpace(line))
			}
		}
		return nil
	})
}
