package dashboard

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/kinetic-run/kinetic/batch"
	"github.com/kinetic-run/kinetic/engine"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
)

// listing is one store listing, shared by the requests of Options.Fresh.
type listing struct {
	rows []engine.Listed
	at   time.Time
	took time.Duration
}

// list returns the store's jobs, newest first: one engine listing (engine.List) shared
// by every request within Options.Fresh of it, or within three times as long as the
// listing took, if longer: a slow store is not listed back to back by pages that poll.
func (s *Server) list(ctx context.Context) ([]engine.Listed, error) {
	s.mu.Lock()
	l := s.listed
	s.mu.Unlock()
	if l != nil && time.Since(l.at) < max(s.o.Fresh, 3*l.took) {
		return l.rows, nil
	}
	v, err, _ := s.group.Do("jobs", func() (any, error) {
		// Not the request's context: others wait for this listing too.
		start := time.Now()
		rows, err := s.e.List(context.WithoutCancel(ctx), s.o.Store)
		if err != nil {
			return nil, err
		}
		l := &listing{rows: rows, at: time.Now(), took: time.Since(start)}
		s.mu.Lock()
		s.listed = l
		s.mu.Unlock()
		return l, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*listing).rows, nil
}

// batches returns the store's batch manifests by group ID (without their children).
func (s *Server) batches(ctx context.Context) (map[string]batch.Manifest, error) {
	v, err, _ := s.group.Do("batches", func() (any, error) {
		ms, err := batch.List(context.WithoutCancel(ctx), s.e, s.o.Store)
		if err != nil {
			return nil, err
		}
		out := make(map[string]batch.Manifest, len(ms))
		for _, m := range ms {
			if m.Error == "" { // a damaged batch's rows say so themselves
				out[m.GroupID] = m.Manifest
			}
		}
		return out, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(map[string]batch.Manifest), nil
}

// Filter is what the jobs table shows: every field is optional.
type Filter struct {
	Status string // a state, or ERROR
	Name   string // part of the display name, function name or job ID
	Batch  string // part of the group ID or the batch's name
	Tag    string // a batch tag: key or key=value
	Page   int    // from 1
}

func filterOf(q url.Values) Filter {
	f := Filter{Status: strings.ToUpper(strings.TrimSpace(q.Get("status"))), Name: strings.TrimSpace(q.Get("name")),
		Batch: strings.TrimSpace(q.Get("batch")), Tag: strings.TrimSpace(q.Get("tag"))}
	f.Page, _ = strconv.Atoi(q.Get("page"))
	if f.Page < 1 {
		f.Page = 1
	}
	return f
}

// Query is the filter as URL query parameters (without the page).
func (f Filter) Query() string {
	v := url.Values{}
	for k, x := range map[string]string{"status": f.Status, "name": f.Name, "batch": f.Batch, "tag": f.Tag} {
		if x != "" {
			v.Set(k, x)
		}
	}
	return v.Encode()
}

func (f Filter) needsBatches() bool { return f.Tag != "" || f.Batch != "" }

func (f Filter) match(l engine.Listed, bs map[string]batch.Manifest) bool {
	h := l.Handle
	return (f.Status == "" || string(l.State) == f.Status) && f.matchName(h) && f.matchBatch(h, bs) && f.matchTag(h, bs)
}

// matchName: the display name, function or job ID holds f.Name (any case).
func (f Filter) matchName(h *job.Handle) bool {
	return f.Name == "" || containsFold(h.DisplayName, f.Name) || containsFold(h.FuncName, f.Name) || containsFold(h.JobID, f.Name)
}

// matchBatch: h is a batch child whose batch's ID or name holds f.Batch (any case).
func (f Filter) matchBatch(h *job.Handle, bs map[string]batch.Manifest) bool {
	if f.Batch == "" {
		return true
	}
	return h.GroupID != "" && (containsFold(h.GroupID, f.Batch) || (bs != nil && containsFold(bs[h.GroupID].Name, f.Batch)))
}

// matchTag: h's batch has tag f.Tag (KEY, or KEY=VALUE).
func (f Filter) matchTag(h *job.Handle, bs map[string]batch.Manifest) bool {
	if f.Tag == "" {
		return true
	}
	m, ok := bs[h.GroupID]
	if !ok {
		return false
	}
	k, v, hasValue := strings.Cut(f.Tag, "=")
	got, ok := m.Tags[k]
	return ok && (!hasValue || got == v)
}

func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(sub))
}

// Row is one job of the jobs table.
type Row struct {
	ID          string    `json:"job_id"`
	Name        string    `json:"name"`
	State       job.State `json:"status"`
	Reason      string    `json:"reason,omitempty"`
	Accelerator string    `json:"accelerator,omitempty"`
	Backend     string    `json:"backend,omitempty"`
	Batch       string    `json:"group_id,omitempty"`
	BatchIndex  string    `json:"group_index,omitempty"`
	Created     time.Time `json:"created_at,omitzero"`
	// Duration is how long a final job ran, in seconds (from its runner's start when
	// known, else from its creation); 0 while it is not final.
	Duration float64 `json:"duration_s,omitempty"`
}

// JobsPage is one page of the jobs table.
type JobsPage struct {
	Filter  Filter         `json:"-"`
	Total   int            `json:"total"`    // jobs that match the filter
	InStore int            `json:"in_store"` // jobs in the store
	Page    int            `json:"page"`
	Pages   int            `json:"pages"`
	Counts  map[string]int `json:"counts"` // of the matching jobs, by status
	Rows    []Row          `json:"rows"`
	Query   string         `json:"-"`
	Notice  string         `json:"-"`
}

// jobs builds one page of the jobs table.
func (s *Server) jobs(ctx context.Context, f Filter) (*JobsPage, error) {
	all, err := s.list(ctx)
	if err != nil {
		return nil, err
	}
	var bs map[string]batch.Manifest
	if f.needsBatches() {
		if bs, err = s.batches(ctx); err != nil {
			return nil, err
		}
	}
	p := &JobsPage{Filter: f, InStore: len(all), Counts: map[string]int{}, Query: f.Query()}
	var match []engine.Listed
	for _, l := range all {
		if f.match(l, bs) {
			match = append(match, l)
			p.Counts[string(l.State)]++
		}
	}
	p.Total = len(match)
	p.Pages = max(1, (p.Total+PageSize-1)/PageSize)
	p.Page = min(f.Page, p.Pages)
	lo := (p.Page - 1) * PageSize
	hi := min(lo+PageSize, p.Total)
	p.Rows = make([]Row, 0, hi-lo)
	for _, l := range match[lo:hi] {
		p.Rows = append(p.Rows, s.row(ctx, l))
	}
	return p, nil
}

func (s *Server) row(ctx context.Context, l engine.Listed) Row {
	h := l.Handle
	r := Row{ID: h.JobID, Name: h.DisplayName, State: l.State, Reason: l.Reason, Accelerator: h.Accelerator,
		Backend: h.Backend, Batch: h.GroupID, BatchIndex: h.GroupIndex}
	if r.Name == "" {
		r.Name = h.FuncName
	}
	r.Created = createdAt(h)
	if l.State.Terminal() && l.State != job.NotFound {
		if t := s.finalTimes(ctx, h, l.State); !t.End.IsZero() {
			start := t.Start
			if start.IsZero() {
				start = r.Created
			}
			r.Duration = t.End.Sub(start).Seconds()
		}
	}
	return r
}

// createdAt is when the job was made: its handle's created_at, else its ID's clock.
func createdAt(h *job.Handle) time.Time {
	if t, err := time.Parse(time.RFC3339Nano, h.CreatedAt); err == nil {
		return t
	}
	t, _ := job.CreatedAt(h.JobID)
	return t
}

// jobTimes are when a job's runner started and when it ended, as recorded.
type jobTimes struct {
	Start, Called, End time.Time
	Env                *job.Envelope
	Status             *job.Status
}

// readTimes reads what the store records of a job's timeline: its envelope (the runner's
// timestamps) and status.json (when the backend last changed its state).
func (s *Server) readTimes(ctx context.Context, st *store.Store, id string) jobTimes {
	var t jobTimes
	if b, err := st.Get(ctx, store.EnvelopeKey(id)); err == nil {
		if env, err := job.DecodeEnvelope(b); err == nil {
			env.Value = nil // a batch input's pickled value: the page shows its repr
			t.Env, t.Start, t.Called, t.End = env, env.StartedAt, env.CalledAt, env.FinishedAt
		}
	}
	if b, err := st.Get(ctx, store.StatusKey(id)); err == nil {
		var js job.Status
		if json.Unmarshal(b, &js) == nil {
			t.Status = &js
			if t.End.IsZero() && js.State.Terminal() {
				t.End = js.UpdatedAt
			}
		}
	}
	return t
}

// finalTimes is readTimes for a final job, read once and remembered.
func (s *Server) finalTimes(ctx context.Context, h *job.Handle, state job.State) jobTimes {
	st, err := s.e.Store(ctx, storeOf(h, s.o.Store))
	if err != nil {
		return jobTimes{}
	}
	return s.finalTimesOf(ctx, st, h.JobID, state)
}

func storeOf(h *job.Handle, def string) string {
	if h.Store != "" {
		return h.Store
	}
	return def
}

func (s *Server) jobsPage(w http.ResponseWriter, r *http.Request) {
	p, err := s.jobs(r.Context(), filterOf(r.URL.Query()))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if id := r.URL.Query().Get("cleaned"); job.ValidName(id) {
		p.Notice = "Cleaned up " + id + ": its backend resources and store objects are gone (outputs are kept)."
	}
	s.page(w, http.StatusOK, "jobs.html", "Jobs", "jobs", p)
}

// jobsAPI is the jobs table as JSON, with the rendered rows (rows_html) for the page's
// live updates; its ETag changes only when the page's data does.
func (s *Server) jobsAPI(w http.ResponseWriter, r *http.Request) {
	p, err := s.jobs(r.Context(), filterOf(r.URL.Query()))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	data, _ := json.Marshal(p)
	sum := sha256.Sum256(data)
	etag := `"` + hex.EncodeToString(sum[:12]) + `"`
	w.Header().Set("ETag", etag)
	w.Header().Set("Cache-Control", "no-cache")
	if match := r.Header.Get("If-None-Match"); match == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	var rows, pager bytes.Buffer
	s.tmpl.ExecuteTemplate(&rows, "rows", p)
	s.tmpl.ExecuteTemplate(&pager, "pager", p)
	writeJSON(w, http.StatusOK, struct {
		*JobsPage
		RowsHTML  string `json:"rows_html"`
		PagerHTML string `json:"pager_html"`
	}{p, rows.String(), pager.String()})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(true)
	enc.Encode(v)
}
