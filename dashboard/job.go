package dashboard

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/kinetic-run/kinetic/engine"
	"github.com/kinetic-run/kinetic/internal/seconds"
	"github.com/kinetic-run/kinetic/job"
)

// JobView is one job's page.
type JobView struct {
	Handle   *job.Handle
	State    job.State
	Reason   string
	Final    bool
	Envelope *job.Envelope
	Fields   [][2]string
	Timeline *Timeline
	// Cancelled says the page follows a cancel (shown once).
	Notice string
}

// Timeline is the picture of a job's phases.
type Timeline struct {
	Start, End time.Time
	Segments   []Segment
	Marks      []Mark
	Ticks      []Mark
}

// Segment is one phase of a job, drawn as a bar.
type Segment struct {
	Label, Class, Detail string
	Start, End           time.Time
	X, W                 float64 // in the 0..1000 width of the picture
	Row                  int
}

// Mark is a point in time on the timeline (the end, or a tick of the axis).
type Mark struct {
	Label, Class string
	X            float64
}

func (s *Server) attach(ctx context.Context, id string) (*engine.Job, error) {
	return s.e.Attach(ctx, id, s.o.Store)
}

func (s *Server) jobView(ctx context.Context, id string) (*JobView, error) {
	j, err := s.attach(ctx, id)
	if err != nil {
		return nil, err
	}
	state, reason, err := j.Status(ctx)
	if err != nil {
		return nil, err
	}
	h := j.Handle
	t := s.readTimes(ctx, j.Store, h.JobID)
	v := &JobView{Handle: h, State: state, Reason: reason, Final: state.Terminal(), Envelope: t.Env}
	add := func(k, val string) {
		if val != "" {
			v.Fields = append(v.Fields, [2]string{k, val})
		}
	}
	add("job ID", h.JobID)
	add("name", h.DisplayName)
	if h.FuncName != h.DisplayName {
		add("function", h.FuncName)
	}
	add("accelerator", h.Accelerator)
	add("backend", h.Backend)
	if h.Backend != "local" {
		add("cluster", h.ClusterName)
		add("namespace", h.Namespace)
		add("kube context", h.KubeContext)
		if h.ContainerImage != "" {
			add("image", h.ImageURI+" ("+h.ContainerImage+" with the runner added)")
		} else {
			add("image", h.ImageURI)
		}
	}
	add("store", h.Store)
	add("output dir", h.OutputDir)
	add("created", when(h.CreatedAt))
	add("submitted", when(h.SubmittedAt))
	if h.Spot == "true" {
		add("spot", "yes")
	}
	if h.Debug == "true" {
		add("debug", "yes")
	}
	v.Timeline = timeline(h, state, reason, t, time.Now())
	return v, nil
}

// timeline draws what the store records of a job: created (handle), uploaded
// (handle.submitted_at), the runner's start (download, install: the environment), the
// call and its end (result.json), or the backend's last state change (status.json).
func timeline(h *job.Handle, state job.State, reason string, t jobTimes, now time.Time) *Timeline {
	tb := timelineBuild{state: state, final: state.Terminal(), t: t, created: createdAt(h), end: t.End}
	tb.submitted, _ = time.Parse(time.RFC3339Nano, h.SubmittedAt)
	if tb.submitted.IsZero() {
		tb.submitted = tb.created
	}
	if !tb.final {
		tb.end = now
	}
	tb.seg("upload", "upload", "working tree, data and payload to the store", tb.created, tb.submitted)
	tb.pending(reason)
	tb.running()
	return tb.draw()
}

// timelineBuild collects a timeline's segments.
type timelineBuild struct {
	state                   job.State
	final                   bool
	t                       jobTimes
	created, submitted, end time.Time
	runningFrom             time.Time // when the job started running, as far as the store knows
	segs                    []Segment
}

func (tb *timelineBuild) seg(label, class, detail string, a, b time.Time) {
	if a.IsZero() || b.IsZero() || b.Before(a) {
		return
	}
	tb.segs = append(tb.segs, Segment{Label: label, Class: class, Detail: detail, Start: a, End: b})
}

// pending is the wait from submission to the start.
func (tb *timelineBuild) pending(reason string) {
	t := tb.t
	tb.runningFrom = t.Start
	if tb.runningFrom.IsZero() && t.Status != nil && t.Status.State == job.Running {
		tb.runningFrom = t.Status.UpdatedAt
	}
	pendingTo := tb.runningFrom
	if pendingTo.IsZero() {
		if tb.state == job.Pending || tb.final {
			pendingTo = tb.end
		} else {
			pendingTo = tb.submitted // running, start not recorded (a batch child on a worker)
		}
	}
	pendingDetail := "waiting for a slot or a node"
	if tb.state == job.Pending && reason != "" {
		pendingDetail = reason
	}
	tb.seg("pending", "pending", pendingDetail, tb.submitted, pendingTo)
}

// running is the environment's set-up and the call, as far as the store knows.
func (tb *timelineBuild) running() {
	t := tb.t
	switch {
	case !t.Start.IsZero() && !t.Called.IsZero():
		tb.seg("environment", "env", "download, verify, materialise, install", t.Start, t.Called)
		tb.seg("running", "run", "the function or command", t.Called, tb.end)
	case !t.Start.IsZero() && tb.final && t.Called.IsZero():
		tb.seg("environment", "env", "failed before the call", t.Start, tb.end)
	case tb.state == job.Running || (tb.final && !tb.runningFrom.IsZero()):
		tb.seg("running", "run", "", maxTime(tb.runningFrom, tb.submitted), tb.end)
	}
}

