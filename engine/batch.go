package engine

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
)

// MapRequest fans one function out over many inputs: one child job per input.
type MapRequest struct {
	// Template is the call shared by every child: the pickled function in Payload (or
	// PayloadPath), and the options (accelerator, python, config, ...).
	Template SubmitRequest
	// InputsPath is a file of length-prefixed (8-byte big-endian) pickles of
	// (args, kwargs), one per input.
	InputsPath string
	Inputs     [][]byte
	// MaxConcurrent bounds the children not yet finished (0 = 64).
	MaxConcurrent int
	// Retries resubmits a failed child as a new attempt, up to this many times.
	Retries int
	// FailFast stops submitting and cancels what runs at the first final failure.
	FailFast bool
	Name     string
	Tags     map[string]string
}

// Manifest is groups/{id}/manifest.json.
type Manifest struct {
	GroupID       string            `json:"group_id"`
	Name          string            `json:"name,omitempty"`
	Tags          map[string]string `json:"tags"`
	FuncName      string            `json:"func_name"`
	Accelerator   string            `json:"accelerator"`
	Backend       string            `json:"backend"`
	Store         string            `json:"store"`
	CreatedAt     string            `json:"created_at"`
	TotalExpected int               `json:"total_expected"`
	MaxConcurrent int               `json:"max_concurrent"`
	Retries       int               `json:"retries"`
	FailFast      bool              `json:"fail_fast"`
	// SubmissionComplete is set once every input was submitted (or failed to be).
	SubmissionComplete bool `json:"submission_complete"`
	// Stopped says why submission stopped early ("fail_fast", "cancelled"), if it did.
	Stopped string `json:"stopped,omitempty"`
	// Settled is set once the submitter has no more retries to make.
	Settled  bool    `json:"settled,omitempty"`
	Children []Child `json:"children"`
}

// Child is one input of a batch. Its job is the last of its attempts.
type Child struct {
	Index           int      `json:"index"`
	JobID           string   `json:"job_id,omitempty"`
	Attempts        []string `json:"attempts,omitempty"`
	SubmissionError string   `json:"submission_error,omitempty"`
}

// childKey is where a child's entry is written before its job is submitted, so a
// submitter killed at any moment leaves every submitted child findable.
func childKey(gid string, i int) string { return fmt.Sprintf("groups/%s/children/%08d.json", gid, i) }
func childrenPrefix(gid string) string  { return "groups/" + gid + "/children/" }

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

// Batch is a running or finished fan-out, as seen from its submitter or from anywhere.
type Batch struct {
	e  *Engine
	st *store.Store

	base   *job.Spec // planned once for every child
	root   string    // the shipped root, recorded in every child's handle
	queued bool      // the backend queues children (backend.Queuer)
	// grouped: the backend runs first attempts as one unit started by Map (backend.Grouper)
	grouped bool
	payload atomic.Pointer[job.BlobRef] // the function pickle, once stored

	mu       sync.Mutex
	manifest Manifest
	done     chan struct{}
	cancel   context.CancelFunc
}

// Map validates the template, writes the manifest and starts submitting in the
// background; it returns at once. Bad input for the whole batch (an unknown accelerator,
// an unreadable payload) fails here; a failure of one input is recorded at its index.
func (e *Engine) Map(ctx context.Context, req *MapRequest) (*Batch, error) {
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
	tmpl := req.Template
	if tmpl.PayloadPath != "" {
		b, err := os.ReadFile(tmpl.PayloadPath)
		if err != nil {
			return nil, fmt.Errorf("payload: %w", err)
		}
		tmpl.Payload, tmpl.PayloadPath = b, ""
	}
	// Plan once, with the first input: everything but the arguments is shared.
	probe := tmpl
	probe.Args = []byte{0}
	p, err := e.plan(ctx, &probe)
	if err != nil {
		return nil, err
	}
	if err := e.writeTree(ctx, p); err != nil {
		return nil, err
	}
	if req.MaxConcurrent <= 0 {
		req.MaxConcurrent = 64
	}
	gid := job.NewGroupID()
	m := Manifest{
		GroupID: gid, Name: req.Name, Tags: req.Tags, FuncName: p.handle.FuncName, Accelerator: p.handle.Accelerator,
		Backend: p.handle.Backend, Store: p.st.URL(), CreatedAt: time.Now().UTC().Format(time.RFC3339Nano),
		TotalExpected: len(inputs), MaxConcurrent: req.MaxConcurrent, Retries: req.Retries, FailFast: req.FailFast,
		Children: []Child{},
	}
	if m.Tags == nil {
		m.Tags = map[string]string{}
	}
	b := &Batch{e: e, st: p.st, manifest: m, done: make(chan struct{})}
	if err := b.writeManifest(ctx); err != nil {
		return nil, err
	}
	bctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	b.cancel = cancel
	b.base, b.root = p.spec, p.root
	if be, err := e.backendFor(p.handle, p.st); err == nil {
		_, b.queued = be.(backend.Queuer)
		if gr, ok := be.(backend.Grouper); ok && len(inputs) > 0 {
			// One object in the cluster for the whole batch, made before any child.
			g := backend.Group{ID: gid, Size: len(inputs), Parallelism: req.MaxConcurrent}
			if err := gr.StartGroup(ctx, g, p.handle); err != nil {
				cancel()
				p.st.DeletePrefix(context.WithoutCancel(ctx), "groups/"+gid+"/")
				return nil, err
			}
			b.grouped = true
		}
	}
	go b.submitAll(bctx, &tmpl, inputs, req)
	return b, nil
}

