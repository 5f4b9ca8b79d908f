// Package testbin builds the kinetic binary once per test process, for tests that need
// real supervisor and runner processes.
package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

var (
	once sync.Once
	path string
	err  error
	out  []byte
)

// Path returns the path of a freshly built kinetic binary ($KINETIC_TEST_BIN if set).
func Path(t testing.TB) string {
	t.Helper()
	p, err := Build()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Build is Path outside a test (TestMain).
func Build() (string, error) {
	if p := os.Getenv("KINETIC_TEST_BIN"); p != "" {
		return p, nil
	}
	once.Do(func() {
		_, file, _, _ := runtime.Caller(0)
		repo := filepath.Join(filepath.Dir(file), "..", "..")
		dir, e := os.MkdirTemp("", "kinetic-testbin-")
		if e != nil {
			err = e
			return
		}
		path = filepath.Join(dir, "kinetic")
		cmd := exec.Command("go", "build", "-o", path, "./cmd/kinetic")
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		out, err = cmd.CombinedOutput()
	})
	if err != nil {
		return "", fmt.Errorf("build kinetic: %v\n%s", err, out)
	}
	return path, nil
}