// draw places the segments, the end's mark and the ticks on a 1000-wide axis.
func (tb *timelineBuild) draw() *Timeline {
	tl := &Timeline{Start: tb.created, End: tb.end}
	if !tb.end.After(tb.created) {
		tl.End = tb.created.Add(time.Second)
	}
	span := tl.End.Sub(tl.Start).Seconds()
	x := func(at time.Time) float64 { return 1000 * at.Sub(tl.Start).Seconds() / span }
	segs := tb.segs
	for i := range segs {
		segs[i].X = x(segs[i].Start)
		segs[i].W = max(x(segs[i].End)-segs[i].X, 2)
		segs[i].Row = i
	}
	tl.Segments = segs
	if tb.final {
		tl.Marks = append(tl.Marks, Mark{Label: string(tb.state), Class: stateClass(tb.state), X: x(tb.end)})
	} else {
		tl.Marks = append(tl.Marks, Mark{Label: "now", Class: "now", X: x(tb.end)})
	}
	tl.Ticks = ticks(span, x, tl.Start)
	return tl
}

// when writes an RFC 3339 time of the store for a person: to the millisecond, in UTC.
func when(s string) string {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return s
	}
	return t.UTC().Format("2006-01-02 15:04:05.000 UTC")
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// ticks are about five round marks along an axis of span seconds.
func ticks(span float64, x func(time.Time) float64, start time.Time) []Mark {
	steps := []float64{0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400, 43200, 86400}
	step := steps[len(steps)-1]
	for _, s := range steps {
		if span/s <= 6 {
			step = s
			break
		}
	}
	var out []Mark
	for v := 0.0; v <= span+1e-9; v += step {
		out = append(out, Mark{Label: fmtDur(v), X: x(start.Add(seconds.Duration(v)))})
	}
	return out
}

func (s *Server) jobPage(w http.ResponseWriter, r *http.Request) {
	v, err := s.jobView(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	switch r.URL.Query().Get("done") {
	case "cancel":
		v.Notice = "Cancel requested: the job stops after its grace period."
	}
	s.page(w, http.StatusOK, "job.html", v.Handle.DisplayName+" · "+v.Handle.JobID, "jobs", v)
}

// jobAPI is a job's state and timeline, for the page's live updates.
func (s *Server) jobAPI(w http.ResponseWriter, r *http.Request) {
	v, err := s.jobView(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var tl bytes.Buffer
	s.tmpl.ExecuteTemplate(&tl, "timeline", v.Timeline)
	writeJSON(w, http.StatusOK, map[string]any{"handle": v.Handle, "status": v.State, "reason": v.Reason, "final": v.Final,
		"envelope": v.Envelope, "timeline_html": tl.String()})
}

// maxLogResponse bounds one logs response; a page asks again for the rest.
const maxLogResponse = 512 << 10

// logsAPI returns the job's log from byte offset on (text/plain), with X-Next-Offset
// (where to ask next) and X-Final ("1" once the job is final and every byte was sent).
// A first request (no offset) of a long log starts at its last maxLogResponse bytes.
func (s *Server) logsAPI(w http.ResponseWriter, r *http.Request) {
	offset := int64(-1)
	if o := r.URL.Query().Get("offset"); o != "" {
		n, err := strconv.ParseInt(o, 10, 64)
		if err != nil || n < 0 {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": fmt.Sprintf("offset %q: give a byte offset of 0 or more", o)})
			return
		}
		offset = n
	}
	j, err := s.attach(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	// The state first: output written before a final state is then in what we read.
	state, _, err := j.Status(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var buf bytes.Buffer
	if err := j.Logs(r.Context(), &buf, false); err != nil {
		s.fail(w, r, err)
		return
	}
	all := buf.Bytes()
	size := int64(len(all))
	if offset < 0 {
		offset = max(0, size-maxLogResponse)
	}
	offset = min(offset, size)
	end := min(size, offset+maxLogResponse)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Next-Offset", strconv.FormatInt(end, 10))
	w.Header().Set("X-Start-Offset", strconv.FormatInt(offset, 10))
	final := "0"
	if state.Terminal() && end == size {
		final = "1"
	}
	w.Header().Set("X-Final", final)
	w.Write(all[offset:end])
}

func (s *Server) forget() {
	s.mu.Lock()
	s.listed = nil
	s.mu.Unlock()
}

func (s *Server) cancelJob(w http.ResponseWriter, r *http.Request) {
	j, err := s.attach(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if err := j.Cancel(r.Context()); err != nil {
		s.fail(w, r, err)
		return
	}
	s.forget()
	http.Redirect(w, r, "/jobs/"+j.Handle.JobID+"?done=cancel", http.StatusSeeOther)
}

func (s *Server) cleanupJob(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	j, err := s.attach(r.Context(), id)
	if errors.Is(err, job.ErrDamaged) {
		// Unreadable: remove its objects, as `kinetic jobs cleanup` does.
		if _, err := s.e.RemoveUnreadable(r.Context(), id, s.o.Store); err != nil {
			s.fail(w, r, err)
			return
		}
		s.forget()
		http.Redirect(w, r, "/jobs?cleaned="+id, http.StatusSeeOther)
		return
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if err := j.Cleanup(r.Context(), true, true); err != nil {
		s.fail(w, r, err)
		return
	}
	s.forget()
	http.Redirect(w, r, "/jobs?cleaned="+id, http.StatusSeeOther)
}
