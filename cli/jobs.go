package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kinetic-run/kinetic/batch"
	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/engine"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/jobview"
	"github.com/kinetic-run/kinetic/store"
)

func newJobsCmd(g *Globals) *cobra.Command {
	cmd := &cobra.Command{Use: "jobs", Short: "Observe and manage jobs: list, status, logs, result, cancel, cleanup"}
	cmd.AddCommand(newJobsListCmd(g), newJobsStatusCmd(g), newJobsLogsCmd(g), newJobsResultCmd(g), newJobsCancelCmd(g), newJobsCleanupCmd(g), newJobsDebugCmd(g))
	return cmd
}

// jobFlags are the flags every per-job command shares.
type jobFlags struct {
	store  string
	asJSON bool
	where  map[config.Key]*string // --project --zone --cluster --namespace
}

// existingStore refuses an explicit --store naming a file store directory that does not
// exist: commands that only look must not create one (a typo would show an empty store).
func (f *jobFlags) existingStore() error {
	if f.store == "" {
		return nil
	}
	dir := f.store
	if u, err := url.Parse(f.store); err == nil && u.Scheme == "file" {
		dir = u.Path
	} else if !strings.HasPrefix(f.store, "/") {
		return nil
	}
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("--store %s: no such directory, so no jobs there (check the path; a store is made by the first job submitted to it)", f.store)
	}
	return nil
}

// cleanupFlags are the reference's --cleanup-timeout and --cleanup-poll-interval on
// `jobs result`, `cancel` and `cleanup`, as JobHandle.result/cancel/cleanup take them.
type cleanupFlags struct {
	timeout, poll time.Duration
}

func (c *cleanupFlags) add(cmd *cobra.Command) {
	durationFlag(cmd.Flags(), &c.timeout, "cleanup-timeout", 180*time.Second, "longest wait for the job's resources to be removed, in seconds or as a duration")
	durationFlag(cmd.Flags(), &c.poll, "cleanup-poll-interval", 2*time.Second, "accepted for compatibility; kinetic waits for the backend's own confirmation instead of polling")
}

// ctx bounds a cleanup by --cleanup-timeout.
func (c *cleanupFlags) ctx(ctx context.Context) (context.Context, context.CancelFunc) {
	if c.timeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, c.timeout)
}

// cleanupErr says what a cleanup that ran past --cleanup-timeout left.
func (c *cleanupFlags) err(ctx context.Context, err error, what, id string) error {
	if err != nil && errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		return fmt.Errorf("%s of %s did not finish within --cleanup-timeout %s; run `kinetic jobs cleanup %s` again", what, id, c.timeout, id)
	}
	return err
}

func (f *jobFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.store, "store", "", "store URL holding the job (default: the configured store)")
	cmd.Flags().BoolVar(&f.asJSON, "json", false, "print JSON")
	// Where the job runs, as attach(job_id, project=, cluster=) and list_jobs(project=,
	// zone=, cluster=, namespace=) take it: argument > KINETIC_* > profile > default.
	f.where = map[config.Key]*string{}
	for _, k := range []config.Key{config.Project, config.Zone, config.Cluster, config.Namespace} {
		f.where[k] = cmd.Flags().String(keyFlagName(k), "", k.Help()+" (env "+k.EnvVar()+")")
	}
}

// args are the configuration the flags give.
func (f *jobFlags) args() map[config.Key]string {
	args := keyFlagArgs(f.where)
	if f.store != "" {
		args[config.Store] = f.store
	}
	return args
}

// attach resolves the job named on the command line.
func (f *jobFlags) attach(cmd *cobra.Command, g *Globals, id string) (*engine.Engine, *engine.Job, error) {
	if err := f.existingStore(); err != nil {
		return nil, nil, err
	}
	e, err := newEngine(cmd, g, f.args())
	if err != nil {
		return nil, nil, err
	}
	j, err := e.Attach(cmd.Context(), id, "")
	if err != nil {
		e.Close()
		return nil, nil, err
	}
	return e, j, nil
}

