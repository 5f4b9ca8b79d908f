package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"

	"k8s.io/klog/v2"
)

// The engine's one logger is log/slog's default, on stderr. KINETIC_LOG_LEVEL sets its
// level for the engine as it sets the Python SDK's logger ("kinetic"), with the same
// values: Python's level names (DEBUG, INFO, WARNING or WARN, ERROR, CRITICAL or FATAL,
// NOTSET), in any case; slog's own forms ("info+2") are accepted too. The SDK's engine
// subprocess inherits the variable, so one setting turns on both sides.

// logLevelEnv is the variable; defaultLogLevel is the level when it is unset: INFO, as the
// reference's default. The engine's own diagnostics (the listing index, retries) are at
// DEBUG, and client-go's records (klog) are shown only when a level is asked for, so the
// default says nothing more than a person needs.
const (
	logLevelEnv     = "KINETIC_LOG_LEVEL"
	defaultLogLevel = slog.LevelInfo
)

// parseLogLevel reads a KINETIC_LOG_LEVEL value.
func parseLogLevel(v string) (slog.Level, error) {
	switch strings.ToUpper(strings.TrimSpace(v)) {
	case "NOTSET": // Python: everything
		return slog.LevelDebug - 4, nil
	case "WARNING":
		return slog.LevelWarn, nil
	case "CRITICAL", "FATAL":
		return slog.LevelError + 4, nil
	}
	var l slog.Level
	if err := l.UnmarshalText([]byte(strings.TrimSpace(v))); err != nil {
		return 0, fmt.Errorf("%s=%q: want DEBUG, INFO, WARNING, ERROR or CRITICAL (as for the Python SDK)", logLevelEnv, v)
	}
	return l, nil
}

// setupLogging makes slog's default logger write records at the level value names (""
// means defaultLogLevel) to w. A bad value is said on w and leaves the default level.
func setupLogging(value string, w io.Writer) {
	level, klogAt := defaultLogLevel, slog.LevelWarn // client-go: none at the default
	if value != "" {
		l, err := parseLogLevel(value)
		if err != nil {
			fmt.Fprintf(w, "kinetic: warning: %v\n", err)
		} else {
			level, klogAt = l, l
		}
	}
	h := slog.NewTextHandler(w, &slog.HandlerOptions{Level: level})
	slog.SetDefault(slog.New(h))
	routeKlog(slog.NewTextHandler(w, &slog.HandlerOptions{Level: klogAt}), klogAt)
}

// routeKlog sends client-go's logger (klog) through h, so that its lines reach stderr only
// as records at a level KINETIC_LOG_LEVEL asks for, with logger=client-go. Its records
// are a library's diagnostics (port-forward and watch retries, the API server's
// warnings): a failure that matters comes back as Kinetic's own error. So they enter
// below Kinetic's own (klogLevel): client-go's errors at INFO, its other lines at DEBUG
// and below, none at the default WARNING. klog checks V(n) itself before logging, so its
// verbosity follows the level.
func routeKlog(h slog.Handler, level slog.Level) {
	klog.SetSlogLogger(slog.New(klogHandler{h.WithAttrs([]slog.Attr{slog.String("logger", "client-go")})}))
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	v := max(0, int(slog.LevelDebug-level)) // V(n) is shown where DEBUG-n is
	fs.Set("v", strconv.Itoa(v))
}

// klogLevel is the level of a client-go record that logr gives at l (slog.LevelError for
// an error; -n for V(n).Info): errors at INFO, V(n) at DEBUG-n.
func klogLevel(l slog.Level) slog.Level {
	if l >= slog.LevelError {
		return slog.LevelInfo
	}
	return slog.LevelDebug + min(l, 0)
}

// klogHandler places client-go's records at klogLevel before h sees them.
type klogHandler struct{ h slog.Handler }

func (k klogHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return k.h.Enabled(ctx, klogLevel(l))
}

// Handle checks the level itself: logr hands errors over without asking Enabled.
func (k klogHandler) Handle(ctx context.Context, r slog.Record) error {
	r.Level = klogLevel(r.Level)
	if !k.h.Enabled(ctx, r.Level) {
		return nil
	}
	return k.h.Handle(ctx, r)
}

func (k klogHandler) WithAttrs(as []slog.Attr) slog.Handler { return klogHandler{k.h.WithAttrs(as)} }
func (k klogHandler) WithGroup(g string) slog.Handler       { return klogHandler{k.h.WithGroup(g)} }
