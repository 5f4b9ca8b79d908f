// Package calltrace writes timestamped marks of a call's phases, from every process a
// call passes through (the SDK, the engine, a supervisor, the warm server's child), to
// the one file KINETIC_TRACE names, so that the benchmark (bench/, -trace) can say where
// a call's time goes. Without the variable a mark costs one comparison.
//
// A line is "UNIX_MICROSECONDS PID PHASE JOB_ID", written with one append (lines of all
// processes interleave whole).
package calltrace

import (
	"os"
	"strconv"
	"time"
)

var path = os.Getenv("KINETIC_TRACE")

// On reports whether marks are written.
func On() bool { return path != "" }

// Mark records that phase of job id happens now.
func Mark(phase, id string) {
	if path == "" {
		return
	}
	// Opened per mark: a long-lived process (a supervisor) writes to whatever file has
	// the name now, as the SDK's and the Python bootstrap's marks do.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	b := make([]byte, 0, 96)
	b = strconv.AppendInt(b, time.Now().UnixMicro(), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(os.Getpid()), 10)
	b = append(b, ' ')
	b = append(b, phase...)
	b = append(b, ' ')
	b = append(b, id...)
	b = append(b, '\n')
	f.Write(b)
}
