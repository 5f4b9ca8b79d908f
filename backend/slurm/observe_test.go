package slurm_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/backend/slurm"
	"github.com/kinetic-run/kinetic/job"
)

// TestObserver: List sees a running job and each task of a batch's array by the names
// Kinetic gave them, without the store; StreamLogs reads a job's Slurm output file (its
// tail, and with follow until the job ends), and says ErrNoLogs when there is none.
func TestObserver(t *testing.T) {
	c := needSlurm(t)
	b, st := newBackend(t, nil)
	ctx := context.Background()
	j := submit(t, b, st, "sh", "-c", "for i in 1 2 3; do echo line $i; sleep 0.5; done; sleep 1; echo last")
	g, tmpl, _ := writeBatch(t, st, 2, 2, "sh", "-c", "sleep 3")
	if err := b.StartGroup(ctx, g, tmpl); err != nil {
		t.Fatal(err)
	}
	hs, err := b.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*job.Handle{}
	for _, h := range hs {
		got[h.JobID] = h
	}
	if h := got[j.Handle.JobID]; h == nil || h.Backend != slurm.Name || h.ClusterName != c.Name || h.GroupID != "" {
		t.Errorf("List = %+v; want the job %s on cluster %s", hs, j.Handle.JobID, c.Name)
	}
	for i := 0; i < 2; i++ {
		if h := got[job.ChildID(g.ID, i)]; h == nil || h.GroupID != g.ID || h.GroupIndex != string(rune('0'+i)) || h.K8sName != g.ID {
			t.Errorf("List = %+v; want input %d of batch %s", hs, i, g.ID)
		}
	}
	var out bytes.Buffer
	fctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	for {
		err := b.StreamLogs(fctx, j.Handle, true, 0, &out)
		if errors.Is(err, backend.ErrNoLogs) && fctx.Err() == nil {
			time.Sleep(100 * time.Millisecond) // not started yet
			continue
		}
		if err != nil {
			t.Fatalf("StreamLogs with follow: %v", err)
		}
		break
	}
	if s := out.String(); !strings.Contains(s, "line 1\nline 2\nline 3\n") || !strings.Contains(s, "last\n") {
		t.Errorf("followed logs %q; want every line up to the job's end", s)
	}
	if s, _, _ := j.Status(ctx); s != job.Succeeded {
		t.Errorf("status after the followed logs ended: %s", s)
	}
	out.Reset()
	if err := b.StreamLogs(ctx, j.Handle, false, 1, &out); err != nil || strings.Count(out.String(), "\n") != 1 {
		t.Errorf("the last line: %q, %v", out.String(), err)
	}
	if err := b.Cleanup(ctx, j.Handle); err != nil {
		t.Fatal(err)
	}
	if err := b.StreamLogs(ctx, j.Handle, false, 0, &out); !errors.Is(err, backend.ErrNoLogs) {
		t.Errorf("StreamLogs after Cleanup = %v; want ErrNoLogs", err)
	}
	b.CleanupGroup(ctx, g.ID)
}
