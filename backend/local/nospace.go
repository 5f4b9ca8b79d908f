package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/kinetic-run/kinetic/internal/atomicfile"
	"github.com/kinetic-run/kinetic/job"
)

// A full store must not turn into a lie or a failing read. A supervisor or group worker
// that cannot write how a job ended to the store keeps it on this machine, in its
// workspace (the state directory, often another disk; and the runner's reserve there
// was just given back), and readers look there before they call its process killed.
// What a reader concludes (a dead supervisor, an envelope without a status) is written
// back to the store only as a courtesy to the next reader: a read never fails because
// the store cannot take a write.

// keptFinalName is the final status a supervisor could not write to the store.
const keptFinalName = "final-status.json"

// keepFinal writes s into workspace ws (best effort: the disk may be full too).
func keepFinal(ws string, s *job.Status) {
	if ws == "" {
		return
	}
	b, err := json.Marshal(s)
	if err != nil {
		return
	}
	atomicfile.Write(filepath.Join(ws, keptFinalName), b, 0o600, 0o700)
}

// keptFinal reads the final status kept in workspace ws, or nil.
func keptFinal(ws string) *job.Status {
	if ws == "" {
		return nil
	}
	b, err := os.ReadFile(filepath.Join(ws, keptFinalName))
	if err != nil {
		return nil
	}
	var s job.Status
	if json.Unmarshal(b, &s) != nil || !s.State.Terminal() {
		return nil
	}
	return &s
}

// NoSpace says whether err is the store's (or a disk's) ENOSPC.
func NoSpace(err error) bool { return errors.Is(err, syscall.ENOSPC) }

// NoSpaceReason is the reason of a job that failed because the store filled up, naming
// the store.
func NoSpaceReason(storeURL, what string) string {
	return fmt.Sprintf("no space left on device in the store %s: %s could not be written there, so the job failed (free space there and run it again; what was written before is kept)", storeURL, what)
}

// record writes a status a reader concluded, for the next reader. Failing to is not
// the reader's error (a full or read-only store): it answers from what it found.
func (b *Backend) record(ctx context.Context, id string, s *job.Status) {
	WriteStatus(ctx, b.st, id, s)
}

// The state directory ($KINETIC_HOME/local: workspaces, queues, locks, slots) is a
// resource like the store, often on another disk: a full, read-only or foreign one fails
// the job at once, naming the directory, instead of leaving it queued for a worker that
// can never claim it (each try failed to write its claim, and the job waited "for a free
// slot" for ever).

// StateDirError is err, met writing path (what, in the user's words) in the state
// directory stateDir, said so that the user can act on it. It wraps err.
func StateDirError(stateDir, path, what string, err error) error {
	return &stateDirError{msg: stateDirMessage(stateDir, path, what, err), err: err}
}

type stateDirError struct {
	msg string
	err error
}

func (e *stateDirError) Error() string { return e.msg }
func (e *stateDirError) Unwrap() error { return e.err }

// stateDirMessage words StateDirError.
func stateDirMessage(stateDir, path, what string, err error) string {
	var cause string
	switch {
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		cause = "no space left on device"
	case errors.Is(err, syscall.EROFS):
		cause = "the file system is read-only"
	case errors.Is(err, os.ErrPermission):
		cause = "permission denied"
	default:
		cause = errText(err)
	}
	return fmt.Sprintf("the local backend's state directory %s (KINETIC_HOME) cannot be written: %s (%s, at %s); free space there or make it writable, or set KINETIC_HOME to a directory on another disk, and run it again",
		stateDir, cause, what, path)
}

// errText is err's text without Go's operation and path prefix (a *PathError's "open
// /x/y: " is said by the caller in its own words).
func errText(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err.Error()
	}
	return err.Error()
}

// stateDirFault says whether err is the state directory refusing a write (full,
// read-only, not ours), as opposed to a lock another process holds.
func stateDirFault(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) || errors.Is(err, syscall.EROFS) ||
		errors.Is(err, os.ErrPermission) || errors.Is(err, syscall.EIO)
}
