package main

import (
	"bytes"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kinetic-run/kinetic/store"
	"github.com/kinetic-run/kinetic/testkit/testbin"
)

// TestParseLogLevel: KINETIC_LOG_LEVEL takes the values the Python SDK takes (Python's
// level names, any case) and slog's; anything else is refused naming the variable.
func TestParseLogLevel(t *testing.T) {
	for v, want := range map[string]slog.Level{
		"DEBUG": slog.LevelDebug, "debug": slog.LevelDebug, "INFO": slog.LevelInfo,
		"WARNING": slog.LevelWarn, "warning": slog.LevelWarn, "WARN": slog.LevelWarn,
		"ERROR": slog.LevelError, "CRITICAL": slog.LevelError + 4, "FATAL": slog.LevelError + 4,
		"NOTSET": slog.LevelDebug - 4, "info+2": slog.LevelInfo + 2, " Info ": slog.LevelInfo,
	} {
		got, err := parseLogLevel(v)
		if err != nil || got != want {
			t.Errorf("parseLogLevel(%q) = %v, %v; want %v", v, got, err, want)
		}
	}
	for _, v := range []string{"loud", "10", "verbose"} {
		if _, err := parseLogLevel(v); err == nil || !strings.Contains(err.Error(), "KINETIC_LOG_LEVEL") {
			t.Errorf("parseLogLevel(%q) = %v, want an error naming the variable", v, err)
		}
	}
}

// TestLogLevel: through the binary, a bad KINETIC_LOG_LEVEL is said, not ignored; the
// SDK's values are accepted quietly; and the level is the engine's: at DEBUG the
// engine's own records (a damaged listing index, listed without it) reach stderr, at the
// default and at WARNING they do not.
func TestLogLevel(t *testing.T) {
	bin := testbin.Path(t)
	run := func(level string, args ...string) (stdout, stderr string) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env = append(cmd.Environ(), "KINETIC_HOME="+t.TempDir(), "KINETIC_PROFILES_FILE="+filepath.Join(t.TempDir(), "p.json"))
		if level != "-" {
			cmd.Env = append(cmd.Env, "KINETIC_LOG_LEVEL="+level)
		}
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		cmd.Run()
		return o.String(), e.String()
	}
	plain, _ := run("-", "version")
	if _, bad := run("loud", "version"); !strings.Contains(bad, `KINETIC_LOG_LEVEL="loud": want DEBUG, INFO, WARNING, ERROR or CRITICAL`) {
		t.Errorf("a bad level:\n%s", bad)
	}
	for _, l := range []string{"debug", "DEBUG", "WARNING", "critical"} {
		if out, errOut := run(l, "version"); out != plain || errOut != "" {
			t.Errorf("KINETIC_LOG_LEVEL=%s: version printed %q and said %q, want %q and nothing", l, out, errOut, plain)
		}
	}

	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(store.ListIndexKey)), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, store.ListIndexKey), []byte("{damaged"), 0o600); err != nil {
		t.Fatal(err)
	}
	const record = "listing index of another version or damaged"
	for level, want := range map[string]bool{"DEBUG": true, "-": false, "WARNING": false} {
		_, errOut := run(level, "jobs", "list", "--store", "file://"+dir)
		if got := strings.Contains(errOut, record) && strings.Contains(errOut, "level=DEBUG"); got != want {
			t.Errorf("KINETIC_LOG_LEVEL=%s: the engine's debug record shown %v, want %v; stderr:\n%s", level, got, want, errOut)
		}
	}
}
