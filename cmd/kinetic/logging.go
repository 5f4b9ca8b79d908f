package main

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// The engine's one logger is log/slog's default, on stderr. KINETIC_LOG_LEVEL sets its
// level for the engine as it sets the Python SDK's logger ("kinetic"), with the same
// values: Python's level names (DEBUG, INFO, WARNING or WARN, ERROR, CRITICAL or FATAL,
// NOTSET), in any case; slog's own forms ("info+2") are accepted too. The SDK's engine
// subprocess inherits the variable, so one setting turns on both sides.

// logLevelEnv is the variable; defaultLogLevel is the level when it is unset: the
// engine's own records (the listing index, retries) stay quiet unless asked for.
const (
	logLevelEnv     = "KINETIC_LOG_LEVEL"
	defaultLogLevel = slog.LevelWarn
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
	level := defaultLogLevel
	if value != "" {
		l, err := parseLogLevel(value)
		if err != nil {
			fmt.Fprintf(w, "kinetic: warning: %v\n", err)
		} else {
			level = l
		}
	}
	slog.SetDefault(slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level})))
}
