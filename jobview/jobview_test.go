package jobview

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
)

func newStore(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), "mem://")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func put(t *testing.T, st *store.Store, key string, b []byte) {
	t.Helper()
	if err := st.Put(context.Background(), key, b); err != nil {
		t.Fatal(err)
	}
}

func putStatus(t *testing.T, st *store.Store, id string, s job.Status) {
	t.Helper()
	b, _ := json.Marshal(s)
	put(t, st, store.StatusKey(id), b)
}

func TestRecorded(t *testing.T) {
	ctx := context.Background()
	code := 3
	cases := []struct {
		name       string
		setup      func(t *testing.T, st *store.Store, id string)
		state      job.State
		reasonPart string
		final      bool
	}{
		{"unknown", func(*testing.T, *store.Store, string) {}, job.NotFound, "", true},
		{"handle only", func(t *testing.T, st *store.Store, id string) {
			put(t, st, store.HandleKey(id), []byte(`{"job_id":"`+id+`"}`))
		}, job.Pending, "", false},
		{"running", func(t *testing.T, st *store.Store, id string) {
			put(t, st, store.HandleKey(id), []byte(`{}`))
			putStatus(t, st, id, job.Status{State: job.Running})
		}, job.Running, "", false},
		{"cancelled", func(t *testing.T, st *store.Store, id string) {
			putStatus(t, st, id, job.Status{State: job.Failed, Reason: "cancelled"})
			put(t, st, store.EnvelopeKey(id), (&job.Envelope{Success: true}).Encode())
		}, job.Failed, "cancelled", true},
		{"succeeded", func(t *testing.T, st *store.Store, id string) {
			putStatus(t, st, id, job.Status{State: job.Running})
			put(t, st, store.EnvelopeKey(id), (&job.Envelope{Success: true}).Encode())
		}, job.Succeeded, "", true},
		{"failed", func(t *testing.T, st *store.Store, id string) {
			put(t, st, store.EnvelopeKey(id), (&job.Envelope{Phase: job.PhaseCall, ExcType: "ValueError", ExcMessage: "boom", ExitCode: &code}).Encode())
		}, job.Failed, "ValueError", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, id := newStore(t), job.NewID()
			c.setup(t, st, id)
			state, reason, final, err := Recorded(ctx, st, id)
			if err != nil || state != c.state || final != c.final || !strings.Contains(reason, c.reasonPart) {
				t.Fatalf("Recorded = %s, %q, %v, %v; want %s, ~%q, %v", state, reason, final, err, c.state, c.reasonPart, c.final)
			}
			if got := FinalStatus(ctx, st, id); (got != nil) != (c.name == "cancelled") {
				t.Fatalf("FinalStatus = %+v", got)
			}
		})
	}
}

// TestRecordedDamagedEnvelope: a result.json that cannot be read says nothing of how the
// job ended: the job is damaged, named as a damaged status.json is (it was FAILED "the
// job's result.json is unreadable: unexpected end of JSON input", Go's words).
func TestRecordedDamagedEnvelope(t *testing.T) {
	for name, raw := range map[string]string{"cut short": "{", "empty": "", "garbage": "\x00garbage"} {
		t.Run(name, func(t *testing.T) {
			st, id := newStore(t), job.NewID()
			put(t, st, store.EnvelopeKey(id), []byte(raw))
			_, _, _, err := Recorded(context.Background(), st, id)
			if !errors.Is(err, job.ErrDamaged) || !strings.Contains(err.Error(), id) || !strings.Contains(err.Error(), "result.json") || strings.Contains(err.Error(), "JSON input") {
				t.Fatalf("Recorded of a damaged result.json: %v", err)
			}
		})
	}
}

