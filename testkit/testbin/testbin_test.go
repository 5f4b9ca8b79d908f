package testbin

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kinetic-run/kinetic/image"
)

// TestPrebuiltRunners: with $KINETIC_TEST_BIN, WithRunners hands out the binary only when
// the runners are beside it (as make test-tools puts them, under the names
// image.RunnerSource looks for), and says what is missing otherwise: a test then fails at
// once instead of compiling them inside its timeout.
func TestPrebuiltRunners(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "kinetic")
	os.WriteFile(bin, []byte("cli"), 0o755)
	t.Setenv(EnvBin, bin)
	os.WriteFile(filepath.Join(dir, "kinetic-runner-linux-amd64"), []byte("runner"), 0o755)
	if _, err := WithRunners(); err == nil || !strings.Contains(err.Error(), "kinetic-runner-linux-arm64") || strings.Contains(err.Error(), "amd64") || !strings.Contains(err.Error(), "make test-tools") {
		t.Fatalf("one runner missing: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "kinetic-runner-linux-arm64"), []byte("runner"), 0o755)
	got, err := WithRunners()
	if err != nil || got != bin {
		t.Fatalf("WithRunners() = %q, %v; want %s", got, err, bin)
	}
	bins, err := image.RunnerSource{Exe: got}.Binaries(t.Context())
	if err != nil || len(bins) != len(image.RunnerPlatforms) {
		t.Fatalf("image.RunnerSource does not find the runners beside %s: %v %v", got, bins, err)
	}
	t.Setenv(EnvBin, filepath.Join(dir, "missing"))
	if _, err := Build(); err == nil {
		t.Error("Build with a missing $KINETIC_TEST_BIN: no error")
	}
}
