// Package slurm is the Slurm backend: a job is one Slurm batch job that runs the same
// `kinetic runner` as a pod or a local supervisor does, submitted with sbatch and named
// after the job (sbatch --job-name), and a batch is one job array. Slurm is asked through
// its commands (sbatch, squeue, scontrol, sacct, scancel), which find the cluster as they
// always do (SLURM_CONF, /etc/slurm/slurm.conf); the store holds everything durable, as
// on every backend: the runner writes the job's logs, status and result there.
//
// Status reads the store first (a result, or a verdict recorded earlier), then Slurm:
// squeue while slurmctld remembers the job (MinJobAge after it ends), sacct after that
// where the cluster keeps accounting (slurmdbd). A job that Slurm ended without its
// runner writing a result is FAILED with Slurm's reason (NODE_FAIL, TIMEOUT,
// OUT_OF_MEMORY, CANCELLED, PREEMPTED), recorded in the store so that it outlives
// Slurm's memory of the job.
package slurm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/batch/driver"
	"github.com/kinetic-run/kinetic/internal/backoff"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/jobview"
	"github.com/kinetic-run/kinetic/runner"
	"github.com/kinetic-run/kinetic/store"
)

// Name is the backend's name in handles and configuration (backend=slurm).
const Name = "slurm"

// NotSubmittedGrace: a job Slurm has no record of this long after its handle was made was
// never submitted (its submitter stopped in between), or Slurm forgot it (MinJobAge
// passed, no accounting) before anyone looked.
const NotSubmittedGrace = time.Minute

// Options configure the Slurm backend.
type Options struct {
	// Kinetic is the kinetic binary's path on the nodes (default: this process's own,
	// on a file system the nodes share).
	Kinetic string
	// OutputDir is where Slurm writes each job's output file (sbatch --output): a
	// directory the nodes and this machine share (required).
	OutputDir string
	// EnvDir is where the runner on a node builds the Python environment of a job with
	// requirements, once per environment key and under a lock (pyenv), and where later
	// jobs find it: a directory the nodes share ("": the requirements are not
	// installed; the job runs with its interpreter's packages).
	EnvDir string
	// Partition, GPUPartition and Account are sbatch's --partition (GPUPartition for
	// jobs whose accelerator is a GPU, default Partition) and --account ("": Slurm's
	// defaults).
	Partition, GPUPartition, Account string
	// SbatchArgs are more sbatch arguments, given to every sbatch.
	SbatchArgs []string
	// Env is added to the environment of the Slurm commands (SLURM_CONF, say), and so
	// to the jobs' (sbatch exports its own environment to the job).
	Env []string
	// Grace is how long Cancel waits after SIGTERM before it kills (default
	// runner.DefaultGrace plus a few seconds for the runner to write its end).
	Grace time.Duration
}

// Backend is the Slurm backend over one store.
type Backend struct {
	st *store.Store
	o  Options

	mu   sync.Mutex
	conf *slurmConfig // the configuration of the Slurm the commands reach, once read

	sizes  sync.Map // batch ID → its number of inputs (GroupDone)
	looks  sync.Map // batch ID → *arrayLook, its array's last squeue
	flight singleflight.Group
}

var (
	_ backend.Backend = (*Backend)(nil)
	_ driver.Driver   = (*Backend)(nil)
)

// New returns a Slurm backend over st.
func New(st *store.Store, o Options) (*Backend, error) {
	if !st.Shared() {
		return nil, errors.New("store mem:// is memory inside one process, and a Slurm job runs in another process on a node: use a file:// store on a file system the nodes share, or gs:// / s3://")
	}
	if o.Kinetic == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("slurm backend: find the kinetic binary: %w", err)
		}
		o.Kinetic = exe
	}
	if o.OutputDir == "" {
		return nil, errors.New("slurm backend: no output directory (the setting slurm_output_dir)")
	}
	if o.GPUPartition == "" {
		o.GPUPartition = o.Partition
	}
	if o.Grace <= 0 {
		o.Grace = runner.DefaultGrace + 5*time.Second
	}
	return &Backend{st: st, o: o}, nil
}

