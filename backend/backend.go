// Package backend defines the small interface every place that can run jobs implements
// (this machine, a Kubernetes cluster), and the errors callers branch on. Everything
// durable about a job lives in the store; a backend only starts, observes, stops and
// cleans up what runs. backendtest is the conformance suite all backends pass.
package backend

import (
	"context"
	"errors"
	"io"
	"time"

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

// Group is a batch whose first attempts a Grouper runs as one unit.
type Group struct {
	ID          string
	Size        int // children 0..Size-1
	Parallelism int // at most this many run at once
}

// Grouper is implemented by backends that run the first attempts of a batch's children
// as one unit (a Kubernetes Indexed Job) instead of one object per child. StartGroup is
// called once, after the batch's template and inputs are in the store (batch/layout:
// its children are derived, nothing is written per input), with the handle every child
// is made from; the unit's member i writes child i's job (layout.ResolveMember) and runs
// it. Retries are submitted alone with Submit.
type Grouper interface {
	StartGroup(ctx context.Context, g Group, template *job.Handle) error
	// GroupDone returns the members of group gid that have ended (succeeded or failed)
	// as the unit records them, from one look at the unit: watching a batch of any size
	// costs O(1) requests per look. A unit that is gone gives nil and no error: its
	// members are then looked at one by one.
	GroupDone(ctx context.Context, gid string) (map[int]bool, error)
	// UnwrittenStatus is Status for member h whose job its pod has not written yet
	// (nothing of it is in the store, as a listing of the store showed): the unit's
	// view alone, without the store reads Status begins with.
	UnwrittenStatus(ctx context.Context, h *job.Handle) (job.State, string, error)
	// CleanupGroup removes the unit (its members' results stay in the store).
	CleanupGroup(ctx context.Context, gid string) error
}

// GroupChooser is implemented by Groupers that run only some batches as units: CanGroup
// says whether the batch whose children would have handle h and spec can be one (its
// children are written and submitted one by one otherwise).
type GroupChooser interface {
	CanGroup(h *job.Handle, spec *job.Spec) bool
}

// Releaser is implemented by backends whose jobs keep holding what they ran on after
// they end: a multi-host job's pods must not exit (they would be restarted), so they
// hold their slice until cleanup. Release frees it and keeps what inspection needs (the
// object, the store); it is idempotent and a no-op for a job that has not ended. A batch
// releases each child once it sees it end, so that max_concurrent bounds what the
// batch holds, not only what runs.
type Releaser interface {
	Release(ctx context.Context, h *job.Handle) error
}

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
var ErrNoLogs = errors.New("no logs at the source")

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