func (b *Batch) writeManifest(ctx context.Context) error {
	b.mu.Lock()
	data, err := json.MarshalIndent(b.manifest, "", " ")
	b.mu.Unlock()
	if err != nil {
		return err
	}
	return b.st.Put(ctx, store.GroupManifestKey(b.manifest.GroupID), data)
}

// Done is closed when submission (and, with retries, supervision) is over.
func (b *Batch) Done() <-chan struct{} { return b.done }

// GroupID is the batch's ID.
func (b *Batch) GroupID() string { return b.manifest.GroupID }

// Stop ends submission: no more children are started (fail_fast, cancel).
func (b *Batch) Stop() { b.cancel() }

// submitAll submits every input, keeping at most MaxConcurrent children unfinished,
// resubmitting failed children while they have retries left, and with FailFast
// stopping at the first final failure.
func (b *Batch) submitAll(ctx context.Context, tmpl *SubmitRequest, inputs [][]byte, req *MapRequest) {
	defer close(b.done)
	gid := b.manifest.GroupID
	type running struct {
		index, attempt int
		j              *Job
	}
	var (
		active   []running
		failed   bool
		stopped  string
		lastSave time.Time
	)
	save := func(force bool) {
		if force || time.Since(lastSave) > 500*time.Millisecond {
			b.writeManifest(context.WithoutCancel(ctx))
			lastSave = time.Now()
		}
	}
	submit := func(i, attempt int) *Job {
		r := *tmpl
		r.Args = inputs[i]
		b.mu.Lock()
		var prev []string
		if i < len(b.manifest.Children) {
			prev = b.manifest.Children[i].Attempts
		}
		b.mu.Unlock()
		r.group = &groupInfo{id: gid, index: i, attempts: prev, base: b.base, root: b.root, parallelism: req.MaxConcurrent, grouped: b.grouped, payload: &b.payload}
		j, err := b.e.Submit(ctx, &r)
		b.mu.Lock()
		for len(b.manifest.Children) <= i {
			b.manifest.Children = append(b.manifest.Children, Child{Index: len(b.manifest.Children)})
		}
		c := &b.manifest.Children[i]
		if err != nil {
			c.SubmissionError = err.Error()
		} else {
			c.JobID = j.Handle.JobID
			c.Attempts = append(c.Attempts, j.Handle.JobID)
			c.SubmissionError = ""
		}
		b.mu.Unlock()
		return j
	}
	// reap looks at up to limit of the oldest active children (they tend to finish
	// first), resubmits the failed ones that have retries left, and drops the final ones.
	reap := func(limit int) {
		keep := active[:0]
		for n, a := range active {
			if n >= limit {
				keep = append(keep, a)
				continue
			}
			state, _, err := a.j.Status(ctx)
			if err != nil || !state.Terminal() {
				keep = append(keep, a)
				continue
			}
			if state == job.Failed && a.attempt < req.Retries && stopped == "" {
				if j := submit(a.index, a.attempt+1); j != nil {
					keep = append(keep, running{a.index, a.attempt + 1, j})
					save(true)
				}
				continue
			}
			if state == job.Failed {
				failed = true
			}
		}
		active = keep
	}
	// A queueing backend bounds the batch's concurrency with its workers: children
	// wait in its queue at no cost, so submission need not wait for them.
	gate := req.MaxConcurrent
	if b.queued || b.grouped {
		gate = len(inputs) + 1
	}
	watch := req.Retries > 0 || req.FailFast
	total := len(inputs)
	p := newPoller()
	if b.grouped && !watch {
		// The backend's group unit already runs every index and nothing is watched
		// here: write the children concurrently, so a remote store's latency per
		// object is paid in parallel rather than once per child in turn.
		var saveMu sync.Mutex
		g := new(errgroup.Group)
		g.SetLimit(16)
		for i := 0; i < len(inputs); i++ {
			if ctx.Err() != nil {
				stopped = "cancelled"
				break
			}
			g.Go(func() error {
				submit(i, 0)
				saveMu.Lock()
				save(false)
				saveMu.Unlock()
				return nil
			})
		}
		g.Wait()
		inputs = inputs[:0] // all handled: skip the sequential loop
	}
	for i := 0; i < len(inputs); i++ {
		for len(active) >= gate && ctx.Err() == nil {
			reap(len(active))
			if len(active) >= gate {
				p.wait(ctx)
			}
		}
		if req.FailFast && failed {
			stopped = "fail_fast"
		}
		if ctx.Err() != nil && stopped == "" {
			stopped = "cancelled"
		}
		if stopped != "" {
			break
		}
		if j := submit(i, 0); j != nil {
			active = append(active, running{i, 0, j})
		}
		save(false)
		if watch && i%16 == 0 {
			reap(32)
		}
	}
	b.mu.Lock()
	b.manifest.SubmissionComplete = true
	b.manifest.Stopped = stopped
	// Inputs left unsubmitted by fail_fast or cancel are accounted for, not silent.
	for i := range b.manifest.Children {
		if c := &b.manifest.Children[i]; c.JobID == "" && c.SubmissionError == "" {
			c.SubmissionError = "not submitted: the batch was stopped (" + stopped + ")"
		}
	}
	for i := len(b.manifest.Children); i < total; i++ {
		b.manifest.Children = append(b.manifest.Children, Child{Index: i, SubmissionError: "not submitted: the batch was stopped (" + stopped + ")"})
	}
	b.mu.Unlock()
	save(true)
	if stopped == "fail_fast" {
		b.cancelChildren(context.WithoutCancel(ctx))
	}
	// With retries, keep watching until every child is final.
	for watch && len(active) > 0 && ctx.Err() == nil {
		reap(len(active))
		if req.FailFast && failed {
			b.cancelChildren(context.WithoutCancel(ctx))
			break
		}
		p.wait(ctx)
	}
	b.mu.Lock()
	b.manifest.Settled = true
	b.mu.Unlock()
	save(true)
}