func TestWaitLogsTailResult(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st, id := newStore(t), job.NewID()
	put(t, st, store.HandleKey(id), []byte(`{}`))
	j := New(st, id)
	var seen []job.State
	done := make(chan error, 1)
	var logs bytes.Buffer
	go func() { done <- j.Logs(ctx, &logs, true) }()
	go func() {
		for i := 0; i < 3; i++ {
			put(t, st, store.LogChunkKey(id, i), []byte(strings.Repeat("x", i)+"line\n"))
			time.Sleep(20 * time.Millisecond)
		}
		putStatus(t, st, id, job.Status{State: job.Running})
		put(t, st, store.ResultKey(id), []byte("pickled"))
		put(t, st, store.EnvelopeKey(id), (&job.Envelope{Success: true, HasValue: true}).Encode())
	}()
	state, _, err := j.Wait(ctx, func(s job.State) { seen = append(seen, s) })
	if err != nil || state != job.Succeeded || seen[0] != job.Pending || seen[len(seen)-1] != job.Succeeded {
		t.Fatalf("Wait = %s, %v; states %v", state, err, seen)
	}
	if err := <-done; err != nil || logs.String() != "line\nxline\nxxline\n" {
		t.Fatalf("followed logs %q, %v", logs.String(), err)
	}
	if tail, err := j.Tail(ctx, 2); err != nil || tail != "xline\nxxline\n" {
		t.Fatalf("Tail(2) = %q, %v", tail, err)
	}
	res, err := j.Result(ctx, ValueTo{Dir: t.TempDir()})
	if err != nil || !res.Envelope.Success || res.ValuePath == "" || res.Value != nil {
		t.Fatalf("Result = %+v, %v", res, err)
	}
	if b, _ := os.ReadFile(res.ValuePath); string(b) != "pickled" {
		t.Fatalf("value %q", b)
	}
	// A value of at most InlineMax bytes comes inline, with no file; a larger one in a
	// file, whole.
	dir := t.TempDir()
	res, err = j.Result(ctx, ValueTo{Dir: dir, InlineMax: len("pickled")})
	if err != nil || string(res.Value) != "pickled" || res.ValuePath != "" {
		t.Fatalf("inline Result = %+v, %v", res, err)
	}
	res, err = j.Result(ctx, ValueTo{Dir: dir, InlineMax: len("pickled") - 1})
	if err != nil || res.Value != nil || res.ValuePath == "" {
		t.Fatalf("Result over InlineMax = %+v, %v", res, err)
	}
	if b, _ := os.ReadFile(res.ValuePath); string(b) != "pickled" {
		t.Fatalf("value over InlineMax %q", b)
	}
	if err := j.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := j.Result(ctx, ValueTo{}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Result after Delete: %v, want ErrNotFound", err)
	}
}

func TestResultOfFailedHostAndNoResult(t *testing.T) {
	ctx := context.Background()
	st, id := newStore(t), job.NewID()
	j := New(st, id)
	put(t, st, store.LogChunkKey(id, 0), []byte("a\nb\nc\n"))
	if _, err := j.ResultOf(ctx, job.Failed, "killed", ValueTo{}); !errors.Is(err, ErrNoResult) || !strings.Contains(err.Error(), "killed") || !strings.Contains(err.Error(), "b\nc") {
		t.Fatalf("ResultOf without an envelope: %v", err)
	}
	// Host 1 ended well (its envelope says so), host 2 failed: the job's exception is host 2's.
	put(t, st, store.HostEnvelopeKey(id, "1"), (&job.Envelope{Host: "1", Success: true}).Encode())
	put(t, st, store.HostEnvelopeKey(id, "2"), (&job.Envelope{Host: "2", ExcType: "ValueError"}).Encode())
	res, err := j.ResultOf(ctx, job.Failed, "host 2 failed", ValueTo{})
	if err != nil || res.Envelope.Host != "2" || res.Envelope.ExcType != "ValueError" {
		t.Fatalf("ResultOf with a failed host = %+v, %v", res, err)
	}
	// A host's envelope cut short: the error names that host's object, not the job's
	// result.json (which it does not have).
	put(t, st, store.HostEnvelopeKey(id, "1"), []byte(`{"host": "1", "succ`))
	put(t, st, store.HostEnvelopeKey(id, "2"), (&job.Envelope{Host: "2", Success: true}).Encode())
	if _, err := j.ResultOf(ctx, job.Failed, "host 1 failed", ValueTo{}); !errors.Is(err, job.ErrDamaged) || !strings.Contains(err.Error(), "hosts/1/result.json") {
		t.Errorf("ResultOf with a host's envelope cut short: %v, want it damaged naming hosts/1/result.json", err)
	}
}