// Name implements backend.Backend.
func (b *Backend) Name() string { return Name }

// command runs a Slurm command with stdin and returns its stdout. Its error names the
// command and says what it printed on stderr; a controller that cannot be reached wraps
// backend.ErrUnavailable.
func (b *Backend) command(ctx context.Context, stdin string, name string, args ...string) (string, error) {
	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(cctx, name, args...)
	cmd.Env = append(os.Environ(), b.o.Env...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err == nil {
		return out.String(), nil
	}
	what := name + " " + strings.Join(args, " ")
	msg := clip(errb.String())
	var ee *exec.ExitError
	switch {
	case errors.Is(err, exec.ErrNotFound):
		return "", fmt.Errorf("%s: %s is not installed on this machine (Debian: apt-get install slurm-client): %w", what, name, backend.ErrUnavailable)
	case cctx.Err() != nil && ctx.Err() == nil:
		return "", fmt.Errorf("%s: no answer within a minute: %w", what, backend.ErrUnavailable)
	case ctx.Err() != nil:
		return "", ctx.Err()
	case strings.Contains(msg, "Unable to contact slurm controller") || strings.Contains(msg, "Socket timed out") || strings.Contains(msg, "Connection refused"):
		return "", fmt.Errorf("%s: %s (is slurmctld running, and SLURM_CONF the cluster's configuration?): %w", what, msg, backend.ErrUnavailable)
	case errors.As(err, &ee) && msg != "":
		return out.String(), fmt.Errorf("%s: %s", what, msg)
	}
	return out.String(), fmt.Errorf("%s: %w", what, err)
}

// clusterName is the ClusterName of the Slurm the commands reach (scontrol show config),
// asked once.
func (b *Backend) clusterName(ctx context.Context) (string, error) {
	c, err := b.slurmConfig(ctx)
	return c.name, err
}

// slurmConfig is what the backend reads of the configuration of the Slurm the commands
// reach (scontrol show config), asked once.
func (b *Backend) slurmConfig(ctx context.Context) (slurmConfig, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.conf != nil {
		return *b.conf, nil
	}
	out, err := b.command(ctx, "", "scontrol", "show", "config")
	if err != nil {
		return slurmConfig{}, err
	}
	b.conf = &slurmConfig{name: parseClusterName(out), maxArraySize: parseConfigInt(out, "MaxArraySize")}
	return *b.conf, nil
}

// foreign reports a job submitted to another Slurm cluster than the one the commands
// reach: Slurm here knows nothing of it.
func (b *Backend) foreign(ctx context.Context, h *job.Handle) (string, bool, error) {
	if h.ClusterName == "" {
		return "", false, nil
	}
	c, err := b.clusterName(ctx)
	if err != nil || c == "" {
		return "", false, err
	}
	if c != h.ClusterName {
		return fmt.Sprintf("the job was submitted to the Slurm cluster %s, and this machine's Slurm is the cluster %s (SLURM_CONF)", h.ClusterName, c), true, nil
	}
	return "", false, nil
}

// Submit implements backend.Backend: one sbatch of a script that runs the runner for the
// job, named after the job. It returns once slurmctld has queued it.
func (b *Backend) Submit(ctx context.Context, h *job.Handle) error {
	args, err := b.sbatchArgs(h, h.JobID, "", b.outputFile(h.JobID))
	if err != nil {
		return err
	}
	spec, err := b.specOf(ctx, h.JobID)
	if err != nil {
		return err
	}
	script, err := b.script(h, spec, "--job", h.JobID)
	if err != nil {
		return err
	}
	out, err := b.command(ctx, script, "sbatch", args...)
	if err != nil {
		return fmt.Errorf("submit %s to Slurm: %w", h.JobID, err)
	}
	if _, err := parseSbatch(out); err != nil {
		return fmt.Errorf("submit %s to Slurm: %w", h.JobID, err)
	}
	return nil
}

// outputFile is where Slurm writes the output of the job (or array) named name; %a in
// it is an array task's index.
func (b *Backend) outputFile(name string) string {
	return filepath.Join(b.o.OutputDir, name+".out")
}

// slurmName is the Slurm job name h runs under and its array task (-1: none): a batch's
// first attempts are the tasks of its array, named after the batch.
func slurmName(h *job.Handle) (name string, task int) {
	if i, ok := member(h); ok {
		return h.GroupID, i
	}
	return h.JobID, -1
}

// Status implements backend.Backend: the store first, then Slurm.
func (b *Backend) Status(ctx context.Context, h *job.Handle) (job.State, string, error) {
	if s, reason, ok, err := b.stored(ctx, h); err != nil || ok {
		if err == nil && s == job.Failed && stoppedBySignal(reason) && !strings.HasPrefix(reason, slurmVerdict) {
			return b.whyStopped(ctx, h, reason)
		}
		return s, reason, err
	}
	return b.slurmStatus(ctx, h)
}

// slurmVerdict begins every verdict the backend records from what Slurm says
// (entry.endedReason), which Status takes as it is.
const slurmVerdict = "the Slurm job "

// stoppedBySignal reports a runner's report of a job stopped by a signal: the call
// killed by one, a shell's exit code for one (128 + SIGTERM, SIGKILL or SIGINT), or the
// runner told to stop.
func stoppedBySignal(reason string) bool {
	return strings.Contains(reason, "by signal") || strings.Contains(reason, "received terminated") || signalExit.MatchString(reason)
}

var signalExit = regexp.MustCompile(`exit code 1(43|37|30)\b`)

// whyStopped is the end of a job whose runner reported it stopped by a signal (reason):
// Slurm sends one to every process of a job it ends (its time limit, a preemption, an
// scancel), so Slurm's word for it comes first, recorded in the store with the runner's
// report. While Slurm is still ending the job (COMPLETING, for up to KillWait) it is
// RUNNING; a signal Slurm did not send (Slurm says nothing of it) leaves the report as it
// is.
func (b *Backend) whyStopped(ctx context.Context, h *job.Handle, reason string) (job.State, string, error) {
	e, err := b.find(ctx, h)
	if err != nil || e == nil {
		return job.Failed, reason, nil
	}
	if phaseOf(e.State) != phaseEnded {
		return job.Running, "", nil
	}
	switch e.State {
	case "TIMEOUT", "PREEMPTED", "NODE_FAIL", "OUT_OF_MEMORY", "CANCELLED", "DEADLINE", "BOOT_FAIL":
	default:
		return job.Failed, reason, nil
	}
	cluster, _ := b.clusterName(ctx)
	full := e.endedReason(cluster) + "\nthe job's own report: " + reason
	return job.Failed, full, b.record(ctx, h, full)
}

// stored is the job's end as the store records it: a verdict (cancel's, or an earlier
// Status's) or the runner's envelope. A job the store does not know is NOT_FOUND.
func (b *Backend) stored(ctx context.Context, h *job.Handle) (job.State, string, bool, error) {
	state, reason, final, err := jobview.Recorded(ctx, b.st, h.JobID)
	if err != nil || !final {
		return "", "", false, err
	}
	return state, reason, true, nil
}

// find is what Slurm says of h: squeue while slurmctld remembers it, then sacct (nil
// when neither knows it).
func (b *Backend) find(ctx context.Context, h *job.Handle) (*entry, error) {
	name, task := slurmName(h)
	es, err := b.listed(ctx, name, task)
	if err != nil {
		return nil, err
	}
	return pick(es, task), nil
}

// listed is what Slurm lists of the jobs named name: squeue's list (every task of an
// array, one a line), or, when it has none of task (-2: any), sacct's.
func (b *Backend) listed(ctx context.Context, name string, task int) ([]entry, error) {
	es, err := b.squeue(ctx, name, task >= 0)
	if err != nil {
		return nil, err
	}
	if (task == -2 && len(es) > 0) || pick(es, task) != nil {
		return es, nil
	}
	out, err := b.command(ctx, "", "sacct", "-n", "-P", "-X", "--name="+name, "-o", sacctFields)
	if err != nil {
		// A cluster without accounting (no slurmdbd) has no sacct to ask.
		return es, nil
	}
	return append(es, parseSacct(out)...), nil
}

// squeueTTL is how long a look at a batch's array serves its members: watching a
// thousand of them costs one squeue per refresh, not a thousand.
const squeueTTL = 500 * time.Millisecond

// squeue lists the jobs named name (every task of an array, one a line). A batch's
// array (shared) is looked at once for all its members that ask within squeueTTL.
func (b *Backend) squeue(ctx context.Context, name string, shared bool) ([]entry, error) {
	look := func() ([]entry, error) {
		out, err := b.command(ctx, "", "squeue", "-h", "-r", "--states=all", "--name="+name, "-o", squeueFormat)
		if err != nil {
			return nil, err
		}
		return parseSqueue(out), nil
	}
	if !shared {
		return look()
	}
	if v, ok := b.looks.Load(name); ok && time.Since(v.(*arrayLook).at) < squeueTTL {
		return v.(*arrayLook).es, nil
	}
	v, err, _ := b.flight.Do(name, func() (any, error) {
		es, err := look()
		if err != nil {
			return nil, err
		}
		b.looks.Store(name, &arrayLook{at: time.Now(), es: es})
		return es, nil
	})
	if err != nil {
		return nil, err
	}
	return v.([]entry), nil
}

// arrayLook is a recent squeue of a batch's array.
type arrayLook struct {
	at time.Time
	es []entry
}

// pick is the entry of task (-1: the job itself) among es, the newest if several.
func pick(es []entry, task int) *entry {
	var got *entry
	for i := range es {
		if es[i].Task == task {
			if got == nil || newer(es[i].ID, got.ID) {
				got = &es[i]
			}
		}
	}
	return got
}

// newer compares two numeric Slurm job IDs.
func newer(a, b string) bool {
	if len(a) != len(b) {
		return len(a) > len(b)
	}
	return a > b
}

// slurmStatus judges h, which the store says has not ended, by what Slurm says.
func (b *Backend) slurmStatus(ctx context.Context, h *job.Handle) (job.State, string, error) {
	if why, ok, err := b.foreign(ctx, h); err != nil || ok {
		return job.NotFound, why, err
	}
	e, err := b.find(ctx, h)
	if err != nil {
		return "", "", fmt.Errorf("status of %s: %w", h.JobID, err)
	}
	if e != nil && phaseOf(e.State) != phaseEnded {
		return e.state(), e.waitingReason(), nil
	}
	// Ended, or unknown to Slurm: the runner writes its result before it exits, so the
	// store has the last word if it has one now.
	if s, reason, ok, err := b.stored(ctx, h); err != nil || ok {
		return s, reason, err
	}
	if e == nil {
		created, _ := time.Parse(time.RFC3339Nano, h.CreatedAt)
		if time.Since(created) < NotSubmittedGrace {
			return job.Pending, "", nil
		}
		name, _ := slurmName(h)
		reason := fmt.Sprintf("Slurm has no record of the job %s and it left no result: it was never submitted (its submitter stopped first), or Slurm forgot it (MinJobAge) on a cluster without accounting", name)
		return job.Failed, reason, b.record(ctx, h, reason)
	}
	if e.ExitCode == "" {
		// squeue does not say how it ended; scontrol does while slurmctld remembers it.
		if out, err := b.command(ctx, "", "scontrol", "-o", "show", "job", e.ID); err == nil {
			if d, ok := parseScontrolJob(out); ok {
				e.ExitCode = d.ExitCode
				if e.Reason == "" || e.Reason == "None" {
					e.Reason = d.Reason
				}
			}
		}
	}
	cluster, _ := b.clusterName(ctx)
	reason := e.endedReason(cluster)
	if tail := b.outputTail(h, e, 10); tail != "" {
		reason += "\nlast lines of Slurm's output file:\n" + tail
	}
	return job.Failed, reason, b.record(ctx, h, reason)
}

// outputTail is the last n lines of the job's Slurm output file, when this machine
// sees it ("" otherwise).
func (b *Backend) outputTail(h *job.Handle, e *entry, n int) string {
	raw, err := os.ReadFile(b.outputPath(h))
	if err != nil || len(raw) == 0 {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// record writes a final FAILED verdict into the store, so it outlives Slurm's memory of
// the job.
func (b *Backend) record(ctx context.Context, h *job.Handle, reason string) error {
	s := job.Status{State: job.Failed, Reason: reason, UpdatedAt: time.Now().UTC()}
	raw, _ := json.MarshalIndent(s, "", "  ")
	return b.st.Put(ctx, store.StatusKey(h.JobID), raw)
}

// Cancel implements backend.Backend: record FAILED "cancelled" (the runner, if it has
// not started, then runs nothing), SIGTERM to the job's processes (the batch script and
// the runner, which stops the call gracefully), and after the grace period scancel,
// which kills what is left. It returns once Slurm has ended the job.
func (b *Backend) Cancel(ctx context.Context, h *job.Handle) error {
	state, _, err := b.Status(ctx, h)
	if err != nil {
		return err
	}
	if state.Terminal() {
		return nil
	}
	if err := b.record(ctx, h, "cancelled"); err != nil {
		return err
	}
	e, err := b.find(ctx, h)
	if err != nil {
		return fmt.Errorf("cancel %s: %w", h.JobID, err)
	}
	if e == nil || phaseOf(e.State) == phaseEnded {
		return nil
	}
	id := e.slurmID()
	if phaseOf(e.State) == phaseRunning {
		if _, err := b.command(ctx, "", "scancel", "--full", "--signal=TERM", id); err != nil && !gone(err) {
			return fmt.Errorf("cancel %s: %w", h.JobID, err)
		}
		if b.awaitEnd(ctx, h, b.o.Grace) {
			return nil
		}
	}
	if _, err := b.command(ctx, "", "scancel", id); err != nil && !gone(err) {
		return fmt.Errorf("cancel %s: %w", h.JobID, err)
	}
	if !b.awaitEnd(ctx, h, 30*time.Second) {
		return fmt.Errorf("cancel %s: the Slurm job %s did not end within %s of scancel (see `scontrol show job %s`)", h.JobID, id, b.o.Grace+30*time.Second, id)
	}
	return nil
}

// gone reports scancel's complaint about a job that has already ended.
func gone(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "already completing or completed") || strings.Contains(msg, "Invalid job id")
}

// awaitEnd waits, at most within, for Slurm to end h's job (or forget it).
func (b *Backend) awaitEnd(ctx context.Context, h *job.Handle, within time.Duration) bool {
	deadline := time.Now().Add(within)
	for pause := backoff.New(50*time.Millisecond, 500*time.Millisecond); time.Now().Before(deadline); {
		e, err := b.find(ctx, h)
		if err == nil && (e == nil || phaseOf(e.State) == phaseEnded) {
			return true
		}
		if pause.Wait(ctx) != nil {
			return false
		}
	}
	return false
}

// Cleanup implements backend.Backend: stop the job if it still runs and remove its
// Slurm output file. A batch member's array and output files are the batch's
// (CleanupGroup).
func (b *Backend) Cleanup(ctx context.Context, h *job.Handle) error {
	if err := b.Cancel(ctx, h); err != nil {
		return err
	}
	if _, ok := member(h); ok {
		return nil
	}
	if err := os.Remove(b.outputFile(h.JobID)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("cleanup %s: %w", h.JobID, err)
	}
	return nil
}

// OutputDir is where Slurm writes the jobs' output files.
func (b *Backend) OutputDir() string { return b.o.OutputDir }
