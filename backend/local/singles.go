package local

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"github.com/kinetic-run/kinetic/internal/calltrace"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kinetic-run/kinetic/job"
)

// Single jobs run under long-lived supervisors: a queue per backend configuration
// (queues/single-HASH), served by up to `slots` workers (`kinetic supervise --queue`,
// pool.go) that each run one job at a time in-process and wait for the next one for
// SingleIdle before they exit. A call then costs no exec of this binary (the start of
// a supervisor was most of a local call's time: docs/benchmarks.md).
//
// What a per-job supervisor promises still holds:
//   - Submit records the job PENDING in status.json (with the queue) before it returns,
//     and returns once a live worker serves the queue: a submitted job is never lost.
//   - The worker that runs a job holds the job's own supervisor.lock, writes its claim
//     into it and records RUNNING in status.json with its pid and that lock, and writes
//     the final status before it lets the lock go: liveness, "killed" reasons and
//     results are judged exactly as for a per-job supervisor.
//   - Workers are detached (setsid): they outlive the SDK and the engine.
//   - Cancel goes through the queue's cancel request and SIGUSR1 (cancelQueued), so a
//     signal meant for one job never reaches the next job its worker runs.

// singlePrefix starts the name of a queue of single jobs (a batch's queue is its group
// ID, which starts with job.GroupPrefix).
const singlePrefix = "single-"

// DefaultSingleIdle is how long a long-lived supervisor waits for another job.
const DefaultSingleIdle = time.Minute

// isSingleQueue reports whether q is a queue of single jobs.
func isSingleQueue(q string) bool { return strings.HasPrefix(filepath.Base(q), singlePrefix) }

// singleQueue is the queue of this backend's configuration: everything a supervisor is
// started with (the store, slots, grace, the Python settings, the binary itself, and
// this process's environment, which it inherits) picks the queue, so a job always runs
// under the settings and environment it was submitted with, and a rebuilt binary gets
// new supervisors.
func (b *Backend) singleQueue() string {
	b.singleOnce.Do(func() {
		h := sha256.New()
		fmt.Fprintln(h, b.st.URL(), b.o.Slots, b.o.Grace, b.singleIdle(), b.o.Exe)
		fmt.Fprintln(h, strings.Join(b.o.Python.flags(), "\x00"))
		// A job runs with its submitter's environment (PYTHONPATH, PATH, …), which its
		// supervisor inherits: submitters with different environments get different
		// supervisors, as they did when each job started its own.
		env := os.Environ()
		sort.Strings(env)
		fmt.Fprintln(h, strings.Join(env, "\x00"))
		// And its open-files limit (ulimit -n), which it inherits too: a job that failed
		// for a low one runs under the raised one when submitted again.
		var nofile syscall.Rlimit
		if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &nofile) == nil {
			fmt.Fprintln(h, "nofile", nofile.Cur, nofile.Max)
		}
		if fi, err := os.Stat(b.o.Exe); err == nil {
			fmt.Fprintln(h, fi.Size(), fi.ModTime().UnixNano())
		}
		b.singleQ = b.queueDir(singlePrefix + hex.EncodeToString(h.Sum(nil))[:16])
	})
	return b.singleQ
}

func (b *Backend) singleIdle() time.Duration {
	if b.o.SingleIdle > 0 {
		return b.o.SingleIdle
	}
	return DefaultSingleIdle
}

// submitSingle records h PENDING, queues it and makes sure workers serve the queue.
func (b *Backend) submitSingle(ctx context.Context, h *job.Handle, ws string) error {
	q := b.singleQueue()
	if err := os.MkdirAll(filepath.Join(q, "workers"), 0o700); err != nil {
		return StateDirError(b.o.StateDir, q, "the queue of its supervisors", err)
	}
	entry := filepath.Join(q, h.JobID)
	proc := &job.LocalProcess{BootID: bootID(), LockPath: filepath.Join(q, "pool.lock"), Workspace: ws, Queue: q, QueuedAt: time.Now().UTC()}
	// Recorded before it is queued: a worker that claims it finds it PENDING.
	if err := WriteStatus(ctx, b.st, h.JobID, &job.Status{State: job.Pending, Local: proc}); err != nil {
		return fmt.Errorf("local backend: record %s: %w", h.JobID, err)
	}
	calltrace.Mark("local.pending.written", h.JobID)
	if err := os.WriteFile(entry, nil, 0o644); err != nil {
		return StateDirError(b.o.StateDir, entry, "the job's queue entry", err)
	}
	calltrace.Mark("local.queued", h.JobID)
	if err := b.ensureFresh(q, b.o.Slots); err != nil {
		os.Remove(entry)
		return err
	}
	return nil
}

// workerArgs are the supervise arguments of worker k of queue q.
func (b *Backend) workerArgs(q string, k int) []string {
	a := []string{"--queue", q, "--worker", strconv.Itoa(k)}
	if isSingleQueue(q) {
		a = append(a, "--idle", b.singleIdle().String())
	}
	return a
}

// restartSingleWorkers gives a single job still waiting in its queue new workers when
// none serves the queue (its caller saw pool.lock free: they were killed, or one that
// started took another process's momentary look at its lock for a twin and left), and
// reports whether it did. The job
// was never claimed, so running it now runs it once. Only a reader whose settings pick
// the same queue starts them: a worker runs jobs with the settings and environment of
// the process that starts it.
func (b *Backend) restartSingleWorkers(p *job.LocalProcess) bool {
	if p == nil || !isSingleQueue(p.Queue) || p.Queue != b.singleQueue() {
		return false
	}
	if _, err := os.Stat(filepath.Join(p.Queue, filepath.Base(p.Workspace))); err != nil {
		return false // claimed or removed: the caller judges it
	}
	return b.ensureWorkers(p.Queue, b.o.Slots) == nil
}