func TestLastLines(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"a\nb\nc\n", 2, "b\nc\n"},
		{"a\nb\nc", 2, "b\nc"},
		{"a\nb\n", 5, "a\nb\n"},
		{"a\n", 0, ""},
		{"", 3, ""},
	} {
		if got := lastLines(c.s, c.n); got != c.want {
			t.Errorf("lastLines(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}

// TestLogsUntil: a follower for a caller that waits itself looks at no status (the
// caller's wait is the only poll), writes every chunk written before the end in order,
// the last one included, and returns as soon as the caller says the job ended.
func TestLogsUntil(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st, id := newStore(t), job.NewID()
	put(t, st, store.HandleKey(id), []byte(`{}`))
	j := New(st, id)
	polled := 0
	j.Live = func(context.Context) (job.State, string, error) { polled++; return job.Running, "", nil }
	ended := make(chan struct{})
	done := make(chan error, 1)
	var logs bytes.Buffer
	go func() { done <- j.LogsUntil(ctx, &logs, ended) }()
	for i := 0; i < 3; i++ {
		put(t, st, store.LogChunkKey(id, i), []byte(strings.Repeat("x", i)+"line\n"))
		time.Sleep(30 * time.Millisecond)
	}
	// Written just before the end: the caller's wait saw the job terminal after this.
	put(t, st, store.LogChunkKey(id, 3), []byte("last\n"))
	select {
	case err := <-done:
		t.Fatalf("LogsUntil returned before the end: %v", err)
	default:
	}
	t0 := time.Now()
	close(ended)
	select {
	case err := <-done:
		if err != nil || logs.String() != "line\nxline\nxxline\nlast\n" {
			t.Fatalf("followed logs %q, %v", logs.String(), err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("LogsUntil did not return after the end")
	}
	if d := time.Since(t0); d > time.Second {
		t.Errorf("LogsUntil took %s after the end", d)
	}
	if polled != 0 {
		t.Errorf("LogsUntil looked at the job's status %d times; the caller's wait is the only poll", polled)
	}

	// Cancelled: it returns the context's error.
	cctx, ccancel := context.WithCancel(ctx)
	go func() { done <- j.LogsUntil(cctx, io.Discard, make(chan struct{})) }()
	ccancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled LogsUntil = %v", err)
	}
}

// TestResultInlineOnly: InlineOnly reads a small value inline and skips a larger one
// without a file; an InlineMax beyond the read buffer never passes a cut value as whole.
func TestResultInlineOnly(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	small, big := job.NewID(), job.NewID()
	bigValue := bytes.Repeat([]byte("v"), 100<<10) // larger than the 64 KiB read buffer
	for id, v := range map[string][]byte{small: []byte("pickled"), big: bigValue} {
		put(t, st, store.ResultKey(id), v)
		put(t, st, store.EnvelopeKey(id), (&job.Envelope{Success: true, HasValue: true}).Encode())
	}
	res, err := New(st, small).ResultOf(ctx, job.Succeeded, "", ValueTo{InlineMax: 100, InlineOnly: true})
	if err != nil || string(res.Value) != "pickled" || res.Skipped || res.ValuePath != "" {
		t.Fatalf("small value: %+v, %v", res, err)
	}
	res, err = New(st, big).ResultOf(ctx, job.Succeeded, "", ValueTo{InlineMax: 100, InlineOnly: true})
	if err != nil || res.Value != nil || !res.Skipped || res.ValuePath != "" {
		t.Fatalf("large value: %+v, %v", res, err)
	}
	// InlineMax above the buffer: the large value is not inline (cut), but in a file.
	dir := t.TempDir()
	res, err = New(st, big).ResultOf(ctx, job.Succeeded, "", ValueTo{Dir: dir, InlineMax: 1 << 20})
	if err != nil || res.Value != nil || res.ValuePath == "" {
		t.Fatalf("InlineMax above the buffer: %+v, %v", res, err)
	}
	if b, _ := os.ReadFile(res.ValuePath); !bytes.Equal(b, bigValue) {
		t.Fatalf("value in the file: %d bytes, want %d", len(b), len(bigValue))
	}
}

// TestResultRecorded: the end and the result in one read, decided as Recorded decides.
func TestResultRecorded(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	vt := ValueTo{InlineMax: 100, InlineOnly: true}
	ok := (&job.Envelope{Success: true, HasValue: true}).Encode()

	cancelled := job.NewID() // a final status.json decides, even over a success
	putStatus(t, st, cancelled, job.Status{State: job.Failed, Reason: "cancelled"})
	put(t, st, store.EnvelopeKey(cancelled), ok)
	put(t, st, store.ResultKey(cancelled), []byte("v"))
	if res, found, err := New(st, cancelled).ResultRecorded(ctx, vt); !found || err != nil || res.State != job.Failed || res.Reason != "cancelled" {
		t.Errorf("cancelled: %+v %v %v", res, found, err)
	}

	failed := job.NewID() // a running status.json: the envelope decides
	putStatus(t, st, failed, job.Status{State: job.Running})
	put(t, st, store.EnvelopeKey(failed), (&job.Envelope{Success: false, Phase: "call", ExcType: "ValueError", ExcMessage: "bad", HasValue: true}).Encode())
	put(t, st, store.ResultKey(failed), []byte("exc"))
	res, found, err := New(st, failed).ResultRecorded(ctx, vt)
	if !found || err != nil || res.State != job.Failed || !strings.Contains(res.Reason, "bad") || string(res.Value) != "exc" {
		t.Errorf("failed: %+v %v %v", res, found, err)
	}
	if state, reason, _, _ := Recorded(ctx, st, failed); state != res.State || reason != res.Reason {
		t.Errorf("failed: ResultRecorded says %s %q, Recorded %s %q", res.State, res.Reason, state, reason)
	}

	running := job.NewID() // no end recorded: the caller asks the backend
	putStatus(t, st, running, job.Status{State: job.Running})
	if _, found, err := New(st, running).ResultRecorded(ctx, vt); found || err != nil {
		t.Errorf("running: found %v, %v", found, err)
	}
	damaged := job.NewID() // an envelope that cannot be read: the caller's path says why
	put(t, st, store.EnvelopeKey(damaged), []byte("{"))
	if _, found, err := New(st, damaged).ResultRecorded(ctx, vt); found || err != nil {
		t.Errorf("damaged: found %v, %v", found, err)
	}
}

// TestEnvelopeValue: a value its envelope carries (a batch input's small value, no
// result.pkl) is given inline, skipped, or in a file, as a value from result.pkl is; the
// result's envelope does not carry it a second time.
func TestEnvelopeValue(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	gid := "grp-" + strings.TrimPrefix(job.NewID(), "job-")
	id := job.ChildID(gid, 3)
	put(t, st, store.EnvelopeKey(id), (&job.Envelope{Success: true, HasValue: true, Value: []byte("pickled")}).Encode())
	if ok, _ := st.Exists(ctx, store.ResultKey(id)); ok {
		t.Fatal("the test's child has a result.pkl")
	}
	dir := t.TempDir()
	for _, c := range []struct {
		vt                    ValueTo
		inline, skipped, file bool
	}{
		{ValueTo{InlineMax: 100, InlineOnly: true}, true, false, false},
		{ValueTo{InlineMax: 3, InlineOnly: true}, false, true, false},
		{ValueTo{Dir: dir, InlineMax: 100}, true, false, false},
		{ValueTo{Dir: dir}, false, false, true},
	} {
		res, err := New(st, id).ResultOf(ctx, job.Succeeded, "", c.vt)
		if err != nil {
			t.Fatalf("%+v: %v", c.vt, err)
		}
		if (string(res.Value) == "pickled") != c.inline || res.Skipped != c.skipped || (res.ValuePath != "") != c.file {
			t.Errorf("%+v: value %q skipped %v file %q", c.vt, res.Value, res.Skipped, res.ValuePath)
		}
		if c.file {
			if b, _ := os.ReadFile(res.ValuePath); string(b) != "pickled" {
				t.Errorf("the file holds %q", b)
			}
		}
		if res.Envelope == nil || res.Envelope.Value != nil || !res.Envelope.HasValue {
			t.Errorf("%+v: the result's envelope %+v", c.vt, res.Envelope)
		}
	}
	// Asked for no value (`jobs result --json` prints the envelope): not in the envelope.
	res, err := New(st, id).ResultOf(ctx, job.Succeeded, "", ValueTo{})
	if err != nil || res.Envelope == nil || res.Envelope.Value != nil || res.Value != nil || res.ValuePath != "" {
		t.Errorf("no value asked: %+v %v", res, err)
	}
	// Read with the watch's one read of the envelope, too.
	res, ok, err := New(st, id).ResultRecorded(ctx, ValueTo{InlineMax: 100, InlineOnly: true})
	if !ok || err != nil || string(res.Value) != "pickled" || res.State != job.Succeeded || res.Envelope.Value != nil {
		t.Errorf("ResultRecorded: %+v %v %v", res, ok, err)
	}
}
