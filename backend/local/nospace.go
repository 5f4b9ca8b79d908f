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
