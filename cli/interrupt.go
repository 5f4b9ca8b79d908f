package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/kinetic-run/kinetic/errs"
)

// ErrInterrupted is the cause of the command's context after the first Ctrl-C (or
// SIGTERM): main exits 130 with one line, never Go's "context canceled".
var ErrInterrupted = errs.New(errs.Cancelled, "interrupted")

// ExitInterrupted is the exit code after an interrupt (128 + SIGINT), as shells expect.
const ExitInterrupted = 130

// Interrupted reports whether err ended a command because of an interrupt.
func Interrupted(ctx context.Context, err error) bool {
	if errors.Is(err, ErrInterrupted) {
		return true
	}
	return ctx.Err() != nil && errors.Is(context.Cause(ctx), ErrInterrupted)
}

// The line the second Ctrl-C prints before the process leaves at once: what a command
// has in flight (kinetic run: the job it started, and how to re-attach or cancel it).
var (
	leaveMu  sync.Mutex
	leaveMsg string
)

// setLeaveMessage says what to print if the user presses Ctrl-C again ("" for nothing).
func setLeaveMessage(msg string) {
	leaveMu.Lock()
	leaveMsg = msg
	leaveMu.Unlock()
}

// Leave is the second interrupt: it prints what is left running and exits 130 at once.
func Leave(w io.Writer) {
	leaveMu.Lock()
	msg := leaveMsg
	leaveMu.Unlock()
	if msg != "" {
		fmt.Fprintln(w, msg)
	}
	os.Exit(ExitInterrupted)
}

// leftRunning is what to do about a job left running.
func leftRunning(id string) string {
	return fmt.Sprintf("kinetic: left job %s running. Re-attach: `kinetic jobs logs -f %s` then `kinetic jobs result %s`; stop it: `kinetic jobs cancel %s`", id, id, id, id)
}
