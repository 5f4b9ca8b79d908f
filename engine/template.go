package engine

import (
	"context"
	"errors"
	"fmt"
	"github.com/kinetic-run/kinetic/internal/calltrace"
	"os"
	"sync/atomic"
	"time"

	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
)

// Template is one call planned once and submitted many times with different arguments
// (package batch makes the children of a batch from one). PrepareTemplate validates the
// call, plans the shipped tree, the environment and the image, and uploads the tree;
// each Submit writes and starts one job that shares all of that, planning nothing
// again (its plan is the template's with its own ID, arguments and Data).
type Template struct {
	e   *Engine
	req SubmitRequest // the call, with its payload read
	// Handle is the handle planned for the call: every job's handle is made like it
	// (backend, cluster, accelerator, function name, store).
	Handle *job.Handle
	// Store is the store the jobs are written to.
	Store *store.Store
	// Backend runs the jobs; nil if it cannot be made here (each Submit then says why).
	Backend backend.Backend

	base *planned // the call as planned once (its tree and Data uploaded)
	// payload is the function pickle once a job has stored it (shared by all).
	payload atomic.Pointer[job.BlobRef]
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
	calltrace.Mark("tmpl.start", "")
	p, err := e.plan(ctx, &r)
	if err != nil {
		return nil, err
	}
	calltrace.Mark("tmpl.planned", "")
	if err := e.writeTree(ctx, p); err != nil {
		return nil, err
	}
	calltrace.Mark("tmpl.tree", "")
	// Every submission's Data (and the volumes), uploaded once.
	if err := e.uploadData(ctx, p); err != nil {
		return nil, err
	}
	t := &Template{e: e, req: r, Handle: p.Handle, Store: p.Store, base: p}
	if be, err := e.backendFor(p.Handle, p.Store); err == nil {
		t.Backend = be
	}
	return t, nil
}

// Spec is the spec planned for the call: every job's is made like it (its arguments
// aside).
func (t *Template) Spec() *job.Spec { return t.base.Spec }

// Instance says how one submission of a template is made.
type Instance struct {
	// Args is the pickled (args, kwargs) of the submission (required for KindPickle).
	Args []byte
	// Prepare, if set, is called with the job's handle before anything of the job is
	// written: it may set the handle's group fields (GroupID, GroupKind, GroupIndex)
	// and record the job elsewhere; an error stops the submission.
	Prepare func(ctx context.Context, h *job.Handle) error
	// Start, if set, starts the written job instead of its backend's Submit (a
	// batch's queue); it has Submit's contract.
	Start func(ctx context.Context, be backend.Backend, h *job.Handle, spec *job.Spec) error
}

// Submit writes and starts one job of the template. A failure after the first write
// removes what was written.
func (t *Template) Submit(ctx context.Context, in *Instance) (*Job, error) {
	if t.req.Kind == job.KindPickle && len(in.Args) == 0 {
		return nil, errors.New("this input could not be pickled on the client")
	}
	p := t.instance(job.NewID())
	if t.req.Kind == job.KindPickle {
		p.args = in.Args
		p.Spec.Data = job.DataFor(t.base.Spec.Data, in.Args) // its own input's, and the volumes
	}
	return t.e.submitPlanned(ctx, p, in)
}

// instance is the template's plan for a job with ID id: the handle and spec copied
// (the default output directory follows the ID), the function stored once for all, the
// Data uploaded already.
func (t *Template) instance(id string) *planned {
	jb := *t.base.Job
	p := *t.base
	p.Job = &jb
	h, spec := *t.base.Handle, *t.base.Spec
	if spec.OutputDir == defaultOutputDir(p.Store, h.JobID) {
		spec.OutputDir = defaultOutputDir(p.Store, id)
		h.OutputDir = spec.OutputDir
	}
	h.JobID, h.K8sName, spec.JobID = id, id, id
	h.CreatedAt = time.Now().UTC().Format(time.RFC3339Nano)
	p.Handle, p.Spec = &h, &spec
	p.shared, p.dataDone, p.Manifest = &t.payload, true, nil
	return &p
}

// PlannedJob is a job of a template planned and not written: what a caller that writes
// its jobs elsewhere (a batch's template in the store, made into jobs by the pods that
// run them) records.
type PlannedJob struct {
	Handle *job.Handle
	Spec   *job.Spec
	// Env are the captured environment values (never in the spec or the handle).
	Env map[string]string
	// DefaultOutputs: the spec's output directory is the default one of its job ID.
	DefaultOutputs bool
}

// WriteShared writes what every job of the template shares (the tree, the Data, the
// function, stored once) and returns a job with ID id planned from the call as it was
// planned once: nothing is planned again, and nothing of the job itself is written.
func (t *Template) WriteShared(ctx context.Context, id string) (*PlannedJob, error) {
	defaultOutputs := t.base.Spec.OutputDir == defaultOutputDir(t.base.Store, t.base.Handle.JobID)
	p := t.instance(id)
	p.args = []byte{} // non-nil: a job whose function is the template's shared blob
	if err := t.e.writeShared(ctx, p); err != nil {
		return nil, err
	}
	return &PlannedJob{Handle: p.Handle, Spec: p.Spec, Env: p.Env, DefaultOutputs: defaultOutputs}, nil
}

// BackendFor returns the backend that runs jobs like h over st.
func (e *Engine) BackendFor(h *job.Handle, st *store.Store) (backend.Backend, error) {
	return e.backendFor(h, st)
}
