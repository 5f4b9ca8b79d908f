package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/kinetic-run/kinetic/internal/testbin"
)

// A bad KINETIC_LOG_LEVEL is said, not ignored; a good one is accepted quietly.
func TestLogLevel(t *testing.T) {
	bin := testbin.Path(t)
	out, _ := exec.Command(bin, "version").CombinedOutput()
	cmd := exec.Command(bin, "version")
	cmd.Env = append(cmd.Environ(), "KINETIC_LOG_LEVEL=loud")
	bad, _ := cmd.CombinedOutput()
	if !strings.Contains(string(bad), `KINETIC_LOG_LEVEL="loud": want debug, info, warn or error`) {
		t.Errorf("a bad level:\n%s", bad)
	}
	cmd = exec.Command(bin, "version")
	cmd.Env = append(cmd.Environ(), "KINETIC_LOG_LEVEL=debug")
	good, _ := cmd.CombinedOutput()
	if string(good) != string(out) {
		t.Errorf("KINETIC_LOG_LEVEL=debug changed what version prints:\n%s\nvs\n%s", good, out)
	}
}