type groupInfo struct {
	id       string
	index    int
	attempts []string // earlier attempts' job IDs
	base     *job.Spec
	root     string
	// parallelism bounds the workers a queueing backend gives the batch.
	parallelism int
	// grouped: first attempts join the group unit the backend started (backend.Grouper).
	grouped bool
	// payload is the function pickle once a child has stored it (shared by the batch).
	payload *atomic.Pointer[job.BlobRef]
}

// cancelChildren cancels every child that is not finished.
func (b *Batch) cancelChildren(ctx context.Context) {
	b.mu.Lock()
	ids := make([]string, 0, len(b.manifest.Children))
	for _, c := range b.manifest.Children {
		if c.JobID != "" {
			ids = append(ids, c.JobID)
		}
	}
	b.mu.Unlock()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for _, id := range ids {
		g.Go(func() error {
			if j, err := b.e.Attach(gctx, id, b.st.URL()); err == nil {
				j.Cancel(gctx)
			}
			return nil
		})
	}
	g.Wait()
}

// BatchView is a batch as read from the store: the manifest with the children
// submitted so far and each child's status.
type BatchView struct {
	Manifest
	Statuses []ChildStatus `json:"statuses"`
}

// ChildStatus is one child's current state.
type ChildStatus struct {
	Index  int         `json:"index"`
	Handle *job.Handle `json:"handle,omitempty"`
	Status job.State   `json:"status,omitempty"`
	Reason string      `json:"reason,omitempty"`
	Error  string      `json:"submission_error,omitempty"`
}