func (f *jobFlags) removeUnreadable(cmd *cobra.Command, g *Globals, id string) (bool, error) {
	e, err := newEngine(cmd, g, f.args())
	if err != nil {
		return false, err
	}
	defer e.Close()
	return e.RemoveUnreadable(cmd.Context(), id, "")
}

func (f *jobFlags) removeTombstone(cmd *cobra.Command, g *Globals, id string) error {
	e, err := f.engine(cmd, g)
	if err != nil {
		return err
	}
	defer e.Close()
	return e.RemoveTombstone(cmd.Context(), id, "")
}

func newJobsStatusCmd(g *Globals) *cobra.Command {
	var f jobFlags
	cmd := &cobra.Command{
		Use:   "status JOB_ID",
		Short: "Print a job's status (PENDING, RUNNING, SUCCEEDED, FAILED, NOT_FOUND)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			e, j, err := f.attach(cmd, g, args[0])
			var gone *engine.CleanedUpError
			if err == nil {
				if t, terr := j.Collected(cmd.Context()); terr == nil && t != nil {
					gone = &engine.CleanedUpError{Tombstone: t} // being cleaned up right now
					e.Close()
				}
			}
			if gone != nil || errors.As(err, &gone) {
				return printCollected(cmd, gone.Tombstone, f.asJSON)
			}
			if err != nil {
				return err
			}
			defer e.Close()
			state, reason, err := j.Status(cmd.Context())
			if err != nil {
				return err
			}
			return printStatus(cmd, engine.Listed{Handle: j.Handle, State: state, Reason: reason}, f.asJSON)
		},
	}
	f.add(cmd)
	return cmd
}

// printCollected prints the status of a job collected and cleaned up: the API says
// NOT_FOUND, a person is told more.
func printCollected(cmd *cobra.Command, t *job.Tombstone, asJSON bool) error {
	if asJSON {
		return writeJSON(cmd.OutOrStdout(), map[string]any{"handle": &job.Handle{JobID: t.JobID, DisplayName: t.DisplayName, Accelerator: t.Accelerator, Backend: t.Backend, CreatedAt: t.CreatedAt, GroupID: t.GroupID, GroupIndex: t.GroupIndex},
			"status": t.State, "collected": true, "collected_by": t.CollectedBy, "finished_at": t.FinishedAt, "cleaned_at": t.CleanedAt, "removed": t.Removed})
	}
	p := painter(colourOn(cmd, cmd.OutOrStdout()))
	fmt.Fprintf(cmd.OutOrStdout(), "%s: %s\n", p.status(string(t.State)), strings.TrimPrefix(t.Summary(), "succeeded; "))
	return nil
}

// printStatus prints a job's state, and its reason when there is one.
func printStatus(cmd *cobra.Command, l engine.Listed, asJSON bool) error {
	if asJSON {
		return writeJSON(cmd.OutOrStdout(), l)
	}
	shown := painter(colourOn(cmd, cmd.OutOrStdout())).state(l.State, l.Reason)
	if l.Reason != "" {
		fmt.Fprintf(cmd.OutOrStdout(), "%s: %s\n", shown, l.Reason)
	} else {
		fmt.Fprintln(cmd.OutOrStdout(), shown)
	}
	return nil
}

