package local_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/backend/local"
	"github.com/kinetic-run/kinetic/batch/driver/drivertest"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
	"github.com/kinetic-run/kinetic/testkit/testbin"
	"github.com/kinetic-run/kinetic/testkit/testproc"
)

// TestDriverConformance: the local backend passes the batch driver's suite (its command
// children go to its queue, Modes.Queue, served by long-lived workers).
func TestDriverConformance(t *testing.T) {
	var mu sync.Mutex
	states := map[backend.Backend]string{} // each backend's state directory
	drivertest.Run(t, drivertest.Harness{
		New: func(t *testing.T) (backend.Backend, *store.Store) {
			st, err := store.Open(context.Background(), "file://"+t.TempDir()+"/store")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			state := t.TempDir()
			testproc.StopUnderAtCleanup(t, state)
			b, err := local.New(st, local.Options{StateDir: state, Exe: testbin.Path(t), Slots: 4, Grace: 2 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			states[b] = state
			mu.Unlock()
			return b, st
		},
		Observe: observe,
		KillMember: func(t *testing.T, b backend.Backend, st *store.Store, h *job.Handle) {
			mu.Lock()
			state := states[b]
			mu.Unlock()
			// A queued child's worker names itself in the claim of the child's lock file.
			var claim job.LocalProcess
			raw, err := os.ReadFile(filepath.Join(state, "jobs", h.JobID, "supervisor.lock"))
			if err != nil || json.Unmarshal(raw, &claim) != nil || claim.SupervisorPID <= 0 {
				t.Fatalf("the claim of %s: %q, %v", h.JobID, raw, err)
			}
			for _, pid := range findChildren(t, claim.SupervisorPID) {
				t.Cleanup(func() { syscall.Kill(-pid, syscall.SIGKILL) }) // the command outlives its worker
			}
			if err := syscall.Kill(claim.SupervisorPID, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
		},
	})
}
