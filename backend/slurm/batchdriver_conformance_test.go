package slurm_test

import (
	"testing"
	"time"

	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/batch/driver/drivertest"
	"github.com/kinetic-run/kinetic/engine"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
)

// TestDriverConformance: the Slurm backend passes the batch driver's suite against the
// real Slurm the tests start (a batch is one job array, Modes.Unit).
func TestDriverConformance(t *testing.T) {
	c := needSlurm(t)
	drivertest.Run(t, drivertest.Harness{
		New: func(t *testing.T) (backend.Backend, *store.Store) {
			b, st := newBackend(t, nil)
			return b, st
		},
		Observe: func(h *job.Handle, st *store.Store, b backend.Backend) drivertest.Job {
			return &engine.Job{Handle: h, Store: st, Backend: b}
		},
		KillMember: func(t *testing.T, b backend.Backend, st *store.Store, h *job.Handle) {
			// SIGKILL to every process of the member's task (its array is named after
			// the batch), so that nothing of it reports.
			if out, err := c.Run("scancel", "--signal=KILL", "--full", "--name="+h.K8sName); err != nil {
				t.Fatalf("scancel: %v: %s", err, out)
			}
		},
		Deadline: 120 * time.Second,
	})
}
