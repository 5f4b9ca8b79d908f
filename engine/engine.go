// Package engine is the whole client side of Kinetic: plan → package → submit →
// observe. The CLI, the JSON-lines server behind the Python SDK, and the Go SDK are thin
// faces over it. It resolves configuration, validates everything before writing
// anything, writes the job's objects to the store, hands the job to its backend, and
// reads status, logs and results back from anywhere the store is reachable.
package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/engine/images"
	"github.com/kinetic-run/kinetic/engine/plan"
	"github.com/kinetic-run/kinetic/errs"
	"github.com/kinetic-run/kinetic/image"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/jobview"
	"github.com/kinetic-run/kinetic/store"
)

// ErrNotFound means a job ID names no job in the store.
var ErrNotFound = jobview.ErrNotFound

// Engine is the client side of Kinetic. It is safe for concurrent use.
type Engine struct {
	opts config.Options
	cfg  *config.Resolved
	// Exe is the kinetic binary the local backend starts (default: this process's).
	Exe string
	// Warn receives warnings meant for a person (secrets captured, ...).
	Warn func(string)
	// Notice receives ready-made notices for a person (dropped requirements, ...).
	Notice io.Writer
	// Bars draws progress bars for long work (uploads) on Notice: by default when stderr
	// is a terminal. Quiet says nothing of progress or notices (kinetic run --quiet).
	Bars, Quiet bool
	// LookOnly opens stores without creating them (store.OpenExisting): set by commands
	// that only look, so a file:// store that does not exist is store.ErrNoStore.
	LookOnly bool

	mu        sync.Mutex
	stores    map[string]*store.Store
	backends  map[string]backend.Backend
	factories map[string]BackendFactory
	images    images.Builders // per image builder, one Ensurer
	noticed   map[string]bool // notices already given (noticeOnce)
	pyOnce    sync.Once       // pathPython
	pyPath    string
	pyVers    map[string]string // pythonVersion, per interpreter
	custom    image.CustomPython
	unwritten Unwritten // WithUnwritten; nil finds none
}

// noticeOnce writes msg to Notice the first time this engine is asked to: a notice that
// would be the same for every job (a dropped jax, a GPU run on the CPU) is said once
// per session, not once per job.
func (e *Engine) noticeOnce(msg string) {
	if e.Notice == nil || msg == "" {
		return
	}
	e.mu.Lock()
	if e.noticed == nil {
		e.noticed = map[string]bool{}
	}
	seen := e.noticed[msg]
	e.noticed[msg] = true
	e.mu.Unlock()
	if !seen {
		io.WriteString(e.Notice, msg)
	}
}

// BackendFactory makes the backend that runs the jobs of one store.
type BackendFactory func(e *Engine, st *store.Store) (backend.Backend, error)

// RegisterBackend makes this engine's jobs whose handle names backend name run on what f
// makes (one per store, made on first use), instead of what the factory registered
// under name with backend.Register makes: fakes in tests, a preconfigured cluster in
// benchmarks. The name must still be registered (config accepts only registered names,
// and the registered factory still plans the job). Register before the first job uses
// the name.
func (e *Engine) RegisterBackend(name string, f BackendFactory) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.factories == nil {
		e.factories = map[string]BackendFactory{}
	}
	e.factories[name] = f
}

// New returns an engine with the configuration resolved from o, set up by opts.
func New(o config.Options, opts ...Option) (*Engine, error) {
	cfg, err := config.Resolve(o)
	if err != nil {
		return nil, err
	}
	e := &Engine{opts: o, cfg: cfg, stores: map[string]*store.Store{}, Notice: os.Stderr, Bars: stderrIsTerminal(), Warn: func(s string) { fmt.Fprintln(os.Stderr, "kinetic: warning:", s) }}
	for _, opt := range opts {
		opt(e)
	}
	return e, nil
}

// Config returns the engine's resolved configuration.
func (e *Engine) Config() *config.Resolved { return e.cfg }

// resolve returns the configuration for one call, with its explicit arguments on top.
func (e *Engine) resolve(args map[config.Key]string) (*config.Resolved, error) {
	if len(args) == 0 {
		return e.cfg, nil
	}
	o := e.opts
	merged := map[config.Key]string{}
	for k, v := range o.Args {
		merged[k] = v
	}
	for k, v := range args {
		if v != "" {
			merged[k] = v
		}
	}
	o.Args = merged
	return config.Resolve(o)
}

// Store opens (once) the store at url.
func (e *Engine) Store(ctx context.Context, url string) (*store.Store, error) {
	url = store.WithEndpoint(url, e.cfg.Get(config.GCSEndpoint))
	e.mu.Lock()
	defer e.mu.Unlock()
	if s, ok := e.stores[url]; ok {
		return s, nil
	}
	open := store.Open
	if e.LookOnly {
		open = store.OpenExisting
	}
	s, err := open(ctx, url)
	if err != nil {
		return nil, err
	}
	e.stores[url] = s
	return s, nil
}

