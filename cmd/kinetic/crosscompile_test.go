package main

import (
	"os"
	"os/exec"
	"testing"
)

// TestCrossCompilesForMacOS: `make wheel` ships a macOS arm64 wheel, so both binaries
// must build for darwin/arm64 (a Linux-only constant in the content hash once broke it
// without any test noticing).
func TestCrossCompilesForMacOS(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries for another system")
	}
	for _, pkg := range []string{"github.com/kinetic-run/kinetic/cmd/kinetic", "github.com/kinetic-run/kinetic/cmd/kinetic-runner"} {
		cmd := exec.Command("go", "build", "-o", os.DevNull, pkg)
		cmd.Env = append(os.Environ(), "GOOS=darwin", "GOARCH=arm64", "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("GOOS=darwin GOARCH=arm64 go build %s: %v\n%s", pkg, err, out)
		}
	}
}
