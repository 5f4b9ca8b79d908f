// Package batch owns batches (run_async_map): one function over many inputs, planned
// once (engine.Template), its children written or derived in the store under groups/ID/
// (package batch/layout: the manifest, the children's entries, the template and inputs
// of derived children, the collection records), submitted in the background (the
// scheduler), watched, read, collected, cancelled, cleaned up and listed from anywhere
// the store is reachable. It asks the engine through Engine and a backend through
// backend/driver.Driver, the way gocloud.dev/blob asks its driver; the engine imports
// nothing of it.
package batch

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/kinetic-run/kinetic/batch/driver"
	"github.com/kinetic-run/kinetic/batch/layout"
	"github.com/kinetic-run/kinetic/engine"
	"github.com/kinetic-run/kinetic/internal/calltrace"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
)

// Manifest is groups/{id}/manifest.json.
type Manifest = layout.Manifest

// Child is one input of a batch. Its job is the last of its attempts.
type Child = layout.Child

// MapRequest fans one function out over many inputs: one child job per input.
type MapRequest struct {
	// Template is the call shared by every child: the pickled function in Payload (or
	// PayloadPath), and the options (accelerator, python, config, ...).
	Template engine.SubmitRequest `json:"template"`
	// InputsPath is a file of the pickles of (args, kwargs), one per input, in the
	// encoding of the store's groups/ID/inputs.bin (layout.InputsFile: the SDK writes
	// it, the engine copies it as it is), or length-prefixed (8-byte big-endian), as
	// SDKs before issue 48 wrote it (read whole).
	InputsPath string   `json:"inputs_path,omitempty"`
	Inputs     [][]byte `json:"-"`
	// MaxConcurrent bounds the children not yet finished (0 = 64).
	MaxConcurrent int `json:"max_concurrent,omitempty"`
	// Retries resubmits a failed child as a new attempt, up to this many times.
	Retries int `json:"retries,omitempty"`
	// FailFast stops submitting at the first final failure and cancels the children
	// that have not started; with CancelRunningOnFail the running ones too.
	FailFast            bool              `json:"fail_fast,omitempty"`
	CancelRunningOnFail bool              `json:"cancel_running_on_fail,omitempty"`
	Name                string            `json:"name,omitempty"`
	Tags                map[string]string `json:"tags,omitempty"`
	// OnRecorded, if set, is called once the batch's manifest is in the store, before
	// its unit starts and before Map returns (running false), and again once a unit that
	// runs every input without this process has started (running true): a caller that
	// dies in between leaves a batch that exists but needs it, and its client must be
	// told which, and whether the batch runs on.
	OnRecorded func(groupID, store string, running bool) `json:"-"`
}

// ReadInputs splits a length-prefixed inputs file.
func ReadInputs(r io.Reader) ([][]byte, error) {
	var out [][]byte
	var hdr [8]byte
	for {
		if _, err := io.ReadFull(r, hdr[:]); err == io.EOF {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("inputs: truncated length: %w", err)
		}
		n := binary.BigEndian.Uint64(hdr[:])
		if n > 1<<34 {
			return nil, fmt.Errorf("inputs: input %d claims %d bytes", len(out), n)
		}
		b := make([]byte, n)
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, fmt.Errorf("inputs: input %d truncated: %w", len(out), err)
		}
		out = append(out, b)
	}
}

// Batch is a batch being submitted by this process.
type Batch struct {
	e  Engine
	st *store.Store

	mu       sync.Mutex
	manifest Manifest
	done     chan struct{}
	cancel   context.CancelFunc
}

// Map validates the template, writes the manifest and starts submitting in the
// background; it returns at once. Bad input for the whole batch (an unknown accelerator,
// an unreadable payload) fails here; a failure of one input is recorded at its index.
// Submission outlives ctx's cancellation (Stop ends it), not its values.
func Map(ctx context.Context, e Engine, req *MapRequest) (*Batch, error) {
	s, err := newScheduler(ctx, e, req)
	if err != nil {
		return nil, err
	}
	b := s.b
	bctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	b.cancel = cancel
	go func() {
		defer close(b.done)
		defer cancel()
		defer s.release()
		s.run(bctx)
	}()
	return b, nil
}

// newScheduler plans the batch once, writes its manifest and, on a driver that runs
// units, starts the batch's unit: everything before the first child.
func newScheduler(ctx context.Context, e Engine, req *MapRequest) (*scheduler, error) {
	if req.MaxConcurrent < 0 || req.Retries < 0 {
		return nil, fmt.Errorf("max_concurrent %d, retries %d: max_concurrent must be at least 1 (0 means 64) and retries 0 or more", req.MaxConcurrent, req.Retries)
	}
	in, err := openInputs(req)
	if err != nil {
		return nil, err
	}
	s, err := prepare(ctx, e, req, in)
	if err != nil {
		in.close()
		return nil, err
	}
	s.release = in.close // a retry reads its input again, unit or not
	return s, nil
}

