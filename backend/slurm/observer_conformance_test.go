package slurm_test

import (
	"testing"
	"time"

	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/backend/backendtest"
	"github.com/kinetic-run/kinetic/store"
)

// observerHarness is the harness of the Observer and Debugger suites: jobs on the test
// Slurm cluster, observed through the store as the engine would.
func observerHarness() backendtest.Harness {
	return backendtest.Harness{
		New: func(t *testing.T) (backend.Backend, *store.Store) {
			return newBackend(t, nil)
		},
		Observe:  observe,
		Deadline: 90 * time.Second,
	}
}

// TestObserverConformance: the shared Observer suite (List, logs at the source whole,
// tailed and followed, no logs for an unknown job) on Slurm.
func TestObserverConformance(t *testing.T) {
	needSlurm(t)
	backendtest.RunObserver(t, observerHarness())
}

// TestDebuggerConformance: the shared Debugger suite on Slurm, which relays a port of
// this machine to the job's node (Forwards).
func TestDebuggerConformance(t *testing.T) {
	needSlurm(t)
	backendtest.RunDebugger(t, backendtest.DebuggerHarness{Harness: observerHarness(), Forwards: true})
}
