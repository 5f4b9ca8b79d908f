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
	needSlurm(t)
	drivertest.Run(t, drivertest.Harness{
		New: func(t *testing.T) (backend.Backend, *store.Store) {
			b, st := newBackend(t, nil)
			return b, st
		},
		Observe: func(h *job.Handle, st *store.Store, b backend.Backend) drivertest.Job {
			return &engine.Job{Handle: h, Store: st, Backend: b}
		},
		Deadline: 120 * time.Second,
	})
}
