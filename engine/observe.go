package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
)

// Status returns the job's state and, when FAILED, the reason.
func (j *Job) Status(ctx context.Context) (job.State, string, error) {
	return j.Backend.Status(ctx, j.Handle)
}

// poller yields growing delays: every few milliseconds for the first seconds, so short
// jobs return quickly (a status check of a local job costs a file read), then slower, so
// long waits cost little.
type poller struct {
	start time.Time
	d     time.Duration
}

func newPoller() *poller { return &poller{start: time.Now(), d: 2 * time.Millisecond} }

func (p *poller) wait(ctx context.Context) error {
	t := time.NewTimer(p.d)
	defer t.Stop()
	limit := 20 * time.Millisecond
	if time.Since(p.start) > 3*time.Second {
		limit = 500 * time.Millisecond
	}
	p.d = min(p.d*5/4+time.Millisecond, limit)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Wait blocks until the job is terminal and returns its final state and reason.
// onChange, if set, is called with every state first seen, the final one included.
func (j *Job) Wait(ctx context.Context, onChange func(job.State)) (job.State, string, error) {
	var last job.State
	p := newPoller()
	for {
		state, reason, err := j.Status(ctx)
		if err != nil {
			return "", "", err
		}
		if state != last && onChange != nil {
			onChange(state)
		}
		last = state
		if state.Terminal() {
			return state, reason, nil
		}
		if err := p.wait(ctx); err != nil {
			return state, reason, err
		}
	}
}

// chunkSeq reads the sequence number out of a log chunk key.
func chunkSeq(key string) (int, bool) {
	name := key[strings.LastIndexByte(key, '/')+1:]
	n, err := strconv.Atoi(strings.TrimSuffix(name, ".log"))
	return n, err == nil
}

// Logs writes the job's logs to w. With follow, it keeps writing new output until the
// job is terminal.
func (j *Job) Logs(ctx context.Context, w io.Writer, follow bool) error {
	if ls, ok := j.Backend.(backend.LogStreamer); ok {
		// At the source while the pod is there; the store's copy once it is gone.
		err := ls.StreamLogs(ctx, j.Handle, follow, 0, w)
		if !errors.Is(err, backend.ErrNoLogs) {
			return err
		}
	}
	next := 0
	p := newPoller()
	for {
		// Look at the state before reading: output written before a terminal state is
		// then certainly in the store when we read it.
		var state job.State
		if follow {
			s, _, err := j.Status(ctx)
			if err != nil {
				return err
			}
			state = s
		}
		objs, err := j.Store.List(ctx, store.LogsPrefix(j.Handle.JobID))
		if err != nil {
			return err
		}
		progressed := false
		for _, o := range objs {
			seq, ok := chunkSeq(o.Key)
			if !ok || seq < next {
				continue
			}
			b, err := j.Store.Get(ctx, o.Key)
			if err != nil {
				return err
			}
			if _, err := w.Write(b); err != nil {
				return err
			}
			next = seq + 1
			progressed = true
		}
		if !follow || state.Terminal() {
			return nil
		}
		if progressed {
			p = newPoller()
		}
		if err := p.wait(ctx); err != nil {
			return err
		}
	}
}

// Tail returns the last n lines of the job's logs.
func (j *Job) Tail(ctx context.Context, n int) (string, error) {
	objs, err := j.Store.List(ctx, store.LogsPrefix(j.Handle.JobID))
	if err != nil {
		return "", err
	}
	var parts [][]byte
	lines := 0
	for i := len(objs) - 1; i >= 0 && lines <= n; i-- {
		b, err := j.Store.Get(ctx, objs[i].Key)
		if err != nil {
			return "", err
		}
		parts = append(parts, b)
		lines += bytes.Count(b, []byte("\n"))
	}
	var all []byte
	for i := len(parts) - 1; i >= 0; i-- {
		all = append(all, parts[i]...)
	}
	return lastLines(string(all), n), nil
}

func lastLines(s string, n int) string {
	if n <= 0 {
		return ""
	}
	trimmed := strings.TrimSuffix(s, "\n")
	idx := len(trimmed)
	for i := 0; i < n; i++ {
		k := strings.LastIndexByte(trimmed[:idx], '\n')
		if k < 0 {
			return s
		}
		idx = k
	}
	return s[idx+1:]
}

// Result is how a job ended, with its value.
type Result struct {
	State    job.State     `json:"state"`
	Reason   string        `json:"reason,omitempty"`
	Envelope *job.Envelope `json:"envelope,omitempty"`
	// ValuePath is a local file holding result.pkl (the value or the exception), when
	// the caller asked for one.
	ValuePath string `json:"value_path,omitempty"`
}

var copyBufs = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

// ErrNoResult means the job ended without an envelope (killed, cancelled, lost).
var ErrNoResult = errors.New("the job ended without a result")

// Result waits for the job and reads its envelope; with valueDir, result.pkl is copied
// to a file there. It returns ErrNoResult (wrapped, with the reason and the log tail)
// when the job failed before it could report.
func (j *Job) Result(ctx context.Context, valueDir string) (*Result, error) {
	state, reason, err := j.Wait(ctx, nil)
	if err != nil {
		return nil, err
	}
	return j.ResultOf(ctx, state, reason, valueDir)
}

// ResultOf is Result for a job already known to be in the terminal state given (the
// caller waited for it), so it is not looked up again.
func (j *Job) ResultOf(ctx context.Context, state job.State, reason, valueDir string) (*Result, error) {
	if state == job.NotFound {
		return nil, fmt.Errorf("job %s no longer exists (it was cleaned up): %w", j.Handle.JobID, ErrNotFound)
	}
	envKey, valueKey := store.EnvelopeKey(j.Handle.JobID), store.ResultKey(j.Handle.JobID)
	raw, err := j.Store.Get(ctx, envKey)
	if store.IsNotFound(err) && state == job.Failed {
		// A multi-host job whose worker failed before the leader finished: the worker's
		// exception is the job's.
		if h, ok, herr := failedHost(ctx, j.Store, j.Handle.JobID); herr != nil {
			return nil, herr
		} else if ok {
			envKey, valueKey = store.HostEnvelopeKey(j.Handle.JobID, h), store.HostResultKey(j.Handle.JobID, h)
			raw, err = j.Store.Get(ctx, envKey)
		}
	}
	if store.IsNotFound(err) {
		tail, _ := j.Tail(ctx, 20)
		msg := fmt.Sprintf("job %s %s: %s", j.Handle.JobID, strings.ToLower(string(state)), reason)
		if tail != "" {
			msg += "\nlast log lines:\n" + tail
		}
		return &Result{State: state, Reason: reason}, fmt.Errorf("%s: %w", msg, ErrNoResult)
	}
	if err != nil {
		return nil, err
	}
	env, err := job.DecodeEnvelope(raw)
	if err != nil {
		return nil, fmt.Errorf("job %s: %s: %w", j.Handle.JobID, envKey, err)
	}
	res := &Result{State: state, Reason: reason, Envelope: env}
	if valueDir != "" && env.HasValue {
		r, err := j.Store.NewReader(ctx, valueKey)
		if err != nil {
			return nil, err
		}
		defer r.Close()
		f, err := os.CreateTemp(valueDir, "kinetic-result-*.pkl")
		if err != nil {
			return nil, err
		}
		// Not io.Copy: the bucket's reader would copy through a fresh 1 MiB buffer, for
		// values that are mostly a few bytes.
		buf := copyBufs.Get().(*[]byte)
		_, err = io.CopyBuffer(struct{ io.Writer }{f}, struct{ io.Reader }{r}, *buf)
		copyBufs.Put(buf)
		if err != nil {
			f.Close()
			os.Remove(f.Name())
			return nil, err
		}
		if err := f.Close(); err != nil {
			return nil, err
		}
		res.ValuePath = f.Name()
	}
	return res, nil
}

// failedHost returns the first host of a multi-host job that wrote a failure envelope.
func failedHost(ctx context.Context, st *store.Store, id string) (string, bool, error) {
	objs, err := st.List(ctx, store.HostsPrefix(id))
	if err != nil {
		return "", false, err
	}
	for _, o := range objs {
		rest := strings.TrimPrefix(o.Key, store.HostsPrefix(id))
		if host, ok := strings.CutSuffix(rest, "/result.json"); ok && !strings.Contains(host, "/") {
			return host, true, nil
		}
	}
	return "", false, nil
}

// Cancel stops the job.
func (j *Job) Cancel(ctx context.Context) error { return j.Backend.Cancel(ctx, j.Handle) }

// Cleanup removes the backend's resources (backendRes) and the job's store objects
// (storeObjs). Outputs under KINETIC_OUTPUT_DIR are never removed.
func (j *Job) Cleanup(ctx context.Context, backendRes, storeObjs bool) error {
	if backendRes || storeObjs {
		// Store objects without a stopped job would strand a running process.
		if err := j.Backend.Cleanup(ctx, j.Handle); err != nil {
			return err
		}
	}
	if storeObjs {
		return j.Store.DeletePrefix(ctx, store.JobPrefix(j.Handle.JobID))
	}
	return nil
}

// Listed is one row of List.
type Listed struct {
	Handle *job.Handle `json:"handle"`
	State  job.State   `json:"status"`
	Reason string      `json:"reason,omitempty"`
}

// List returns the jobs in the configured store (or storeURL), newest first.
func (e *Engine) List(ctx context.Context, storeURL string) ([]Listed, error) {
	if storeURL == "" {
		storeURL = e.cfg.Get(config.Store)
	}
	st, err := e.Store(ctx, storeURL)
	if err != nil {
		return nil, err
	}
	ids, err := e.listIDs(ctx, st)
	if err != nil {
		return nil, err
	}
	out := make([]Listed, len(ids))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for i, id := range ids {
		g.Go(func() error {
			j, err := e.Attach(gctx, id, storeURL)
			if err != nil {
				return nil // half-cleaned or foreign: skip
			}
			state, reason, err := j.Status(gctx)
			if err != nil {
				return nil
			}
			out[i] = Listed{Handle: j.Handle, State: state, Reason: reason}
			return nil
		})
	}
	g.Wait()
	var rows []Listed
	for _, l := range out {
		if l.Handle != nil {
			rows = append(rows, l)
		}
	}
	sort.Slice(rows, func(a, b int) bool { return rows[a].Handle.JobID > rows[b].Handle.JobID })
	return rows, nil
}

// listIDs lists the jobs of the configured backend when it can list by itself (the
// Kubernetes backends, by label: the seeds' list_jobs), else the jobs in the store.
func (e *Engine) listIDs(ctx context.Context, st *store.Store) ([]string, error) {
	name := e.cfg.Get(config.Backend)
	if name != "" && !backend.RunsOnThisMachine(name) {
		be, err := e.backendFor(&job.Handle{Backend: name, Namespace: e.cfg.Get(config.Namespace)}, st)
		if err != nil {
			return nil, err
		}
		if l, ok := be.(backend.Lister); ok {
			hs, err := l.List(ctx)
			if err != nil {
				return nil, err
			}
			ids := make([]string, 0, len(hs))
			for _, h := range hs {
				ids = append(ids, h.JobID)
			}
			return ids, nil
		}
	}
	return st.ListDirs(ctx, "jobs/")
}