func newJobsLogsCmd(g *Globals) *cobra.Command {
	var (
		f      jobFlags
		follow bool
		tail   int
	)
	cmd := &cobra.Command{
		Use:   "logs JOB_ID",
		Short: "Print a job's logs (-f to follow until it ends, -n N for the last N lines)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if tail < 0 {
				return fmt.Errorf("--tail/-n %d: give a number of lines of at least 1 (or leave it out for the whole log)", tail)
			}
			e, j, err := f.attach(cmd, g, args[0])
			if err != nil {
				return err
			}
			defer e.Close()
			if tail > 0 {
				s, err := j.Tail(cmd.Context(), tail)
				if err != nil {
					return err
				}
				if f.asJSON {
					return writeJSON(cmd.OutOrStdout(), map[string]string{"job_id": j.Handle.JobID, "logs": s})
				}
				_, err = fmt.Fprint(cmd.OutOrStdout(), s)
				return err
			}
			if f.asJSON && !follow {
				var b strings.Builder
				if err := j.Logs(cmd.Context(), &b, false); err != nil {
					return err
				}
				return writeJSON(cmd.OutOrStdout(), map[string]string{"job_id": j.Handle.JobID, "logs": b.String()})
			}
			return j.Logs(cmd.Context(), cmd.OutOrStdout(), follow)
		},
	}
	f.add(cmd)
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing new output until the job ends")
	cmd.Flags().IntVarP(&tail, "tail", "n", 0, "print only the last N lines")
	return cmd
}

// jobsResult is one `kinetic jobs result`: its flags.
type jobsResult struct {
	g                  *Globals
	f                  jobFlags
	cf                 cleanupFlags
	timeout            time.Duration
	cleanup, noCleanup bool
}

