// Package driver is what a backend implements to run batches, beside the job
// interface of package backend: package batch owns a batch (its layout, scheduling,
// watching, collecting, cancel and cleanup) and asks the backend only through Driver, the
// way gocloud.dev/blob asks a bucket's driver. It sits with the backend interface, below
// both package batch and the backends, and is a leaf (job and the standard library), so a
// backend implements it without linking package batch or the engine.
package driver

import (
	"context"
	"errors"
	"time"

	"github.com/kinetic-run/kinetic/job"
)

// Group is a batch whose first attempts a driver runs as one unit.
type Group struct {
	ID          string
	Size        int // children 0..Size-1
	Parallelism int // at most this many run at once
}

// Modes say how a driver runs the children of one batch.
type Modes struct {
	// Unit: the first attempts of the children run as one unit, started once by
	// StartGroup after the batch's template and inputs are in the store (batch/layout:
	// the children are derived, nothing is written per input); the unit's member i
	// writes child i's job (layout.ResolveMember) and runs it. Retries are submitted
	// alone.
	Unit bool
	// Queue: children submitted one by one (and retries) go to the driver's queue
	// (Enqueue), served by a few long-lived workers, instead of Submit. A child that
	// runs in a container is submitted alone all the same.
	Queue bool
}

// ErrUnsupported is what a method answers that its driver's Modes never ask for.
var ErrUnsupported = errors.New("not supported by this backend")

// Driver runs batches on a backend. A backend implements it beside backend.Backend;
// one that does not runs every child as a job of its own (Submit, one by one).
//
// Implementations must:
//   - say in Modes, without any request, how a batch whose children are made like h
//     and spec runs; package batch calls only the methods those modes need (the
//     others may return ErrUnsupported);
//   - give Enqueue the contract of backend.Backend.Submit (parallelism bounds the
//     batch's workers);
//   - make StartGroup idempotent for one group ID, GroupDone cost O(1) requests
//     whatever the group's size, and answer nil, nil from GroupDone for a unit that is
//     gone (its members are then looked at one by one);
//   - make Release and CleanupGroup idempotent; Release of a job that has not ended is
//     a no-op.
type Driver interface {
	// Modes says how the batch whose children have handle h and spec runs.
	Modes(h *job.Handle, spec *job.Spec) Modes
	// Enqueue hands job h (written to the store) to the driver's queue.
	Enqueue(ctx context.Context, h *job.Handle, parallelism int) error
	// StartGroup starts the unit of group g, every member made from template.
	StartGroup(ctx context.Context, g Group, template *job.Handle) error
	// GroupDone returns the members of group gid that have ended (succeeded or
	// failed) as the unit records them, from one look at the unit.
	GroupDone(ctx context.Context, gid string) (map[int]bool, error)
	// UnwrittenStatus is Status for member h whose job its pod has not written yet
	// (nothing of it is in the store, as a listing of the store showed): the unit's
	// view alone, without the store reads Status begins with.
	UnwrittenStatus(ctx context.Context, h *job.Handle) (job.State, string, error)
	// CleanupGroup removes the unit (its members' results stay in the store).
	CleanupGroup(ctx context.Context, gid string) error
	// Release frees what a job that ended still holds (a multi-host job's slice,
	// whose pods must not exit) and keeps what inspection needs; a batch releases each
	// child once it sees it end, so that max_concurrent bounds what the batch holds.
	Release(ctx context.Context, h *job.Handle) error
}

// Withdrawer is a Driver whose unit can be withdrawn before it runs anything. A batch
// whose submitter died between recording it and starting its unit (the engine killed
// during a map) is removed only if nothing of it runs; if its unit had started, the
// batch runs on and the submitter must say so, or a retry runs every input twice.
type Withdrawer interface {
	// WithdrawGroup makes sure that no member of group gid ever runs, unless its unit
	// was started already: then started is true and nothing is changed. It is called
	// only once whatever called StartGroup is gone.
	WithdrawGroup(ctx context.Context, gid string) (started bool, err error)
}

// Waker is a Driver that can tell a watch when members of a group may have ended, so
// that it looks then rather than at its next poll (the local backend: its workers append
// each input they finish to a file).
type Waker interface {
	// GroupWatch watches group gid's members end; nil where it cannot (the watch polls).
	GroupWatch(gid string) GroupWatch
}

// GroupWatch is a watch of a group's members ending.
type GroupWatch interface {
	// Sleep waits for d, for a member to end since the last Sleep, or for ctx to end
	// (its error).
	Sleep(ctx context.Context, d time.Duration) error
	// Close stops watching.
	Close()
}
