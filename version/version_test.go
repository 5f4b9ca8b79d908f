package version

import (
	"os"
	"regexp"
	"testing"
)

// TestSameVersionEverywhere: the binary, the SDK (kinetic.__version__) and the Python
// package say the same version, so `kinetic version` and the SDK never disagree.
func TestSameVersionEverywhere(t *testing.T) {
	for file, pattern := range map[string]string{
		"../python/kinetic/__init__.py": `(?m)^__version__ = "([^"]+)"$`,
		"../python/pyproject.toml":      `(?m)^version = "([^"]+)"$`,
	} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(pattern).FindSubmatch(b)
		if m == nil {
			t.Fatalf("%s: no version found with %s", file, pattern)
		}
		if string(m[1]) != Version {
			t.Errorf("%s says %s, the binary %s", file, m[1], Version)
		}
	}
}
