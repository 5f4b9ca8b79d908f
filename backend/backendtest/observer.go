package backendtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/job"
)

// RunObserver is the conformance suite of backend.Observer: what h.New returns must
// implement it. It checks the interface's doc comment: List sees the backend's jobs
// without the store (a job is listed while it runs and not after Cleanup), StreamLogs
// reads a running job's output at the source (all of it, its last lines, or followed to
// the end) and says ErrNoLogs when there is nothing there.
func RunObserver(t *testing.T, h Harness) {
	if h.Observe == nil {
		t.Fatal("backendtest: Harness.Observe is required")
	}
	t.Run("ListsARunningJob", h.listsARunningJob)
	t.Run("LogsAtTheSource", h.logsAtTheSource)
	t.Run("FollowsToTheEnd", h.followsToTheEnd)
	t.Run("NoLogsForAnUnknownJob", h.noLogsForAnUnknownJob)
}

func (h *Harness) listsARunningJob(t *testing.T) {
	ctx := context.Background()
	b, st := h.New(t)
	o := asObserver(t, b)
	j := h.submit(t, b, st, "sh", "-c", "echo started; sleep 300")
	defer j.Cleanup(ctx, true, true)
	waitFor(t, j, job.Running, h.deadline())
	if !listed(ctx, t, o, j.Handle.JobID) {
		t.Fatalf("List does not hold running job %s", j.Handle.JobID)
	}
	if err := j.Cleanup(ctx, true, false); err != nil {
		t.Fatalf("Cleanup: %v", err)
	}
	deadline := time.Now().Add(h.deadline())
	for listed(ctx, t, o, j.Handle.JobID) {
		if time.Now().After(deadline) {
			t.Fatalf("List still holds %s %s after Cleanup", j.Handle.JobID, h.deadline())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// listed reports whether o's List holds the job id.
func listed(ctx context.Context, t *testing.T, o backend.Observer, id string) bool {
	t.Helper()
	hs, err := o.List(ctx)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	for _, h := range hs {
		if h.JobID == id {
			return true
		}
	}
	return false
}

// logsAtTheSource: a running job's output is there while it runs, whole and as its
// last lines.
func (h *Harness) logsAtTheSource(t *testing.T) {
	ctx := context.Background()
	b, st := h.New(t)
	o := asObserver(t, b)
	j := h.submit(t, b, st, "sh", "-c", "for i in 1 2 3 4 5; do echo line $i; done; sleep 300")
	defer j.Cleanup(ctx, true, true)
	waitFor(t, j, job.Running, h.deadline())
	var all string
	deadline := time.Now().Add(h.deadline())
	for !strings.Contains(all, "line 5\n") {
		if time.Now().After(deadline) {
			t.Fatalf("StreamLogs of running job %s = %q after %s, want lines 1 to 5", j.Handle.JobID, all, h.deadline())
		}
		time.Sleep(100 * time.Millisecond)
		var buf bytes.Buffer
		if err := o.StreamLogs(ctx, j.Handle, false, 0, &buf); err != nil && !errors.Is(err, backend.ErrNoLogs) {
			t.Fatalf("StreamLogs: %v", err)
		}
		all = buf.String()
	}
	if !strings.Contains(all, "line 1\n") {
		t.Errorf("StreamLogs = %q, want every line from line 1", all)
	}
	var tail bytes.Buffer
	if err := o.StreamLogs(ctx, j.Handle, false, 2, &tail); err != nil {
		t.Fatalf("StreamLogs with tailLines 2: %v", err)
	}
	if !strings.HasSuffix(tail.String(), "line 4\nline 5\n") || strings.Contains(tail.String(), "line 3") {
		t.Errorf("StreamLogs with tailLines 2 = %q, want the last two lines", tail.String())
	}
}

// followsToTheEnd: following a running job's output returns when the job ends, with
// every line.
func (h *Harness) followsToTheEnd(t *testing.T) {
	ctx := context.Background()
	b, st := h.New(t)
	o := asObserver(t, b)
	j := h.submit(t, b, st, "sh", "-c", "sleep 1; for i in $(seq 1 20); do echo line $i; sleep 0.1; done")
	defer j.Cleanup(ctx, true, true)
	waitFor(t, j, job.Running, h.deadline())
	fctx, cancel := context.WithTimeout(ctx, h.deadline())
	defer cancel()
	var buf bytes.Buffer
	err := o.StreamLogs(fctx, j.Handle, true, 0, &buf)
	if errors.Is(err, backend.ErrNoLogs) {
		t.Skipf("the job ended before its output could be followed at the source: %v", err)
	}
	if err != nil {
		t.Fatalf("StreamLogs following: %v (after %q)", err, buf.String())
	}
	if fctx.Err() != nil {
		t.Fatalf("StreamLogs following did not return when the job ended (%s)", h.deadline())
	}
	for i := 1; i <= 20; i++ {
		if !strings.Contains(buf.String(), fmt.Sprintf("line %d\n", i)) {
			t.Fatalf("followed output lacks line %d: %q", i, buf.String())
		}
	}
}

func (h *Harness) noLogsForAnUnknownJob(t *testing.T) {
	b, _ := h.New(t)
	o := asObserver(t, b)
	jh := &job.Handle{JobID: job.NewID(), Backend: b.Name()}
	jh.K8sName = jh.JobID
	err := o.StreamLogs(context.Background(), jh, false, 0, &bytes.Buffer{})
	if !errors.Is(err, backend.ErrNoLogs) {
		t.Fatalf("StreamLogs of an unknown job = %v, want ErrNoLogs", err)
	}
}

func asObserver(t *testing.T, b backend.Backend) backend.Observer {
	t.Helper()
	o, ok := b.(backend.Observer)
	if !ok {
		t.Fatalf("backend %s does not implement backend.Observer", b.Name())
	}
	return o
}
