package batch

import (
	"context"

	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/engine"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
)

// Engine is what a batch asks of the engine, and all it asks: plan a call once (its
// children are submitted from the template), open the store, find a job and the
// backend of a job, read many jobs' rows through the listing index, and remove a
// tombstone. *engine.Engine implements it; the engine imports nothing of this package
// (it finds derived children through engine.Unwritten, which this package registers).
type Engine interface {
	PrepareTemplate(ctx context.Context, req *engine.SubmitRequest) (*engine.Template, error)
	Config() *config.Resolved
	Store(ctx context.Context, url string) (*store.Store, error)
	Attach(ctx context.Context, id, storeURL string) (*engine.Job, error)
	BackendFor(h *job.Handle, st *store.Store) (backend.Backend, error)
	Rows(ctx context.Context, storeURL string, ids []string, withStatus bool) ([]engine.Row, error)
	RemoveTombstone(ctx context.Context, id, storeURL string) error
}

var _ Engine = (*engine.Engine)(nil)

// engineBackend is a backend as the engine runs its jobs.
type engineBackend = backend.Backend
