package dashboard

import (
	"bytes"
	"context"
	"net/http"
	"strconv"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/kinetic-run/kinetic/batch"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
)

// maxGanttRows bounds the children drawn in a batch's chart (the table lists them all).
const maxGanttRows = 1000

// BatchView is one batch's page.
type BatchView struct {
	batch.Manifest
	Done, Total int
	Final       bool
	Counts      []Count
	Gantt       *Gantt
	Failures    []Failure
	Children    []ChildRow
	Notice      string
}

// Count is one status's share of a batch.
type Count struct {
	State string
	N     int
	Pct   float64
}

// ChildRow is one input of a batch.
type ChildRow struct {
	Index    int
	JobID    string
	State    string
	Reason   string
	Attempts int
	Duration float64
}

// Failure is a child that failed for good, with its exception.
type Failure struct {
	Index            int
	JobID            string
	Type, Message    string
	Traceback, Phase string
}

// Gantt is the chart of a batch's children: one row per input, one bar per attempt.
type Gantt struct {
	Rows    []GanttRow
	Ticks   []Mark
	Height  int
	RowH    int
	Omitted int
}

// GanttRow is one input's attempts.
type GanttRow struct {
	Index int
	JobID string
	Y     int
	Bars  []Segment // Class: queue, run state, retry
}

var countOrder = []string{"SUCCEEDED", "RUNNING", "PENDING", "FAILED", "SUBMIT_FAILED", "NOT_FOUND"}

func (s *Server) batchView(ctx context.Context, gid string) (*BatchView, error) {
	v, err := batch.Read(ctx, s.e, gid, s.o.Store, true)
	if err != nil {
		return nil, err
	}
	st, err := s.e.Store(ctx, v.Store)
	if err != nil {
		return nil, err
	}
	bv := &BatchView{Manifest: v.Manifest, Total: v.TotalExpected}
	attempts := s.attemptTimes(ctx, st, v)
	start, _ := time.Parse(time.RFC3339Nano, v.CreatedAt)
	end := start
	counts := map[string]int{}
	for i, cs := range v.Statuses {
		row := bv.addChild(cs, attempts[i], counts)
		start, end = widen(start, end, attempts[i])
		bv.Children = append(bv.Children, row)
	}
	bv.Final = v.SubmissionComplete && bv.Done >= len(v.Statuses)
	if !bv.Final {
		end = time.Now()
	}
	bv.addCounts(counts, len(v.Statuses))
	bv.Gantt = gantt(v.Statuses, attempts, start, end)
	return bv, nil
}

// attempt is one attempt of a child and its times.
type attempt struct {
	id string
	t  jobTimes
}

// attemptTimes reads the times of every attempt of every child of v, in parallel (final
// ones once, then remembered).
func (s *Server) attemptTimes(ctx context.Context, st *store.Store, v *batch.View) [][]attempt {
	byIndex := map[int]batch.Child{}
	for _, c := range v.Children {
		byIndex[c.Index] = c
	}
	attempts := make([][]attempt, len(v.Statuses))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for i, cs := range v.Statuses {
		c := byIndex[cs.Index]
		ids := c.Attempts
		if len(ids) == 0 && c.JobID != "" {
			ids = []string{c.JobID}
		}
		attempts[i] = make([]attempt, len(ids))
		for k, id := range ids {
			attempts[i][k].id = id
			last := k == len(ids)-1
			g.Go(func() error {
				state := job.Failed // an earlier attempt failed
				if last {
					state = cs.Status
				}
				attempts[i][k].t = s.finalTimesOf(gctx, st, id, state)
				return nil
			})
		}
	}
	g.Wait()
	return attempts
}

