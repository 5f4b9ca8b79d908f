// Package backend defines the small interface every place that can run jobs implements
// (this machine, a Kubernetes cluster), and the errors callers branch on. Everything
// durable about a job lives in the store; a backend only starts, observes, stops and
// cleans up what runs. backendtest is the conformance suite all backends pass.
package backend

import (
	"context"
	"errors"

	"github.com/kinetic-run/kinetic/job"
)

// Backend runs jobs whose handle and spec are already in the store.
//
// Implementations must:
//   - return from Submit quickly; the job runs on after the submitting process exits;
//   - never leave a job PENDING or RUNNING after whatever runs it is gone: report FAILED
//     with a reason a person can act on (killed supervisor, unpullable image, ...);
//   - report NOT_FOUND for a job they know nothing about;
//   - make Cancel and Cleanup idempotent, and Cancel of a finished job a no-op.
type Backend interface {
	// Name is the handle's backend field, e.g. "local" or "gke".
	Name() string
	// Submit starts the job.
	Submit(ctx context.Context, h *job.Handle) error
	// Status returns the job's state and, when FAILED, why.
	Status(ctx context.Context, h *job.Handle) (job.State, string, error)
	// Cancel stops the job: gracefully first, then forcibly after a grace period. It
	// returns once the job is terminal.
	Cancel(ctx context.Context, h *job.Handle) error
	// Cleanup removes what the backend holds for the job (processes, workspaces,
	// Kubernetes objects), stopping it first if it still runs. It never touches the store.
	Cleanup(ctx context.Context, h *job.Handle) error
}

// ErrUnavailable means the backend cannot be reached or used from here.
var ErrUnavailable = errors.New("backend unavailable")

// Queuer is implemented by backends that run the children of a batch from a queue served
// by a few long-lived workers, instead of starting something per child. Enqueue has the
// contract of Submit; parallelism bounds the batch's workers.
type Queuer interface {
	Enqueue(ctx context.Context, h *job.Handle, parallelism int) error
}

// Debugger is implemented by backends that can connect this machine to the debugger of
// a debug job (docs/debug.md). The engine waits for the runner's debug.json in the store
// (m: where debugpy listens, as seen from the worker) and then asks the backend for an
// address this machine can reach.
//
// Implementations must:
//   - return a host and port on this machine that reach m.Host:m.Port on the worker that
//     wrote m (host index m.HostIndex): the address itself when the worker is this
//     machine, a port-forward to the pod's port on a cluster;
//   - listen on localPort when it is not 0 (and fail, naming the port, if it is taken),
//     or on a free port when it is 0, if they forward at all; a backend that needs no
//     forward ignores localPort;
//   - keep the address working until stop is called or ctx ends, and make stop release
//     whatever they started (stop may be nil when there is nothing to release);
//   - wrap ErrUnavailable when the worker cannot be reached from here.
type Debugger interface {
	DebugEndpoint(ctx context.Context, h *job.Handle, m *job.DebugMarker, localPort int) (host string, port int, stop func(), err error)
}
