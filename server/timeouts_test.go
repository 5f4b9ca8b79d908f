package server

import (
	"context"
	"encoding/json"
	"io"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/kinetic-run/kinetic/batch"
	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/engine"
	"github.com/kinetic-run/kinetic/protocol"
)

// TestHugeTimeoutsAreNoLimit: seconds above a century (1e10, sys.maxsize, 1e300) are no
// limit, never a duration that wrapped around into a deadline already past (issue 45:
// result(timeout=1e300) raised TimeoutError at once, run(timeout=1e12) was "negative").
func TestHugeTimeoutsAreNoLimit(t *testing.T) {
	for _, secs := range []float64{0, -1, 1e10, float64(math.MaxInt64), 1e300, math.MaxFloat64} {
		ctx, cancel := withTimeout(context.Background(), secs)
		if d, ok := ctx.Deadline(); ok {
			t.Errorf("withTimeout(%g): a deadline %v away, want none", secs, time.Until(d))
		}
		cancel()
		if r := submitRequest(&protocol.SubmitRequest{Timeout: secs}); r.Timeout != 0 {
			t.Errorf("submit timeout %g: %v, want 0 (no limit)", secs, r.Timeout)
		}
	}
	ctx, cancel := withTimeout(context.Background(), 90)
	defer cancel()
	if d, ok := ctx.Deadline(); !ok || time.Until(d) < 80*time.Second || time.Until(d) > 91*time.Second {
		t.Errorf("withTimeout(90): deadline %v, %v", d, ok)
	}
	if r := submitRequest(&protocol.SubmitRequest{Timeout: 1.5}); r.Timeout != 1500*time.Millisecond {
		t.Errorf("submit timeout 1.5: %v", r.Timeout)
	}
}

// TestResultsManyNeverEmpty: results_many whose wait ends before it read an entry says
// so for that entry (a Timeout, or Cancelled), never an entry with neither result nor
// error, which the SDK took for a failure of the job with empty causes ("RemoteError:
// Exception:").
func TestResultsManyNeverEmpty(t *testing.T) {
	home := t.TempDir()
	t.Setenv("KINETIC_HOME", home)
	t.Setenv("KINETIC_PROFILES_FILE", filepath.Join(home, "profiles.json"))
	eng, err := engine.New(config.Options{}, engine.WithUnwritten(batch.Unwritten{}))
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	s := newServer(context.Background(), eng, io.Discard)
	ids := []string{"job-0123456789abcdefghijklm", "job-0123456789abcdefghijkln", "job-0123456789abcdefghijklp"}
	params, _ := json.Marshal(protocol.ResultsManyRequest{JobIDs: ids, Store: "file://" + t.TempDir()})
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the request ends before anything is read
	req := protocol.Request{ID: 1, Method: protocol.MethodResultsMany, Params: params}
	res, err := s.dispatch(&call{Context: ctx, s: s, id: 1}, &req)
	if err != nil {
		t.Fatal(err)
	}
	rows := res.([]protocol.JobResult)
	if len(rows) != len(ids) {
		t.Fatalf("%d rows for %d IDs", len(rows), len(ids))
	}
	for i, r := range rows {
		if r.JobID != ids[i] {
			t.Errorf("row %d: job %q, want %q", i, r.JobID, ids[i])
		}
		if r.Result == nil && r.Error == nil {
			t.Errorf("row %d (%s): neither a result nor an error", i, r.JobID)
		}
	}
}
