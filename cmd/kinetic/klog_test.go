package main

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"

	"k8s.io/klog/v2"
)

// TestKlogThroughSlog: client-go's logger (klog) writes nothing of its own; its lines
// reach the engine's slog handler, marked logger=client-go, only at a level
// KINETIC_LOG_LEVEL asks for: nothing at the default (WARNING), its errors at INFO, its
// other lines at DEBUG (through klog's functions or its contextual logger), its verbose
// V(2) lines below that (NOTSET).
func TestKlogThroughSlog(t *testing.T) {
	const (
		errLine  = "an error occurred forwarding 5678"
		warnLine = "the API server warns: deprecated"
		infoLine = "watch restarted"
		vLine    = "verbose request trace"
		ctxLine  = "contextual logger line" // klog.FromContext, as newer client-go code logs
	)
	for _, c := range []struct {
		level string
		shown []string // in the handler's output; the others must not be
		at    map[string]string
	}{
		{"", nil, nil},
		{"WARNING", nil, nil},
		{"ERROR", nil, nil},
		{"INFO", []string{errLine}, map[string]string{errLine: "level=INFO"}},
		{"DEBUG", []string{errLine, warnLine, infoLine, ctxLine}, map[string]string{warnLine: "level=DEBUG", infoLine: "level=DEBUG", ctxLine: "level=DEBUG"}},
		{"NOTSET", []string{errLine, warnLine, infoLine, vLine, ctxLine}, map[string]string{vLine: "level=DEBUG-2"}},
	} {
		var out bytes.Buffer
		stderr := captureStderr(t, func() {
			setupLogging(c.level, &out)
			klog.ErrorS(errors.New("connection reset"), errLine)
			klog.Warning(warnLine)
			klog.Info(infoLine)
			klog.V(2).Info(vLine)
			klog.Background().Info(ctxLine)
			klog.Flush()
		})
		if stderr != "" {
			t.Errorf("KINETIC_LOG_LEVEL=%q: klog wrote to stderr itself:\n%s", c.level, stderr)
		}
		got := out.String()
		for _, line := range []string{errLine, warnLine, infoLine, vLine, ctxLine} {
			want := strings.Contains(strings.Join(c.shown, "\n"), line)
			if strings.Contains(got, line) != want {
				t.Errorf("KINETIC_LOG_LEVEL=%q: %q shown %v, want %v; the handler got:\n%s", c.level, line, !want, want, got)
			}
		}
		for _, rec := range strings.Split(strings.TrimSpace(got), "\n") {
			if rec != "" && !strings.Contains(rec, "logger=client-go") {
				t.Errorf("KINETIC_LOG_LEVEL=%q: a client-go record without logger=client-go: %s", c.level, rec)
			}
			for line, level := range c.at {
				if strings.Contains(rec, line) && !strings.Contains(rec, level) {
					t.Errorf("KINETIC_LOG_LEVEL=%q: %q not at %s: %s", c.level, line, level, rec)
				}
			}
		}
	}
	setupLogging("", io.Discard)
}

// TestDefaultLogLevelIsInfo: unset, KINETIC_LOG_LEVEL is INFO, as the reference's: an INFO
// record of Kinetic's own is shown, a DEBUG one is not (client-go's stay hidden: above).
func TestDefaultLogLevelIsInfo(t *testing.T) {
	var out bytes.Buffer
	setupLogging("", &out)
	slog.Info("an info record")
	slog.Debug("a debug record")
	if got := out.String(); !strings.Contains(got, "an info record") || strings.Contains(got, "a debug record") {
		t.Errorf("at the default level the handler got:\n%s", got)
	}
	setupLogging("", io.Discard)
}

// captureStderr runs f with os.Stderr a pipe and returns what was written to it.
func captureStderr(t *testing.T, f func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stderr
	os.Stderr = w
	done := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		done <- string(b)
	}()
	defer func() { os.Stderr = saved }()
	f()
	os.Stderr = saved
	w.Close()
	return <-done
}