// prepare is newScheduler's steps: plan, make the batch, write it (its unit's inputs
// when its driver runs units), record it, start its unit.
func prepare(ctx context.Context, e Engine, req *MapRequest, in *openedInputs) (*scheduler, error) {
	// Plan once: everything but the arguments is shared.
	t, err := e.PrepareTemplate(ctx, &req.Template)
	if err != nil {
		return nil, err
	}
	calltrace.Mark("batch.planned", "")
	s := newBatchScheduler(e, req, t, in)
	unit := s.grouped && in.Len() > 0
	s.grouped = false // until its unit starts
	gid := s.b.manifest.GroupID
	undo := func() { t.Store.DeletePrefix(context.WithoutCancel(ctx), layout.Prefix(gid)) }
	if unit {
		if err := s.writeUnit(ctx, in); err != nil {
			undo()
			return nil, err
		}
	}
	if err := s.b.writeManifest(ctx); err != nil {
		undo()
		return nil, err
	}
	calltrace.Mark("batch.manifest.written", gid)
	if req.OnRecorded != nil {
		req.OnRecorded(gid, t.Store.URL(), false)
	}
	if unit {
		if err := s.startUnit(ctx, req); err != nil {
			undo()
			return nil, err
		}
	}
	return s, nil
}

// newBatchScheduler makes the batch of req planned as t (its manifest, in memory) and
// its scheduler, with the modes of its backend's driver.
func newBatchScheduler(e Engine, req *MapRequest, t *engine.Template, in inputs) *scheduler {
	maxConc := req.MaxConcurrent
	if maxConc <= 0 {
		maxConc = 64
	}
	m := Manifest{
		GroupID: job.NewGroupID(), Name: req.Name, Tags: req.Tags, FuncName: t.Handle.FuncName, Accelerator: t.Handle.Accelerator,
		Backend: t.Handle.Backend, Store: t.Store.URL(), CreatedAt: time.Now().UTC().Format(time.RFC3339Nano),
		TotalExpected: in.Len(), MaxConcurrent: maxConc, Retries: req.Retries, FailFast: req.FailFast,
		Children: []Child{},
	}
	if m.Tags == nil {
		m.Tags = map[string]string{}
	}
	b := &Batch{e: e, st: t.Store, manifest: m, done: make(chan struct{})}
	s := &scheduler{b: b, tmpl: t, inputs: in, maxConcurrent: maxConc, retries: req.Retries, failFast: req.FailFast, cancelRunning: req.CancelRunningOnFail}
	s.driver, _ = t.Backend.(driver.Driver)
	if s.driver != nil {
		modes := s.driver.Modes(t.Handle, t.Spec())
		s.queued, s.grouped = modes.Queue, modes.Unit
	}
	return s
}

// writeUnit writes what the batch's unit reads, O(1) writes whatever its size: the
// template and the inputs as they are encoded (each child's job is written by its pod,
// layout, derived.go). An empty input is one the SDK could not pickle: a submission
// failure at its index, and no job (its derived job is marked removed before anything
// runs).
func (s *scheduler) writeUnit(ctx context.Context, in *openedInputs) error {
	b, t, gid := s.b, s.tmpl, s.b.manifest.GroupID
	if err := writeDerived(ctx, t, gid, in.Encoded()); err != nil {
		return err
	}
	b.manifest.Derived, b.manifest.SubmissionComplete = true, true
	calltrace.Mark("batch.inputs.written", gid)
	for _, i := range in.empty {
		if err := layout.MarkGone(ctx, t.Store, gid, i); err != nil {
			return err
		}
		for len(b.manifest.Children) < i {
			b.manifest.Children = append(b.manifest.Children, Child{Index: len(b.manifest.Children)}) // derived
		}
		b.manifest.Children = append(b.manifest.Children, Child{Index: i, SubmissionError: fmt.Sprintf("input %d could not be pickled, so it was not submitted", i)})
	}
	return nil
}

// startUnit starts the batch's unit: one object in the cluster for the whole batch,
// made after everything its pods read.
func (s *scheduler) startUnit(ctx context.Context, req *MapRequest) error {
	gid, st := s.b.manifest.GroupID, s.tmpl.Store
	g := driver.Group{ID: gid, Size: s.inputs.Len(), Parallelism: s.maxConcurrent}
	if err := s.driver.StartGroup(ctx, g, s.tmpl.Handle); err != nil {
		return err
	}
	s.grouped = true
	calltrace.Mark("batch.started", gid)
	if req.OnRecorded != nil {
		req.OnRecorded(gid, st.URL(), true)
	}
	return nil
}

// writeManifest saves the manifest as it is now.
func (b *Batch) writeManifest(ctx context.Context) error {
	b.mu.Lock()
	b.manifest.Heartbeat = time.Now().UTC()
	data, err := json.MarshalIndent(b.manifest, "", " ")
	b.mu.Unlock()
	if err != nil {
		return err
	}
	return b.st.Put(ctx, layout.ManifestKey(b.manifest.GroupID), data)
}

// Done is closed when submission (and, with retries or fail_fast, supervision) is over.
func (b *Batch) Done() <-chan struct{} { return b.done }

// GroupID is the batch's ID.
func (b *Batch) GroupID() string { return b.manifest.GroupID }

// Store is the URL of the store the batch is written to.
func (b *Batch) Store() string { return b.manifest.Store }

// Stop ends submission: no more children are started (fail_fast, cancel).
func (b *Batch) Stop() { b.cancel() }
