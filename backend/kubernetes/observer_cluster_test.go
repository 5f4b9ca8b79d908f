package kubernetes_test

import (
	"testing"
	"time"

	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/backend/backendtest"
	"github.com/kinetic-run/kinetic/engine"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
)

// kubeHarness is the suites' harness on the real test cluster.
func kubeHarness() backendtest.Harness {
	return backendtest.Harness{
		New: func(t *testing.T) (backend.Backend, *store.Store) {
			b, st := newBackend(t, nil)
			return b, st
		},
		Observe: func(h *job.Handle, st *store.Store, b backend.Backend) backendtest.Job {
			return &engine.Job{Handle: h, Store: st, Backend: b}
		},
		Deadline: 3 * time.Minute,
	}
}

// TestObserverConformance: the Kubernetes backend passes backend.Observer's suite on
// the real test cluster (its jobs listed by label, their output read from pods/log).
func TestObserverConformance(t *testing.T) {
	shared(t)
	needCluster(t)
	backendtest.RunObserver(t, kubeHarness())
}

// TestDebuggerConformance: the Kubernetes backend passes backend.Debugger's suite on the
// real test cluster, through client-go port-forwards to the job's pod.
func TestDebuggerConformance(t *testing.T) {
	shared(t)
	needCluster(t)
	backendtest.RunDebugger(t, backendtest.DebuggerHarness{Harness: kubeHarness(), Forwards: true})
}
