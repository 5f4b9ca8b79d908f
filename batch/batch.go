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
	"github.com/kinetic-run/kinetic/internal/calltrace"
	"io"
	"os"
	"sync"
	"time"

	"github.com/kinetic-run/kinetic/batch/driver"
	"github.com/kinetic-run/kinetic/batch/layout"
	"github.com/kinetic-run/kinetic/engine"
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
	// InputsPath is a file of length-prefixed (8-byte big-endian) pickles of
	// (args, kwargs), one per input.
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
	inputs := req.Inputs
	if req.InputsPath != "" {
		f, err := os.Open(req.InputsPath)
		if err != nil {
			return nil, fmt.Errorf("inputs: %w", err)
		}
		inputs, err = ReadInputs(f)
		f.Close()
		if err != nil {
			return nil, err
		}
	}
	// Plan once: everything but the arguments is shared.
	t, err := e.PrepareTemplate(ctx, &req.Template)
	if err != nil {
		return nil, err
	}
	calltrace.Mark("batch.planned", "")
	maxConc := req.MaxConcurrent
	if maxConc <= 0 {
		maxConc = 64
	}
	gid := job.NewGroupID()
	m := Manifest{
		GroupID: gid, Name: req.Name, Tags: req.Tags, FuncName: t.Handle.FuncName, Accelerator: t.Handle.Accelerator,
		Backend: t.Handle.Backend, Store: t.Store.URL(), CreatedAt: time.Now().UTC().Format(time.RFC3339Nano),
		TotalExpected: len(inputs), MaxConcurrent: maxConc, Retries: req.Retries, FailFast: req.FailFast,
		Children: []Child{},
	}
	if m.Tags == nil {
		m.Tags = map[string]string{}
	}
	b := &Batch{e: e, st: t.Store, manifest: m, done: make(chan struct{})}
	s := &scheduler{b: b, tmpl: t, inputs: inputs, maxConcurrent: maxConc, retries: req.Retries, failFast: req.FailFast, cancelRunning: req.CancelRunningOnFail}
	d, _ := t.Backend.(driver.Driver)
	var modes driver.Modes
	if d != nil {
		modes = d.Modes(t.Handle, t.Spec())
	}
	s.driver, s.queued = d, modes.Queue
	grouped := modes.Unit
	if grouped && len(inputs) > 0 {
		// O(1) writes: the template and the inputs, then the manifest; each child's
		// job is written by its pod (layout, derived.go).
		if err := writeDerived(ctx, t, gid, inputs); err != nil {
			t.Store.DeletePrefix(context.WithoutCancel(ctx), layout.Prefix(gid))
			return nil, err
		}
		b.manifest.Derived, b.manifest.SubmissionComplete = true, true
		calltrace.Mark("batch.inputs.written", gid)
		// An empty input is one the SDK could not pickle: a submission failure at its
		// index, and no job (its derived job is marked removed before anything runs).
		for i, in := range inputs {
			if len(in) > 0 {
				continue
			}
			if err := layout.MarkGone(ctx, t.Store, gid, i); err != nil {
				t.Store.DeletePrefix(context.WithoutCancel(ctx), layout.Prefix(gid))
				return nil, err
			}
			for len(b.manifest.Children) < i {
				b.manifest.Children = append(b.manifest.Children, Child{Index: len(b.manifest.Children)}) // derived
			}
			b.manifest.Children = append(b.manifest.Children, Child{Index: i, SubmissionError: fmt.Sprintf("input %d could not be pickled, so it was not submitted", i)})
		}
	}
	if err := b.writeManifest(ctx); err != nil {
		t.Store.DeletePrefix(context.WithoutCancel(ctx), layout.Prefix(gid))
		return nil, err
	}
	calltrace.Mark("batch.manifest.written", gid)
	if req.OnRecorded != nil {
		req.OnRecorded(gid, t.Store.URL(), false)
	}
	if grouped && len(inputs) > 0 {
		// One object in the cluster for the whole batch, made after everything its
		// pods read.
		g := driver.Group{ID: gid, Size: len(inputs), Parallelism: maxConc}
		if err := d.StartGroup(ctx, g, t.Handle); err != nil {
			t.Store.DeletePrefix(context.WithoutCancel(ctx), layout.Prefix(gid))
			return nil, err
		}
		s.grouped = true
		calltrace.Mark("batch.started", gid)
		if req.OnRecorded != nil {
			req.OnRecorded(gid, t.Store.URL(), true)
		}
	}
	return s, nil
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