// addChild counts child cs (its attempts atts) and returns its row; a failed child's
// failure is added to bv.
func (bv *BatchView) addChild(cs batch.ChildStatus, atts []attempt, counts map[string]int) ChildRow {
	state := string(cs.Status)
	if cs.Error != "" && cs.Handle == nil {
		state = "SUBMIT_FAILED"
	}
	if state != "" {
		counts[state]++
	}
	if state == "SUBMIT_FAILED" || cs.Status.Terminal() {
		bv.Done++
	}
	row := ChildRow{Index: cs.Index, State: state, Reason: cs.Reason, Attempts: len(atts)}
	if cs.Error != "" && cs.Handle == nil {
		row.Reason = cs.Error
	}
	if cs.Handle != nil {
		row.JobID = cs.Handle.JobID
	}
	if n := len(atts); n > 0 && cs.Status.Terminal() {
		t := atts[n-1].t
		if !t.End.IsZero() && !t.Start.IsZero() {
			row.Duration = t.End.Sub(t.Start).Seconds()
		}
		if cs.Status == job.Failed {
			bv.Failures = append(bv.Failures, failureOf(cs, row.JobID, t))
		}
	} else if row.State == "SUBMIT_FAILED" {
		bv.Failures = append(bv.Failures, Failure{Index: cs.Index, Type: "not submitted", Message: cs.Error})
	}
	return row
}

// failureOf is the failure of child cs, whose last attempt (job id) has times t.
func failureOf(cs batch.ChildStatus, id string, t jobTimes) Failure {
	f := Failure{Index: cs.Index, JobID: id, Message: cs.Reason}
	if t.Env != nil && !t.Env.Success {
		f.Type, f.Message, f.Traceback, f.Phase = t.Env.ExcType, t.Env.ExcMessage, t.Env.Traceback, t.Env.Phase
	}
	return f
}

// widen widens the span [start, end] to take in atts.
func widen(start, end time.Time, atts []attempt) (time.Time, time.Time) {
	for _, a := range atts {
		created, _ := job.CreatedAt(a.id)
		if start.IsZero() || (!created.IsZero() && created.Before(start)) {
			start = created
		}
		if a.t.End.After(end) {
			end = a.t.End
		}
	}
	return start, end
}

// addCounts sets bv.Counts from counts, in countOrder, and the inputs not submitted
// (of submitted ones).
func (bv *BatchView) addCounts(counts map[string]int, submitted int) {
	for _, k := range countOrder {
		if n := counts[k]; n > 0 {
			bv.Counts = append(bv.Counts, Count{State: k, N: n, Pct: 100 * float64(n) / float64(max(bv.Total, 1))})
		}
	}
	if left := bv.Total - submitted; left > 0 {
		bv.Counts = append(bv.Counts, Count{State: "NOT_SUBMITTED", N: left, Pct: 100 * float64(left) / float64(max(bv.Total, 1))})
	}
}

// gantt is the chart of the children's attempts from start to end.
func gantt(statuses []batch.ChildStatus, attempts [][]attempt, start, end time.Time) *Gantt {
	if !end.After(start) {
		end = start.Add(time.Second)
	}
	span := end.Sub(start).Seconds()
	x := func(at time.Time) float64 { return 1000 * at.Sub(start).Seconds() / span }
	gt := &Gantt{RowH: 14}
	if len(statuses) > 40 {
		gt.RowH = 11
	}
	if len(statuses) > 100 {
		gt.RowH = 8
	}
	for i, cs := range statuses {
		if len(gt.Rows) == maxGanttRows {
			gt.Omitted = len(statuses) - maxGanttRows
			break
		}
		gr := GanttRow{Index: cs.Index, Y: 22 + len(gt.Rows)*gt.RowH}
		for k, a := range attempts[i] {
			gr.Bars = append(gr.Bars, attemptBars(a, k, k == len(attempts[i])-1, cs.Status, end, x)...)
		}
		if cs.Handle != nil {
			gr.JobID = cs.Handle.JobID
		}
		gt.Rows = append(gt.Rows, gr)
	}
	gt.Height = 30 + len(gt.Rows)*gt.RowH
	gt.Ticks = ticks(span, x, start)
	return gt
}

