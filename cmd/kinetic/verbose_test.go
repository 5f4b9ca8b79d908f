package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kinetic-run/kinetic/store"
	"github.com/kinetic-run/kinetic/testkit/testbin"
)

// TestVerboseFlag: -v (or --verbose, before or after the command) shows the engine's
// debug records as KINETIC_LOG_LEVEL=DEBUG does, and wins over the variable; without it
// the variable's level holds.
func TestVerboseFlag(t *testing.T) {
	bin := testbin.Path(t)
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(store.ListIndexKey)), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, store.ListIndexKey), []byte("{damaged"), 0o600); err != nil {
		t.Fatal(err)
	}
	const record = "listing index of another version or damaged"
	for _, c := range []struct {
		level string
		args  []string
		want  bool
	}{
		{"", []string{"-v", "jobs", "list"}, true},
		{"", []string{"jobs", "list", "--verbose"}, true},
		{"WARNING", []string{"-v", "jobs", "list"}, true},
		{"ERROR", []string{"jobs", "list", "-v"}, true},
		{"", []string{"jobs", "list"}, false},
		{"WARNING", []string{"jobs", "list"}, false},
		{"DEBUG", []string{"jobs", "list"}, true},
	} {
		cmd := exec.Command(bin, append(c.args, "--store", "file://"+dir)...)
		cmd.Env = append(cmd.Environ(), "KINETIC_HOME="+t.TempDir(), "KINETIC_PROFILES_FILE="+filepath.Join(t.TempDir(), "p.json"), "KINETIC_LOG_LEVEL="+c.level)
		var e bytes.Buffer
		cmd.Stderr = &e
		if err := cmd.Run(); err != nil {
			t.Fatalf("%v: %v\n%s", c.args, err, e.String())
		}
		if got := strings.Contains(e.String(), record) && strings.Contains(e.String(), "level=DEBUG"); got != c.want {
			t.Errorf("KINETIC_LOG_LEVEL=%q kinetic %s: the debug record shown %v, want %v; stderr:\n%s", c.level, strings.Join(c.args, " "), got, c.want, e.String())
		}
	}
}
