package local_test

import (
	"testing"

	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/backend/backendtest"
	"github.com/kinetic-run/kinetic/store"
)

// TestDebuggerConformance: the local backend passes backend.Debugger's suite. Its jobs
// run on this machine, so it forwards nothing (Forwards false). It does not implement
// backend.Observer (a local job's output is the store's copy, which the engine reads),
// so RunObserver is not run here.
func TestDebuggerConformance(t *testing.T) {
	backendtest.RunDebugger(t, backendtest.DebuggerHarness{Harness: backendtest.Harness{
		New:     func(t *testing.T) (backend.Backend, *store.Store) { return newLocal(t, 4) },
		Observe: observe,
	}})
}
