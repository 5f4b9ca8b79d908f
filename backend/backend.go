// Package backend defines the small interface every place that can run jobs implements
// (this machine, a Kubernetes cluster, a Slurm cluster), and the errors callers branch
// on. Everything durable about a job lives in the store; a backend only starts,
// observes, stops and cleans up what runs. backendtest is the conformance suite all backends pass.
package backend

import (
	"context"
	"io"
	"time"

	"github.com/kinetic-run/kinetic/errs"
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
var ErrUnavailable = errs.New(errs.Unavailable, "backend unavailable")

// A backend that runs batches in its own way (a queue of workers, one unit for a whole
// batch) implements backend/driver.Driver beside Backend.

// Observer is implemented by backends that see their jobs where they run, apart from
// the store (Kubernetes: by label, and pods/log).
type Observer interface {
	// List lists the backend's jobs without reading the store. The handles may lack
	// fields only the store knows.
	List(ctx context.Context) ([]*job.Handle, error)
	// StreamLogs reads a running job's output at the source. ErrNoLogs means there is
	// nothing there (the pod is gone) and the caller should read the copy the runner
	// mirrors into the store.
	StreamLogs(ctx context.Context, h *job.Handle, follow bool, tailLines int, w io.Writer) error
}

// ErrNoLogs: the backend has no logs for the job at the source.
var ErrNoLogs = errs.New(errs.Unavailable, "no logs at the source")

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

// RunnerImager is implemented by backends whose pods start the runner of a runner image
// (the Kubernetes backends). When such a backend runs a job in an image Kinetic built,
// or in a user's image in the registry of image_registry, planning puts that runner
// into the image (image.Client.AddRunner) and records it in
// the handle (RunnerInImage), so the pods start it from their own image instead of
// copying it in first (docs/kubernetes.md, "The runner in the job's image").
type RunnerImager interface {
	// RunnerImage is the runner image the backend's pods start, resolved (published)
	// on first use.
	RunnerImage(ctx context.Context) (string, error)
}

// EndedCleaner is implemented by backends whose Cleanup looks first for something of
// the job still running: the engine cleans a job whose result was collected (so it has
// ended) with CleanupEnded instead, which does not look.
type EndedCleaner interface {
	CleanupEnded(ctx context.Context, h *job.Handle) error
}

// CleanupEnded cleans up h, a job known to have ended, with b's CleanupEnded if it has
// one, else with Cleanup.
func CleanupEnded(ctx context.Context, b Backend, h *job.Handle) error {
	if c, ok := b.(EndedCleaner); ok {
		return c.CleanupEnded(ctx, h)
	}
	return b.Cleanup(ctx, h)
}

// Pruner is implemented by backends that keep state on this machine which no job needs
// once it has ended (workspaces, environments): `kinetic prune` removes it.
//
// Implementations must remove nothing a job that has not ended may use, and nothing
// used (by their own measure) more recently than OlderThan; with DryRun they remove
// nothing and report what they would.
type Pruner interface {
	Prune(ctx context.Context, o PruneOptions) ([]Freed, error)
}

// PruneOptions say what a prune may remove.
type PruneOptions struct {
	OlderThan time.Duration
	DryRun    bool
}

// Freed is one thing a prune removed (or, with DryRun, would): its kind ("workspace",
// "environment", "tombstone", "output directory"), where it was and its size.
type Freed struct {
	Kind  string `json:"kind"`
	Path  string `json:"path"`
	Bytes int64  `json:"bytes"`
}