// attemptBars are the bars of attempt k of a child (last: its latest, in state), queued
// then run, up to end when it has not ended.
func attemptBars(a attempt, k int, last bool, state job.State, end time.Time, x func(time.Time) float64) []Segment {
	created, _ := job.CreatedAt(a.id)
	if created.IsZero() {
		return nil
	}
	runFrom, runTo := a.t.Start, a.t.End
	if runTo.IsZero() {
		runTo = end
	}
	if runFrom.IsZero() {
		// Not started (or its start not recorded yet): all of it queued.
		return []Segment{bar("queued", "queue", created, runTo, x)}
	}
	class, label := "att "+stateClass(state), "attempt "+strconv.Itoa(k+1)
	if !last {
		class, label = "retry", label+" (failed, retried)"
	}
	return []Segment{bar("queued", "queue", created, runFrom, x), bar(label, class, runFrom, runTo, x)}
}

func bar(label, class string, a, b time.Time, x func(time.Time) float64) Segment {
	if b.Before(a) {
		b = a
	}
	return Segment{Label: label, Class: class, Start: a, End: b, X: x(a), W: max(x(b)-x(a), 1.5)}
}

// finalTimesOf is finalTimes for a job known by ID only (a batch's attempts).
func (s *Server) finalTimesOf(ctx context.Context, st *store.Store, id string, state job.State) jobTimes {
	s.mu.Lock()
	t, ok := s.known[id]
	s.mu.Unlock()
	if ok {
		return t
	}
	t = s.readTimes(ctx, st, id)
	if !state.Terminal() || t.End.IsZero() {
		return t
	}
	t.Status = nil
	if t.Env != nil && t.Env.Success {
		t.Env = nil // only a failure's exception is shown again
	}
	s.mu.Lock()
	if len(s.known) > 100_000 {
		clear(s.known)
	}
	s.known[id] = t
	s.mu.Unlock()
	return t
}

func (s *Server) batchesPage(w http.ResponseWriter, r *http.Request) {
	ms, err := batch.List(r.Context(), s.e, s.o.Store)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.page(w, http.StatusOK, "batches.html", "Batches", "batches", ms)
}

func (s *Server) batchPage(w http.ResponseWriter, r *http.Request) {
	v, err := s.batchView(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if r.URL.Query().Get("done") == "cancel" {
		v.Notice = "Cancel requested for every unfinished child."
	}
	title := v.Name
	if title == "" {
		title = v.FuncName
	}
	s.page(w, http.StatusOK, "batch.html", title+" · "+v.GroupID, "batches", v)
}

// batchAPI is a batch's progress, chart and failures, for the page's live updates.
func (s *Server) batchAPI(w http.ResponseWriter, r *http.Request) {
	v, err := s.batchView(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var counts, gantt, failures bytes.Buffer
	s.tmpl.ExecuteTemplate(&counts, "counts", v)
	s.tmpl.ExecuteTemplate(&gantt, "gantt", v.Gantt)
	s.tmpl.ExecuteTemplate(&failures, "failures", v)
	cm := map[string]int{}
	for _, c := range v.Counts {
		cm[c.State] = c.N
	}
	writeJSON(w, http.StatusOK, map[string]any{"group_id": v.GroupID, "total": v.Total, "done": v.Done, "final": v.Final,
		"counts": cm, "counts_html": counts.String(), "gantt_html": gantt.String(), "failures_html": failures.String()})
}

func (s *Server) cancelBatch(w http.ResponseWriter, r *http.Request) {
	gid := r.PathValue("id")
	if err := batch.Cancel(r.Context(), s.e, gid, s.o.Store); err != nil {
		s.fail(w, r, err)
		return
	}
	s.forget()
	http.Redirect(w, r, "/batches/"+gid+"?done=cancel", http.StatusSeeOther)
}
