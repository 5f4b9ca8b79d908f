package engine

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"

	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
)

// Template is one call planned once and submitted many times with different arguments:
// the children of a batch (package batch schedules them). PrepareTemplate validates the
// call, plans the shipped tree, the environment and the image, and uploads the tree;
// each Submit writes and starts one job that shares all of that.
type Template struct {
	e   *Engine
	req SubmitRequest // the call, with its payload read
	// Handle is the handle planned for the call: every child's handle is made like it
	// (backend, cluster, accelerator, function name, store).
	Handle *job.Handle
	// Store is the store the children are written to.
	Store *store.Store
	// Backend runs the children; nil if it cannot be made here (each Submit then says
	// why).
	Backend backend.Backend

	shared childPlan
}

// childPlan is what a batch child takes from its template instead of planning it.
type childPlan struct {
	base *job.Spec // the tree, environment and image planned once
	root string    // the shipped root, recorded in every child's handle
	// payload is the function pickle once a child has stored it (shared by the batch).
	payload atomic.Pointer[job.BlobRef]
	// dataDone: base.Data are uploaded; each child takes the ones its input uses.
	dataDone bool
}

// PrepareTemplate plans req once for many submissions (Template.Submit). Bad input for
// every submission (an unknown accelerator, an unreadable payload) fails here. A
// KindPickle template's Payload is the pickled function alone; each submission brings
// its arguments.
func (e *Engine) PrepareTemplate(ctx context.Context, req *SubmitRequest) (*Template, error) {
	r := *req
	if r.PayloadPath != "" {
		b, err := os.ReadFile(r.PayloadPath)
		if err != nil {
			return nil, fmt.Errorf("payload: %w", err)
		}
		r.Payload, r.PayloadPath = b, ""
	}
	p, err := e.plan(ctx, &r, nil)
	if err != nil {
		return nil, err
	}
	if err := e.writeTree(ctx, p); err != nil {
		return nil, err
	}
	// The batch's Data (every input's, and the volumes), uploaded once.
	if err := e.uploadData(ctx, p); err != nil {
		return nil, err
	}
	t := &Template{e: e, req: r, Handle: p.handle, Store: p.st}
	t.shared.base, t.shared.root, t.shared.dataDone = p.spec, p.root, true
	if be, err := e.backendFor(p.handle, p.st); err == nil {
		t.Backend = be
	}
	return t, nil
}

// Spec is the spec planned for the call: every child's is made like it (its arguments
// aside).
func (t *Template) Spec() *job.Spec { return t.shared.base }

// Child says where one submission of a template stands in its batch and how its
// backend takes it.
type Child struct {
	// Args is the pickled (args, kwargs) of the input (required for KindPickle).
	Args    []byte
	GroupID string
	Index   int
	// Parallelism, when > 0, hands the job to the backend's queue (backend.Queuer),
	// bounding the batch's workers. A job that runs in a container is started alone.
	Parallelism int
	// Record, if set, is called with the job's handle before anything of the job is
	// written; an error stops the submission. A batch records its child there, so a
	// submitter killed at any moment leaves every submitted child findable.
	Record func(ctx context.Context, h *job.Handle) error
}

// Submit writes and starts one job of the template. A failure after the first write
// removes what was written.
func (t *Template) Submit(ctx context.Context, c *Child) (*Job, error) {
	r := t.req
	r.Args = c.Args
	p, err := t.e.plan(ctx, &r, &t.shared)
	if err != nil {
		return nil, err
	}
	return t.e.submitPlanned(ctx, p, c)
}

// BackendFor returns the backend that runs jobs like h over st.
func (e *Engine) BackendFor(h *job.Handle, st *store.Store) (backend.Backend, error) {
	return e.backendFor(h, st)
}