// DefaultStore opens the configured store.
func (e *Engine) DefaultStore(ctx context.Context) (*store.Store, error) {
	return e.Store(ctx, e.cfg.Get(config.Store))
}

// Close releases the engine's stores.
func (e *Engine) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, s := range e.stores {
		s.Close()
	}
	e.stores = map[string]*store.Store{}
	e.backends = nil
	return nil
}

// backendFor returns the backend that runs h over st: the handle names the backend,
// whose factory (registered with backend.Register, or plugged into this engine with
// RegisterBackend) makes it; the Kubernetes backends take the cluster and namespace from
// the handle too, and only the kubeconfig file and pod settings from this machine's
// configuration.
func (e *Engine) backendFor(h *job.Handle, st *store.Store) (backend.Backend, error) {
	name := h.Backend
	if name == "" {
		name = config.DefaultBackend() // handles older than the backend field
	}
	e.mu.Lock()
	f := e.factories[name]
	e.mu.Unlock()
	if f != nil {
		return e.cachedBackend(name, st, func() (backend.Backend, error) { return f(e, st) })
	}
	d, ok := backend.Lookup(name)
	if !ok {
		return nil, fmt.Errorf("unknown backend %q: this kinetic runs %s", name, strings.Join(backend.Names(), ", "))
	}
	env := backend.Env{Handle: h, Store: st, Settings: plan.Settings{C: e.cfg}, Exe: e.Exe}
	return e.cachedBackend(name+"|"+d.Key(env), st, func() (backend.Backend, error) { return d.New(env) })
}

// cachedBackend returns the backend called name over st, made by newBackend on first use: one
// per store, since a backend may remember things between calls.
func (e *Engine) cachedBackend(name string, st *store.Store, newBackend func() (backend.Backend, error)) (backend.Backend, error) {
	key := name + "|" + st.URL()
	e.mu.Lock()
	b, ok := e.backends[key]
	e.mu.Unlock()
	if ok {
		return b, nil
	}
	b, err := newBackend() // not under the lock: a factory may open stores
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if prev, ok := e.backends[key]; ok {
		return prev, nil
	}
	if e.backends == nil {
		e.backends = map[string]backend.Backend{}
	}
	e.backends[key] = b
	return b, nil
}

// Job is a handle bound to its store and backend: the unit every observe call works on.
type Job struct {
	Handle  *job.Handle
	Store   *store.Store
	Backend backend.Backend
	// Unwritten finds the job's tombstone when the store holds none of its own (a
	// derived batch child: WithUnwritten); nil finds none.
	Unwritten Unwritten
}

// Attach finds job id in the configured store (or storeURL, if given).
func (e *Engine) Attach(ctx context.Context, id, storeURL string) (*Job, error) {
	if !job.ValidName(id) {
		return nil, fmt.Errorf("%s is not a job ID (IDs look like job-0123456789abcdefghijklm): %w", errs.Quote(id), ErrNotFound)
	}
	if storeURL == "" {
		storeURL = e.cfg.Get(config.Store)
	}
	st, err := e.Store(ctx, storeURL)
	if errors.Is(err, store.ErrNoStore) {
		return nil, fmt.Errorf("no job %s in the store %s, which does not exist yet (check the ID, or use --store / the profile the job was submitted with; `kinetic jobs list` shows the jobs there): %w", id, storeURL, ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	raw, err := st.Get(ctx, store.HandleKey(id))
	if store.IsNotFound(err) {
		if t, terr := readTombstone(ctx, st, e.unwritten, id); terr == nil && t != nil {
			return nil, &CleanedUpError{Tombstone: t}
		} else if errors.Is(terr, job.ErrDamaged) {
			return nil, terr // its tombstone, named: not a job that never was
		}
		if h, uerr := e.unwrittenHandle(ctx, st, id); uerr != nil || h != nil {
			if uerr != nil {
				return nil, uerr
			}
			be, err := e.backendFor(h, st) // a batch child its pod has not written yet
			if err != nil {
				return nil, err
			}
			return &Job{Handle: h, Store: st, Backend: be, Unwritten: e.unwritten}, nil
		}
		if err := jobview.MissingHandle(ctx, st, id); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("no job %s in the store %s (check the ID, or use --store / the profile the job was submitted with; `kinetic jobs list` shows the jobs there): %w", id, storeURL, ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	h, err := job.DecodeHandle(raw)
	if err != nil {
		return nil, job.Damaged(id, "handle.json", raw, err)
	}
	be, err := e.backendFor(h, st)
	if err != nil {
		return nil, err
	}
	return &Job{Handle: h, Store: st, Backend: be, Unwritten: e.unwritten}, nil
}
