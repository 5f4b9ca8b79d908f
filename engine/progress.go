package engine

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/kinetic-run/kinetic/backend"
	barpkg "github.com/kinetic-run/kinetic/internal/bar"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/pack"
)

// Progress of long work (uploads) goes to Notice: a byte bar on a terminal, drawn only
// once the work has gone on for barDelay with bytes left (a warm resubmit that uploads
// nothing shows nothing); in a pipe or a file one line at the end when it was big; with
// Quiet nothing.

const (
	barDelay  = 300 * time.Millisecond
	bigUpload = 16 << 20 // bytes; a smaller upload is not worth a line in a log
)

// stderrIsTerminal says whether bars are drawn by default (the SDK's engine shares the
// Python process's stderr).
func stderrIsTerminal() bool { return term.IsTerminal(int(os.Stderr.Fd())) }

// progress returns a callback for an upload's (done, total) bytes and a function to call
// when it ends with the bytes it wrote (-1: all it was told of); both are safe to call
// from several goroutines. The last line is said when the bytes written are many, or a
// bar was drawn: a resubmit that finds everything stored says nothing.
func (e *Engine) progress(what string) (func(done, total int64), func(wrote int64)) {
	if e.Quiet || e.Notice == nil {
		return nil, func(int64) {}
	}
	var (
		mu    sync.Mutex
		bar   *barpkg.Bar
		start = time.Now()
		last  int64
	)
	update := func(done, t int64) {
		mu.Lock()
		defer mu.Unlock()
		last = done
		if !e.Bars || t <= 0 {
			return
		}
		if bar == nil && time.Since(start) >= barDelay && done < t {
			bar = barpkg.New(e.Notice, t, what, barpkg.Options{Bytes: true})
		}
		if bar != nil {
			bar.Set(done, t)
		}
	}
	finish := func(wrote int64) {
		mu.Lock()
		defer mu.Unlock()
		if wrote < 0 {
			wrote = last
		}
		if bar != nil {
			bar.Finish()
		}
		if bar != nil || wrote >= bigUpload {
			fmt.Fprintf(e.Notice, "kinetic: %s: %s in %.1fs\n", what, pack.HumanBytes(wrote), time.Since(start).Seconds())
		}
	}
	return update, finish
}

// pendingNotice is how long a blocking wait lets a job sit in PENDING before it says so.
const pendingNotice = 2 * time.Second

// NoticeWhilePending says once, on Notice, that j has not started after pendingNotice
// (waiting for a free local slot, a node, an image pull), and why when the backend
// knows. It returns at once; the watch ends with ctx or when the job leaves PENDING.
func (e *Engine) NoticeWhilePending(ctx context.Context, j *Job) {
	if e.Quiet || e.Notice == nil {
		return
	}
	go func() {
		t := time.NewTimer(pendingNotice)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		state, reason, err := j.Status(ctx)
		if err != nil || state != job.Pending || ctx.Err() != nil {
			return
		}
		why := reason
		if why == "" {
			if backend.OnThisMachinesHardware(j.Handle.Backend) {
				// local_slots is the local backend's setting (local.KeySlots), named here
				// for the message only: the engine links no backend.
				why = fmt.Sprintf("waiting for a free slot: this machine runs %s jobs at once (the setting local_slots); `kinetic jobs list --status RUNNING` shows what holds them", e.cfg.Get("local_slots"))
			} else {
				why = "waiting for the cluster to start it (a node, an image pull); `kinetic jobs status " + j.Handle.JobID + "` says more"
			}
		}
		fmt.Fprintf(e.Notice, "kinetic: job %s has not started after %s: %s\n", j.Handle.JobID, pendingNotice, why)
	}()
}
