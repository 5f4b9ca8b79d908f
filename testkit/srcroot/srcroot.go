// Package srcroot finds this module's source tree for tests and test tools, which build
// or read files from it. It does not ask runtime.Caller: under -trimpath (as `make test`
// builds, so that the tests, the CLI and the runner share one compile of every package)
// source paths are module-relative.
package srcroot

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"strings"
)

// Module is this module's path.
const Module = "github.com/kinetic-run/kinetic"

// Dir returns the root of this module's source: the nearest directory at or above the
// working directory (a test's is its package's directory) whose go.mod declares Module.
func Dir() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if declares(filepath.Join(d, "go.mod")) {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", errors.New("no " + Module + " source at or above " + wd + ": run from inside the repository")
		}
	}
}

// MustDir is Dir for tests and tools, which cannot go on without the source.
func MustDir() string {
	d, err := Dir()
	if err != nil {
		panic(err)
	}
	return d
}

// Join is filepath.Join(MustDir(), elem...).
func Join(elem ...string) string { return filepath.Join(append([]string{MustDir()}, elem...)...) }

func declares(gomod string) bool {
	f, err := os.Open(gomod)
	if err != nil {
		return false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if line := strings.TrimSpace(s.Text()); strings.HasPrefix(line, "module ") {
			return strings.Trim(strings.TrimSpace(strings.TrimPrefix(line, "module ")), `"`) == Module
		}
	}
	return false
}