func newJobsResultCmd(g *Globals) *cobra.Command {
	r := &jobsResult{g: g}
	cmd := &cobra.Command{
		Use:   "result JOB_ID",
		Short: "Wait for a job and print its return value (repr) or its failure",
		Long: `Waits for the job and prints its return value (repr) on stdout, or its failure and
remote traceback on stderr (exit 1, or a command's own exit code). A read removes
nothing: the job stays, so it can be read again. --cleanup then cleans up a success (its
backend resources and store artifacts, as JobHandle.result() does by default; a tombstone
says it succeeded) and says so.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return r.run(cmd, args[0]) },
	}
	r.f.add(cmd)
	durationFlag(cmd.Flags(), &r.timeout, "timeout", 0, "stop waiting after this long, in seconds or as a duration (60, 10m); the job keeps running")
	cmd.Flags().BoolVar(&r.cleanup, "cleanup", false, "clean up a success after printing its value (as JobHandle.result() does by default)")
	cmd.Flags().BoolVar(&r.noCleanup, "no-cleanup", false, "keep the job after printing its value (the default; kept for scripts that say it)")
	r.cf.add(cmd)
	return cmd
}

func (r *jobsResult) run(cmd *cobra.Command, id string) error {
	e, j, err := r.f.attach(cmd, r.g, id)
	if err != nil {
		return err
	}
	defer e.Close()
	res, err := r.wait(cmd, j)
	if err != nil && res == nil {
		return err
	}
	if !r.f.asJSON && reprMissing(res.Envelope) {
		// Its result.json, which holds the value's repr, is gone (jobview.ResultOf
		// read the value's presence from result.pkl alone): nothing to print, and
		// not a success to clean up with the one copy of a value nobody received.
		id := j.Handle.JobID
		return &ExitError{Code: 1, Err: fmt.Errorf("job %s succeeded, but its %s, which holds the printable form of its value, is missing; the value itself is whole in its %s: kinetic.attach(%q).result() in Python returns it (the job is kept)", id, store.ObjectName(id, store.EnvelopeKey(id)), store.ObjectName(id, store.ResultKey(id)), id)}
	}
	perr := printResult(cmd, j.Handle.JobID, res, err, r.f.asJSON)
	// Only once the value is printed (perr is nil for a success whose value
	// reached stdout): a value that could not be written is kept in the store.
	if r.cleanup && !r.noCleanup && perr == nil && succeeded(res.Envelope) {
		r.clean(cmd, j)
	}
	return perr
}

// reprMissing says env is a success with a value but without its printable form.
func reprMissing(env *job.Envelope) bool {
	return succeeded(env) && env.HasValue && env.ValueRepr == ""
}

func succeeded(env *job.Envelope) bool { return env != nil && env.Success }

// wait waits for j's result, for at most --timeout.
func (r *jobsResult) wait(cmd *cobra.Command, j *engine.Job) (*engine.Result, error) {
	ctx := cmd.Context()
	if r.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.timeout)
		defer cancel()
	}
	res, err := j.Result(ctx, jobview.ValueTo{})
	if err != nil && res == nil && errors.Is(err, context.DeadlineExceeded) && cmd.Context().Err() == nil {
		return nil, fmt.Errorf("job %s did not finish within %s; it keeps running: run this again to wait, or `kinetic jobs cancel %s`", j.Handle.JobID, r.timeout, j.Handle.JobID)
	}
	return res, err
}

// clean cleans up the success j (--cleanup); a failure only warns.
func (r *jobsResult) clean(cmd *cobra.Command, j *engine.Job) {
	cctx, cancel := r.cf.ctx(cmd.Context())
	err := r.cf.err(cmd.Context(), collectAndClean(cctx, j), "the cleanup", j.Handle.JobID)
	cancel()
	if err != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "kinetic: warning: %v; the job is kept (`kinetic jobs cleanup %s` removes it)\n", err, j.Handle.JobID)
	} else {
		fmt.Fprintf(cmd.ErrOrStderr(), "kinetic: cleaned up job %s (its logs, result and backend resources; without --cleanup, `kinetic jobs result` keeps them)\n", j.Handle.JobID)
	}
}

// collectAndClean claims j's result for this command (batch.Collect: its tombstone, and
// for a batch child the group's record) and removes the job, as JobHandle.result()
// does. A job another collector claimed first is theirs to clean up.
func collectAndClean(ctx context.Context, j *engine.Job) error {
	mine, _ := batch.Collect(ctx, []*engine.Job{j}, "`kinetic jobs result`, "+engine.ProcessName())
	if len(mine) == 0 {
		return nil // not recorded, so kept whole (Collect said so), or another's
	}
	return j.CleanupCollected(ctx)
}

func newJobsCancelCmd(g *Globals) *cobra.Command {
	var (
		f  jobFlags
		cf cleanupFlags
	)
	cmd := &cobra.Command{
		Use:   "cancel JOB_ID",
		Short: "Stop a job: SIGTERM, then SIGKILL after a grace period",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			e, j, err := f.attach(cmd, g, args[0])
			if err != nil {
				return err
			}
			defer e.Close()
			cctx, cancel := cf.ctx(cmd.Context())
			err = cf.err(cmd.Context(), j.Cancel(cctx), "the cancel", j.Handle.JobID)
			cancel()
			if err != nil {
				return err
			}
			state, reason, err := j.Status(cmd.Context())
			if err != nil {
				return err
			}
			if f.asJSON {
				return writeJSON(cmd.OutOrStdout(), engine.Listed{Handle: j.Handle, State: state, Reason: reason})
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "kinetic: %s is %s\n", j.Handle.JobID, state)
			return nil
		},
	}
	f.add(cmd)
	cf.add(cmd)
	return cmd
}

// jobsCleanup is one `kinetic jobs cleanup`: its flags.
type jobsCleanup struct {
	g             *Globals
	f             jobFlags
	cf            cleanupFlags
	keepBackend   bool
	keepArtifacts bool
}

func newJobsCleanupCmd(g *Globals) *cobra.Command {
	c := &jobsCleanup{g: g}
	cmd := &cobra.Command{
		Use:   "cleanup JOB_ID",
		Short: "Remove a job's backend resources and store artifacts (outputs are kept)",
		Args:  cobra.ExactArgs(1),
		RunE:  func(cmd *cobra.Command, args []string) error { return c.run(cmd, args[0]) },
	}
	c.f.add(cmd)
	c.cf.add(cmd)
	cmd.Flags().BoolVar(&c.keepBackend, "keep-backend", false, "keep the backend's resources (the same as --no-k8s)")
	cmd.Flags().BoolVar(&c.keepArtifacts, "keep-artifacts", false, "keep the store artifacts (the same as --no-gcs)")
	// JobHandle.cleanup(k8s=..., gcs=...)'s names, as flags.
	var k8s, gcs, noK8s, noGCS bool
	cmd.Flags().BoolVar(&k8s, "k8s", true, "remove the backend's resources (cleanup(k8s=True))")
	cmd.Flags().BoolVar(&gcs, "gcs", true, "remove the store artifacts (cleanup(gcs=True))")
	cmd.Flags().BoolVar(&noK8s, "no-k8s", false, "keep the backend's resources")
	cmd.Flags().BoolVar(&noGCS, "no-gcs", false, "keep the store artifacts")
	cmd.PreRunE = func(cmd *cobra.Command, args []string) error {
		c.keepBackend = c.keepBackend || noK8s || !k8s
		c.keepArtifacts = c.keepArtifacts || noGCS || !gcs
		return nil
	}
	return cmd
}

func (c *jobsCleanup) run(cmd *cobra.Command, id string) error {
	f := &c.f
	e, j, err := f.attach(cmd, c.g, id)
	var gone *engine.CleanedUpError
	if errors.As(err, &gone) && !c.keepArtifacts {
		return c.removeCollected(cmd, id, gone)
	}
	if errors.Is(err, job.ErrDamaged) || errors.Is(err, engine.ErrNotFound) {
		if done, rerr := c.removeUnreadable(cmd, id, err); done || rerr != nil {
			return rerr
		}
	}
	if err != nil {
		return err
	}
	defer e.Close()
	cctx, cancel := c.cf.ctx(cmd.Context())
	err = c.cf.err(cmd.Context(), j.Cleanup(cctx, !c.keepBackend, !c.keepArtifacts), "the cleanup", j.Handle.JobID)
	cancel()
	if err != nil {
		return err
	}
	if f.asJSON {
		return writeJSON(cmd.OutOrStdout(), map[string]any{"job_id": j.Handle.JobID, "backend": !c.keepBackend, "store": !c.keepArtifacts})
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "kinetic: cleaned up %s\n", j.Handle.JobID)
	return nil
}

// removeCollected removes the tombstone of a job collected and cleaned up before: only
// it is left.
func (c *jobsCleanup) removeCollected(cmd *cobra.Command, id string, gone *engine.CleanedUpError) error {
	if err := c.f.removeTombstone(cmd, c.g, id); err != nil {
		return err
	}
	if c.f.asJSON {
		return writeJSON(cmd.OutOrStdout(), map[string]any{"job_id": id, "backend": false, "store": true, "tombstone": true})
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "kinetic: removed the tombstone of %s (its result was collected and the job cleaned up at %s)\n", id, gone.Tombstone.CleanedAt.Local().Format(time.DateTime))
	return nil
}

// removeUnreadable removes the objects of a damaged job, or of what a stopped submitter
// left, or a damaged tombstone when nothing else is left (done).
func (c *jobsCleanup) removeUnreadable(cmd *cobra.Command, id string, err error) (done bool, _ error) {
	if removed, rerr := c.f.removeUnreadable(cmd, c.g, id); rerr != nil || removed {
		if rerr == nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "kinetic: removed the store objects of %s (it could not be read, so no backend resources were looked for)\n", id)
		}
		return true, rerr
	}
	if !errors.Is(err, job.ErrTombstoneDamaged) || c.keepArtifacts {
		return false, nil
	}
	// Nothing of it is left but its tombstone, which cannot be read.
	if rerr := c.f.removeTombstone(cmd, c.g, id); rerr != nil {
		return true, rerr
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "kinetic: removed the damaged tombstone of %s\n", id)
	return true, nil
}