// ReadBatch reads a batch's manifest, merges the children recorded since its last
// write, and (withStatus) reads every child's status.
func (e *Engine) ReadBatch(ctx context.Context, gid, storeURL string, withStatus bool) (*BatchView, error) {
	if !job.ValidName(gid) {
		return nil, fmt.Errorf("%q is not a group ID (IDs look like grp-0123456789abcdefghijklm): %w", gid, ErrNotFound)
	}
	if storeURL == "" {
		storeURL = e.cfg.Get(config.Store)
	}
	st, err := e.Store(ctx, storeURL)
	if err != nil {
		return nil, err
	}
	var v BatchView
	if err := e.readManifest(ctx, st, gid, &v.Manifest, map[int]Child{}); err != nil {
		return nil, err
	}
	v.Statuses = make([]ChildStatus, len(v.Children))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(32)
	for i, c := range v.Children {
		v.Statuses[i] = ChildStatus{Index: c.Index, Error: c.SubmissionError}
		if c.JobID == "" {
			continue
		}
		g.Go(func() error {
			j, err := e.Attach(gctx, c.JobID, storeURL)
			if err != nil {
				v.Statuses[i].Status = job.NotFound
				return nil
			}
			v.Statuses[i].Handle = j.Handle
			if withStatus {
				state, reason, err := j.Status(gctx)
				if err != nil {
					return err
				}
				v.Statuses[i].Status, v.Statuses[i].Reason = state, reason
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return &v, nil
}

// readManifest reads a batch's manifest into m and, while submission is still going
// on, adds the children recorded one by one since it was saved (cache holds the entries
// already read, so each is read once).
func (e *Engine) readManifest(ctx context.Context, st *store.Store, gid string, m *Manifest, cache map[int]Child) error {
	raw, err := st.Get(ctx, store.GroupManifestKey(gid))
	if store.IsNotFound(err) {
		return fmt.Errorf("no batch %s in the store %s: %w", gid, st.URL(), ErrNotFound)
	}
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, m); err != nil {
		return fmt.Errorf("batch %s: manifest.json: %w", gid, err)
	}
	if m.SubmissionComplete {
		return nil
	}
	return e.mergeChildren(ctx, st, m, cache)
}

// mergeChildren adds the children written one by one since the manifest was saved.
func (e *Engine) mergeChildren(ctx context.Context, st *store.Store, m *Manifest, cache map[int]Child) error {
	objs, err := st.List(ctx, childrenPrefix(m.GroupID))
	if err != nil {
		return err
	}
	have := map[int]bool{}
	for _, c := range m.Children {
		if c.JobID != "" || c.SubmissionError != "" {
			have[c.Index] = true
		}
	}
	for _, o := range objs {
		name := o.Key[len(childrenPrefix(m.GroupID)):]
		i, err := strconv.Atoi(name[:len(name)-len(".json")])
		if err != nil || have[i] {
			continue
		}
		c, ok := cache[i]
		if !ok {
			raw, err := st.Get(ctx, o.Key)
			if err != nil {
				continue
			}
			if json.Unmarshal(raw, &c) != nil {
				continue
			}
			cache[i] = c
		}
		for len(m.Children) <= i {
			m.Children = append(m.Children, Child{Index: len(m.Children)})
		}
		m.Children[i] = c
	}
	sort.Slice(m.Children, func(a, b int) bool { return m.Children[a].Index < m.Children[b].Index })
	return nil
}

// CancelBatch cancels every unfinished child of a batch.
func (e *Engine) CancelBatch(ctx context.Context, gid, storeURL string) error {
	v, err := e.ReadBatch(ctx, gid, storeURL, true)
	if err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for _, c := range v.Statuses {
		if c.Handle == nil || c.Status.Terminal() {
			continue
		}
		g.Go(func() error {
			j, err := e.Attach(gctx, c.Handle.JobID, v.Store)
			if err != nil {
				return nil
			}
			return j.Cancel(gctx)
		})
	}
	return g.Wait()
}

// CleanupBatch cleans up the children (backend resources and/or store objects); with
// storeObjs the manifest goes too. Outputs stay.
func (e *Engine) CleanupBatch(ctx context.Context, gid, storeURL string, backendRes, storeObjs bool) error {
	v, err := e.ReadBatch(ctx, gid, storeURL, false)
	if err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for _, c := range v.Children {
		for _, id := range c.Attempts {
			g.Go(func() error {
				j, err := e.Attach(gctx, id, v.Store)
				if err != nil {
					return nil // already gone
				}
				return j.Cleanup(gctx, backendRes, storeObjs)
			})
		}
	}
	if err := g.Wait(); err != nil {
		return err
	}
	if backendRes {
		if err := e.cleanupGroupUnit(ctx, v); err != nil {
			return err
		}
	}
	if storeObjs {
		st, err := e.Store(ctx, v.Store)
		if err != nil {
			return err
		}
		return st.DeletePrefix(ctx, "groups/"+gid+"/")
	}
	return nil
}

// ListBatches returns the manifests in the store, newest first.
func (e *Engine) ListBatches(ctx context.Context, storeURL string) ([]Manifest, error) {
	if storeURL == "" {
		storeURL = e.cfg.Get(config.Store)
	}
	st, err := e.Store(ctx, storeURL)
	if err != nil {
		return nil, err
	}
	ids, err := st.ListDirs(ctx, "groups/")
	if err != nil {
		return nil, err
	}
	var out []Manifest
	for _, id := range ids {
		raw, err := st.Get(ctx, store.GroupManifestKey(id))
		if err != nil {
			continue
		}
		var m Manifest
		if json.Unmarshal(raw, &m) == nil {
			m.Children = nil
			out = append(out, m)
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].GroupID > out[b].GroupID })
	return out, nil
}

// WatchBatch reports each child once, as soon as it is final (or failed to be
// submitted), in completion order, while submission may still be going on. It returns
// when every input is accounted for. Only unfinished children are looked at again, so a
// large batch costs little to watch.
func (e *Engine) WatchBatch(ctx context.Context, gid, storeURL string, emit func(ChildStatus)) error {
	if storeURL == "" {
		storeURL = e.cfg.Get(config.Store)
	}
	st, err := e.Store(ctx, storeURL)
	if err != nil {
		return err
	}
	final := map[int]bool{}
	jobs := map[int]*Job{}
	seenChild := map[int]Child{}
	p := &poller{start: time.Now(), d: 10 * time.Millisecond}
	var (
		m        Manifest
		lastRead time.Time
		lastFull time.Time
	)
	for {
		// The manifest changes at most every half second while submitting and the
		// children's entries only grow: read them a few times a second, not every round.
		if lastRead.IsZero() || (!m.SubmissionComplete && time.Since(lastRead) > 200*time.Millisecond) || (m.Retries > 0 && !m.Settled && time.Since(lastRead) > 500*time.Millisecond) {
			m = Manifest{}
			if err := e.readManifest(ctx, st, gid, &m, seenChild); err != nil {
				return err
			}
			lastRead = time.Now()
		}
		// Children finish roughly in submission order: look at the oldest unfinished
		// ones each round, until a few are found still unfinished or one still waiting
		// (the ones after it are most likely waiting too), and at all of them every few
		// seconds.
		budget, full := 4, false
		if time.Since(lastFull) > 3*time.Second {
			budget, full, lastFull = 1<<30, true, time.Now()
		}
		progressed := false
		for _, c := range m.Children {
			if final[c.Index] {
				continue
			}
			if c.JobID == "" {
				if c.SubmissionError != "" {
					final[c.Index], progressed = true, true
					emit(ChildStatus{Index: c.Index, Error: c.SubmissionError})
				}
				continue
			}
			if budget <= 0 {
				continue
			}
			j := jobs[c.Index]
			if j == nil || j.Handle.JobID != c.JobID { // a new attempt replaces the old
				if j, err = e.Attach(ctx, c.JobID, storeURL); err != nil {
					continue // written a moment ago; next round
				}
				jobs[c.Index] = j
			}
			state, reason, err := j.Status(ctx)
			if err != nil {
				return err
			}
			if !state.Terminal() {
				if budget--; state == job.Pending && !full {
					budget = 0
				}
				continue
			}
			if state == job.Failed && len(c.Attempts) <= m.Retries && !m.Settled {
				continue // a retry may still come: the submitter decides
			}
			final[c.Index], progressed = true, true
			emit(ChildStatus{Index: c.Index, Handle: j.Handle, Status: state, Reason: reason})
		}
		if m.SubmissionComplete && len(final) >= len(m.Children) {
			return nil
		}
		if progressed {
			// A round that found children finished is followed by one soon, but not at
			// once: a look finds more of them per status read.
			p = &poller{start: time.Now(), d: 20 * time.Millisecond}
		}
		if err := p.wait(ctx); err != nil {
			return err
		}
	}
}

// cleanupGroupUnit removes the unit a Grouper backend ran the batch's first attempts in.
func (e *Engine) cleanupGroupUnit(ctx context.Context, v *BatchView) error {
	st, err := e.Store(ctx, v.Store)
	if err != nil {
		return err
	}
	ns := ""
	for _, c := range v.Children {
		if c.JobID != "" {
			if j, err := e.Attach(ctx, c.JobID, v.Store); err == nil {
				ns = j.Handle.Namespace
				break
			}
		}
	}
	be, err := e.backendFor(&job.Handle{Backend: v.Backend, Namespace: ns}, st)
	if err != nil {
		return err
	}
	if gr, ok := be.(backend.Grouper); ok {
		return gr.CleanupGroup(ctx, v.GroupID)
	}
	return nil
}
