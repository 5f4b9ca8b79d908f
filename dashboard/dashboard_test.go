package dashboard

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kinetic-run/kinetic/engine"
	"github.com/kinetic-run/kinetic/job"
)

// client is an HTTP client with a cookie jar that does not follow redirects.
func client(t *testing.T) *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// login opens the token URL once, as a browser would, and returns the client holding
// the cookie.
func login(t *testing.T) *http.Client {
	t.Helper()
	c := client(t)
	resp, err := c.Get(fx.url("/jobs", true))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/jobs" {
		t.Fatalf("the token URL answered %d, Location %q; want 303 to /jobs (the token out of the address bar)", resp.StatusCode, resp.Header.Get("Location"))
	}
	return c
}

func get(t *testing.T, c *http.Client, path string, header ...string) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", fx.ts.URL+path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

func post(t *testing.T, c *http.Client, path string, form url.Values) (int, http.Header, string) {
	t.Helper()
	resp, err := c.PostForm(fx.ts.URL+path, form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// TestToken: nothing is served without the token; a wrong one is refused; the token URL
// sets a cookie that later requests (pages, API, static files) use; a bearer header works.
func TestToken(t *testing.T) {
	setup(t)
	anon := client(t)
	for _, p := range []string{"/", "/jobs", "/api/jobs", "/jobs/" + fx.ok, "/api/jobs/" + fx.ok + "/logs", "/batches/" + fx.batch, "/cluster", "/static/style.css", "/nope"} {
		if code, _, body := get(t, anon, p); code != http.StatusUnauthorized || strings.Contains(body, fx.ok) {
			t.Errorf("GET %s without the token: %d, want 401 and no job data", p, code)
		}
	}
	if code, _, _ := get(t, anon, "/jobs?token=not-the-token"); code != http.StatusForbidden {
		t.Errorf("a wrong token: %d, want 403", code)
	}
	if code, _, _ := get(t, anon, "/jobs", "Cookie", cookieName+"=wrong-token-of-some-length"); code != http.StatusUnauthorized {
		t.Errorf("a wrong cookie: %d, want 401", code)
	}
	c := login(t)
	if code, _, body := get(t, c, "/jobs"); code != 200 || !strings.Contains(body, fx.ok) {
		t.Errorf("GET /jobs with the cookie: %d, want 200 with the jobs", code)
	}
	if code, h, _ := get(t, c, "/static/style.css"); code != 200 || !strings.HasPrefix(h.Get("Content-Type"), "text/css") {
		t.Errorf("GET /static/style.css: %d %s", code, h.Get("Content-Type"))
	}
	if code, h, body := get(t, c, "/static/app.js"); code != 200 || !strings.Contains(h.Get("Content-Type"), "javascript") || !strings.Contains(body, "If-None-Match") {
		t.Errorf("GET /static/app.js: %d %s", code, h.Get("Content-Type"))
	}
	if code, _, _ := get(t, anon, "/api/jobs", "Authorization", "Bearer "+fx.token); code != 200 {
		t.Errorf("a bearer token: %d, want 200", code)
	}
	if code, h, _ := get(t, c, "/"); code != http.StatusSeeOther || h.Get("Location") != "/jobs" {
		t.Errorf("GET /: %d → %q", code, h.Get("Location"))
	}
	if code, _, _ := get(t, c, "/no-such-page"); code != 404 {
		t.Errorf("an unknown page: %d, want 404", code)
	}
}

func jobsJSON(t *testing.T, c *http.Client, query string) (JobsPage, http.Header) {
	t.Helper()
	code, h, body := get(t, c, "/api/jobs?"+query)
	if code != 200 {
		t.Fatalf("GET /api/jobs?%s: %d %s", query, code, body)
	}
	var p JobsPage
	if err := json.Unmarshal([]byte(body), &p); err != nil {
		t.Fatal(err)
	}
	return p, h
}

// TestJobsAPI: the table's rows, newest first, paged, filtered by status, name, batch
// and tag, and an ETag that answers 304 while nothing changed.
func TestJobsAPI(t *testing.T) {
	setup(t)
	c := login(t)
	all, h := jobsJSON(t, c, "")
	// 5 jobs, 50 children and the retry of input 7; maybe the cleanup test's job.
	if all.InStore < 56 || all.Pages != (all.Total+PageSize-1)/PageSize || len(all.Rows) != PageSize {
		t.Fatalf("in store %d, total %d, pages %d, rows %d", all.InStore, all.Total, all.Pages, len(all.Rows))
	}
	for i := 1; i < len(all.Rows); i++ {
		if all.Rows[i-1].ID < all.Rows[i].ID {
			t.Fatalf("not newest first: %s before %s", all.Rows[i-1].ID, all.Rows[i].ID)
		}
	}
	p2, _ := jobsJSON(t, c, "page=2")
	if p2.Page != 2 || len(p2.Rows) != all.Total-PageSize {
		t.Errorf("page 2: page %d with %d rows, want %d", p2.Page, len(p2.Rows), all.Total-PageSize)
	}
	// The ETag.
	code, _, _ := get(t, c, "/api/jobs?status=SUCCEEDED", "If-None-Match", "")
	if code != 200 {
		t.Fatal(code)
	}
	_, h1, _ := get(t, c, "/api/jobs?status=SUCCEEDED")
	if code, _, body := get(t, c, "/api/jobs?status=SUCCEEDED", "If-None-Match", h1.Get("ETag")); code != http.StatusNotModified || body != "" {
		t.Errorf("the same ETag: %d, want 304 with no body", code)
	}
	if h.Get("ETag") == h1.Get("ETag") {
		t.Error("two different pages have the same ETag")
	}
	for name, tc := range map[string]struct {
		query string
		want  func(p JobsPage) bool
	}{
		"failed":         {"status=FAILED", func(p JobsPage) bool { return p.Total >= 3 && hasRow(p, fx.failed) }}, // explode, input 7 twice, and what the browser test cancelled
		"name":           {"name=EXPLODE", func(p JobsPage) bool { return p.Total == 1 && p.Rows[0].ID == fx.failed }},
		"job ID":         {"name=" + fx.ok[len(fx.ok)-6:], func(p JobsPage) bool { return p.Total == 1 && p.Rows[0].ID == fx.ok }},
		"batch name":     {"batch=squares", func(p JobsPage) bool { return p.Total == 51 }},
		"batch ID":       {"batch=" + fx.batch, func(p JobsPage) bool { return p.Total == 51 }},
		"tag":            {"tag=team%3Dsearch", func(p JobsPage) bool { return p.Total == 51 }},
		"tag key":        {"tag=team", func(p JobsPage) bool { return p.Total == 51 }},
		"other tag":      {"tag=team%3Dads", func(p JobsPage) bool { return p.Total == 0 && p.Pages == 1 }},
		"running":        {"status=running", func(p JobsPage) bool { return hasRow(p, fx.running2) }},
		"page past end":  {"page=99", func(p JobsPage) bool { return p.Page == p.Pages }},
		"page not a num": {"page=abc", func(p JobsPage) bool { return p.Page == 1 }},
	} {
		t.Run(name, func(t *testing.T) {
			p, _ := jobsJSON(t, c, tc.query)
			if !tc.want(p) {
				t.Errorf("%s: total %d, %d rows, counts %v", tc.query, p.Total, len(p.Rows), p.Counts)
			}
		})
	}
	// A final job has a duration; the failed one its reason.
	for _, r := range all.Rows {
		if r.ID == fx.ok && r.Duration <= 0 {
			t.Errorf("succeeded job without a duration: %+v", r)
		}
		if r.ID == fx.failed && !strings.Contains(r.Reason, "KeyError") {
			t.Errorf("failed job's reason: %q", r.Reason)
		}
	}
}

func hasRow(p JobsPage, id string) bool {
	for _, r := range p.Rows {
		if r.ID == id {
			return true
		}
	}
	return false
}

// TestJobPages: each job's page, its JSON, and what the store records of its timeline.
func TestJobPages(t *testing.T) {
	setup(t)
	c := login(t)
	for name, tc := range map[string]struct {
		id   string
		want []string
	}{
		"success": {fx.okFunc, []string{"add", `class="badge ok"`, "environment", "running", "5"}},
		"failure": {fx.failed, []string{"explode", "KeyError", "missing-key-3", `class="traceback"`, "Traceback", "in inner"}},
		"running": {fx.running2, []string{"train-2", "RUNNING", "/jobs/" + fx.running2 + "/cancel", `name="token"`, "data-confirm"}},
		"command": {fx.ok, []string{"hello", "SUCCEEDED", "Clean up"}},
	} {
		t.Run(name, func(t *testing.T) {
			code, _, body := get(t, c, "/jobs/"+tc.id)
			if code != 200 {
				t.Fatalf("%d: %s", code, body)
			}
			for _, w := range tc.want {
				if !strings.Contains(body, w) {
					t.Errorf("the page of %s lacks %q", tc.id, w)
				}
			}
		})
	}
	code, _, body := get(t, c, "/api/jobs/"+fx.okFunc)
	var v struct {
		Status   job.State     `json:"status"`
		Final    bool          `json:"final"`
		Envelope *job.Envelope `json:"envelope"`
		Timeline string        `json:"timeline_html"`
	}
	if code != 200 || json.Unmarshal([]byte(body), &v) != nil {
		t.Fatalf("%d %s", code, body)
	}
	e := v.Envelope
	if v.Status != job.Succeeded || !v.Final || e == nil || e.StartedAt.IsZero() || e.CalledAt.Before(e.StartedAt) || e.FinishedAt.Before(e.CalledAt) {
		t.Errorf("status %s final %v envelope %+v: want the runner's started ≤ called ≤ finished", v.Status, v.Final, e)
	}
	if !strings.Contains(v.Timeline, "<svg") {
		t.Errorf("timeline_html: %q", v.Timeline)
	}
	// A batch input's small value is kept inside its envelope: the API gives its repr,
	// not the pickle.
	child := job.ChildID(fx.batch, 3)
	code, _, body = get(t, c, "/api/jobs/"+child)
	if code != 200 || !strings.Contains(body, `"value_repr": "9"`) && !strings.Contains(body, `"value_repr":"9"`) || strings.Contains(body, `"value":`) {
		t.Errorf("/api/jobs/%s: %d %s", child, code, body)
	}
}

// TestBadPaths: IDs that are not IDs, IDs of no job, paths with "..", in every form.
func TestBadPaths(t *testing.T) {
	setup(t)
	c := login(t)
	for _, p := range []string{
		"/jobs/not-a-job", "/jobs/job-0000000000aaaaaaaaaaaaa", "/api/jobs/job-0000000000aaaaaaaaaaaaa",
		"/api/jobs/nope/logs", "/jobs/..%2F..%2Fetc%2Fpasswd", "/api/jobs/%2E%2E/logs", "/jobs/.." + "%2f" + "store",
		"/batches/grp-0000000000aaaaaaaaaaaaa", "/batches/..%2Fjobs", "/api/batches/NOPE",
	} {
		code, _, body := get(t, c, p)
		if code != 404 {
			t.Errorf("GET %s: %d, want 404 (%.200s)", p, code, body)
		}
	}
	// Raw "..": the router cleans the path (a redirect), and nothing outside the
	// embedded files is served.
	for _, p := range []string{"/static/../../../../etc/passwd", "/static/..%2f..%2fdashboard.go", "/jobs/../../etc/passwd", "/static/%2e%2e/templates/jobs.html"} {
		req, _ := http.NewRequest("GET", fx.ts.URL+"/", nil)
		req.URL.Opaque = p // sent as is, not cleaned by the client
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == 200 || strings.Contains(string(b), "root:") || strings.Contains(string(b), "package dashboard") || strings.Contains(string(b), "{{define") {
			t.Errorf("GET %s: %d %.100q", p, resp.StatusCode, b)
		}
	}
	if code, _, _ := get(t, c, "/api/jobs/"+fx.ok+"/logs?offset=-3"); code != 400 {
		t.Errorf("a negative offset: %d, want 400", code)
	}
	if code, _, _ := get(t, c, "/api/jobs/"+fx.ok+"/logs?offset=x"); code != 400 {
		t.Errorf("an offset that is not a number: %d, want 400", code)
	}
}

// TestLogs: a final job's whole log; a running job's log read on from an offset grows.
func TestLogs(t *testing.T) {
	setup(t)
	c := login(t)
	code, h, body := get(t, c, "/api/jobs/"+fx.ok+"/logs")
	if code != 200 || !strings.Contains(body, "hello from kinetic") || h.Get("X-Final") != "1" || h.Get("X-Next-Offset") != strconv.Itoa(len(body)) {
		t.Fatalf("%d final=%s next=%s %q", code, h.Get("X-Final"), h.Get("X-Next-Offset"), body)
	}
	if code, h, body := get(t, c, "/api/jobs/"+fx.ok+"/logs?offset=999999"); code != 200 || body != "" || h.Get("X-Final") != "1" {
		t.Errorf("past the end: %d %q final=%s", code, body, h.Get("X-Final"))
	}
	_, h, first := get(t, c, "/api/jobs/"+fx.running2+"/logs")
	off := h.Get("X-Next-Offset")
	if h.Get("X-Final") != "0" {
		t.Fatalf("a running job's log says final")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, h2, more := get(t, c, "/api/jobs/"+fx.running2+"/logs?offset="+off)
		if strings.Contains(more, "step ") {
			n, _ := strconv.Atoi(off)
			if next, _ := strconv.Atoi(h2.Get("X-Next-Offset")); next != n+len(more) {
				t.Errorf("next offset %d, want %d", next, n+len(more))
			}
			if strings.Contains(first, more) && len(first) > 0 {
				t.Errorf("the log from an offset repeats what was read")
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the running job's log did not grow past %s bytes", off)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// TestActions: cancel and clean up are POSTs that need the token in the form; GET is
// refused with 405.
func TestActions(t *testing.T) {
	setup(t)
	c := login(t)
	ctx := context.Background()
	path := "/jobs/" + fx.running2 + "/cancel"
	if code, h, _ := get(t, c, path); code != http.StatusMethodNotAllowed || !strings.Contains(h.Get("Allow"), "POST") {
		t.Errorf("GET %s: %d, want 405 (POST only)", path, code)
	}
	if code, _, _ := post(t, c, path, nil); code != http.StatusForbidden {
		t.Errorf("POST with the cookie but no token in the form: %d, want 403", code)
	}
	if code, _, _ := post(t, client(t), path, url.Values{"token": {fx.token}}); code != http.StatusUnauthorized {
		t.Errorf("POST without the cookie: %d, want 401", code)
	}
	if code, _, _ := post(t, c, path, url.Values{"token": {"wrong"}}); code != http.StatusForbidden {
		t.Errorf("POST with a wrong token: %d, want 403", code)
	}
	j, err := fx.e.Attach(ctx, fx.running2, fx.store)
	if err != nil {
		t.Fatal(err)
	}
	if s, _, _ := j.Status(ctx); s != job.Running {
		t.Fatalf("the job is %s before the cancel", s)
	}
	code, h, body := post(t, c, path, url.Values{"token": {fx.token}})
	if code != http.StatusSeeOther || h.Get("Location") != "/jobs/"+fx.running2+"?done=cancel" {
		t.Fatalf("cancel: %d %q %s", code, h.Get("Location"), body)
	}
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if s, reason, err := j.Wait(wctx, nil); err != nil || s != job.Failed {
		t.Errorf("after cancel: %s (%s) %v", s, reason, err)
	}
	if code, _, _ := post(t, c, "/jobs/job-0000000000aaaaaaaaaaaaa/cancel", url.Values{"token": {fx.token}}); code != 404 {
		t.Errorf("cancel of no job: %d, want 404", code)
	}
	if code, _, _ := get(t, c, "/batches/"+fx.batch+"/cancel"); code != http.StatusMethodNotAllowed {
		t.Errorf("GET batch cancel: %d, want 405", code)
	}
	if code, _, _ := post(t, c, "/batches/"+fx.batch+"/cancel", nil); code != http.StatusForbidden {
		t.Errorf("batch cancel without the form token: %d, want 403", code)
	}
	// The batch is final: cancelling it changes nothing, and says so on its page.
	if code, h, _ := post(t, c, "/batches/"+fx.batch+"/cancel", url.Values{"token": {fx.token}}); code != http.StatusSeeOther || h.Get("Location") != "/batches/"+fx.batch+"?done=cancel" {
		t.Errorf("batch cancel: %d %q", code, h.Get("Location"))
	}
	if code, _, body := get(t, c, "/batches/"+fx.batch+"?done=cancel"); code != 200 || !strings.Contains(body, "Cancel requested") || !strings.Contains(body, "SUCCEEDED 49") {
		t.Errorf("the batch page after a cancel: %d", code)
	}
	if code, _, _ := post(t, c, "/batches/grp-0000000000aaaaaaaaaaaaa/cancel", url.Values{"token": {fx.token}}); code != 404 {
		t.Errorf("cancel of no batch: %d, want 404", code)
	}

	// Clean up a job made for it.
	jc, err := fx.e.Submit(ctx, &engine.SubmitRequest{Kind: job.KindCommand, Command: []string{"true"}, NoWorkdir: true, DisplayName: "to-clean"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := jc.Wait(wctx, nil); err != nil {
		t.Fatal(err)
	}
	id := jc.Handle.JobID
	if code, _, _ := get(t, c, "/jobs/"+id+"/cleanup"); code != http.StatusMethodNotAllowed {
		t.Errorf("GET cleanup: %d, want 405", code)
	}
	code, h, _ = post(t, c, "/jobs/"+id+"/cleanup", url.Values{"token": {fx.token}})
	if code != http.StatusSeeOther || h.Get("Location") != "/jobs?cleaned="+id {
		t.Fatalf("cleanup: %d %q", code, h.Get("Location"))
	}
	if code, _, _ := get(t, c, "/jobs/"+id); code != 404 {
		t.Errorf("the cleaned-up job's page: %d, want 404", code)
	}
	if code, _, body := get(t, c, "/jobs?cleaned="+id); code != 200 || !strings.Contains(body, "Cleaned up "+id) {
		t.Errorf("no notice after the cleanup: %d", code)
	}
}

// TestBatchPages: the batch list, a batch's counts, chart (a row per input, the retry
// marked) and failure, and its JSON.
func TestBatchPages(t *testing.T) {
	setup(t)
	c := login(t)
	code, _, body := get(t, c, "/batches")
	if code != 200 || !strings.Contains(body, "squares") || !strings.Contains(body, fx.batch) || !strings.Contains(body, "team=search") {
		t.Fatalf("/batches: %d", code)
	}
	code, _, body = get(t, c, "/batches/"+fx.batch)
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	for _, w := range []string{`class="gantt"`, ">#0<", ">#49<", `class="retry"`, "seven is not welcome here", "ValueError", "SUCCEEDED 49", "FAILED 1", "50</b> of <b>50"} {
		if !strings.Contains(body, w) {
			t.Errorf("the batch page lacks %q", w)
		}
	}
	if n := strings.Count(body, `class="att ok"`); n != 49 {
		t.Errorf("%d succeeded bars in the chart, want 49", n)
	}
	code, _, body = get(t, c, "/api/batches/"+fx.batch)
	var v struct {
		Counts map[string]int `json:"counts"`
		Done   int            `json:"done"`
		Final  bool           `json:"final"`
		Gantt  string         `json:"gantt_html"`
	}
	if code != 200 || json.Unmarshal([]byte(body), &v) != nil {
		t.Fatalf("%d %s", code, body)
	}
	if v.Counts["SUCCEEDED"] != 49 || v.Counts["FAILED"] != 1 || v.Done != 50 || !v.Final || !strings.Contains(v.Gantt, "<svg") {
		t.Errorf("batch JSON: %+v", v)
	}
}

// TestClusterLocal: on the local backend the cluster page says so plainly.
func TestClusterLocal(t *testing.T) {
	setup(t)
	code, _, body := get(t, login(t), "/cluster")
	if code != 200 || !strings.Contains(body, "The backend is <b>local</b>") {
		t.Errorf("%d %s", code, body)
	}
}

func TestNewToken(t *testing.T) {
	setup(t)
	a, err := NewToken()
	b, _ := NewToken()
	if err != nil || len(a) < 32 || a == b {
		t.Errorf("tokens %q %q %v", a, b, err)
	}
	if _, err := New(fx.e, Options{Token: "short"}); err == nil {
		t.Error("a short token was accepted")
	}
}
