package cli

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/kinetic-run/kinetic/batch"
	"github.com/kinetic-run/kinetic/engine"
	"github.com/kinetic-run/kinetic/internal/backoff"
	"github.com/kinetic-run/kinetic/internal/bar"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/jobview"
	"github.com/kinetic-run/kinetic/store"
)

func newBatchCmd(g *Globals) *cobra.Command {
	cmd := &cobra.Command{Use: "batch", Short: "Observe and manage batches (run_async_map): list, status, results, cancel, cleanup"}
	cmd.AddCommand(newBatchListCmd(g), newBatchStatusCmd(g), newBatchResultsCmd(g), newBatchCancelCmd(g), newBatchCleanupCmd(g))
	return cmd
}

func (f *jobFlags) engine(cmd *cobra.Command, g *Globals) (*engine.Engine, error) {
	if err := f.existingStore(); err != nil {
		return nil, err
	}
	return newEngine(cmd, g, f.args())
}

// counts tallies the children by status; inputs that failed at submission count as
// SUBMIT_FAILED.
func counts(v *batch.View) map[string]int {
	c := map[string]int{}
	for _, s := range v.Statuses {
		switch {
		case s.Error != "" && s.Handle == nil:
			c["SUBMIT_FAILED"]++
		case s.CollectedAt != nil:
			c[string(job.Succeeded)]++
			c[collectedKey]++
		case s.Status != "":
			c[string(s.Status)]++
		}
	}
	return c
}

// collectedKey counts, within SUCCEEDED, the children whose results were collected and
// which were then cleaned up (results(cleanup=True)).
const collectedKey = "SUCCEEDED_COLLECTED"

func countsLine(c map[string]int) string {
	var keys []string
	for k := range c {
		if k != collectedKey {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		p := fmt.Sprintf("%s %d", k, c[k])
		if k == string(job.Succeeded) && c[collectedKey] > 0 {
			p += fmt.Sprintf(" (%d collected and cleaned up)", c[collectedKey])
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, ", ")
}

func finished(v *batch.View) (done, total int) {
	total = v.TotalExpected
	for _, s := range v.Statuses {
		if (s.Error != "" && s.Handle == nil) || s.Status.Terminal() {
			done++
		}
	}
	return done, total
}

// watch polls the batch until every child is final, drawing a bar on stderr when it is
// a terminal (never into files and pipes). The bar is redrawn with the final counts
// before it is cleared, so it never shows a count behind the description.
func watch(ctx context.Context, e *engine.Engine, gid, store string, stderr io.Writer) (*batch.View, error) {
	var b *bar.Bar
	tty := isTerminal(stderr)
	pause := backoff.New(50*time.Millisecond, time.Second)
	for {
		v, err := batch.Read(ctx, e, gid, store, true)
		if err != nil {
			return nil, err
		}
		done, total := finished(v)
		if b == nil && tty {
			b = bar.New(stderr, int64(total), "batch "+gid, bar.Options{})
		}
		if b != nil {
			c := counts(v)
			b.Counts(c[string(job.Succeeded)], c[string(job.Failed)]+c["SUBMIT_FAILED"])
			b.Set(int64(done), int64(total))
		}
		if v.SubmissionComplete && done >= len(v.Children) {
			if b != nil {
				b.Finish()
			}
			return v, nil
		}
		if err := pause.Wait(ctx); err != nil {
			return nil, err
		}
	}
}

func newBatchListCmd(g *Globals) *cobra.Command {
	var f jobFlags
	cmd := &cobra.Command{
		Use: "list", Short: "List the batches in the store, newest first", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			e, err := f.engine(cmd, g)
			if err != nil {
				return err
			}
			defer e.Close()
			ms, err := batch.List(cmd.Context(), e, "")
			if err != nil {
				return err
			}
			// A damaged batch is a row of its own and a warning that says what is
			// wrong and how to remove it, never left out.
			for _, m := range ms {
				if m.Error != "" {
					fmt.Fprintf(cmd.ErrOrStderr(), "kinetic: warning: %s\n", m.Error)
				}
			}
			if f.asJSON {
				if ms == nil {
					ms = []batch.Listed{}
				}
				return writeJSON(cmd.OutOrStdout(), ms)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "GROUP ID\tNAME\tFUNCTION\tINPUTS\tSUBMITTED\tCREATED")
			for _, m := range ms {
				if m.Error != "" {
					fmt.Fprintf(tw, "%s\tDAMAGED (see the warning)\t-\t-\t-\t-\n", m.GroupID)
					continue
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%v\t%s\n", m.GroupID, m.Name, m.FuncName, m.TotalExpected, m.SubmissionComplete, m.CreatedAt)
			}
			return tw.Flush()
		},
	}
	f.add(cmd)
	return cmd
}

func newBatchStatusCmd(g *Globals) *cobra.Command {
	var (
		f      jobFlags
		follow bool
	)
	cmd := &cobra.Command{
		Use: "status GROUP_ID", Short: "Counts per status (-f: a live bar until every child is final)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			e, err := f.engine(cmd, g)
			if err != nil {
				return err
			}
			defer e.Close()
			var v *batch.View
			if follow {
				v, err = watch(cmd.Context(), e, args[0], "", cmd.ErrOrStderr())
			} else {
				v, err = batch.Read(cmd.Context(), e, args[0], "", true)
			}
			if err != nil {
				return err
			}
			if f.asJSON {
				return writeJSON(cmd.OutOrStdout(), map[string]any{"group_id": v.GroupID, "total_expected": v.TotalExpected,
					"submission_complete": v.SubmissionComplete, "counts": counts(v), "children": v.Statuses})
			}
			done, total := finished(v)
			fmt.Fprintf(cmd.OutOrStdout(), "%s: %d/%d final (%s)\n", v.GroupID, done, total, countsLine(counts(v)))
			return nil
		},
	}
	f.add(cmd)
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "show a live bar until every child is final")
	return cmd
}

func newBatchResultsCmd(g *Globals) *cobra.Command {
	var (
		f       jobFlags
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use: "results GROUP_ID", Short: "Wait for a batch and print each input's result or failure", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runBatchResults(cmd, g, &f, args[0], timeout)
		},
	}
	f.add(cmd)
	durationFlag(cmd.Flags(), &timeout, "timeout", 0, "give up waiting after this long, in seconds or as a duration (60, 10m; exit 124); the batch keeps running")
	return cmd
}

// resultRow is one input of `kinetic batch results`.
type resultRow struct {
	Index  int           `json:"index"`
	JobID  string        `json:"job_id,omitempty"`
	Status job.State     `json:"status,omitempty"`
	Result *job.Envelope `json:"result,omitempty"`
	Error  string        `json:"error,omitempty"`
	// CollectedAt: the result was collected and the job cleaned up then.
	CollectedAt *time.Time `json:"collected_at,omitempty"`
}

// runBatchResults waits for batch gid (up to timeout, 0: no limit), prints each input's
// row, and fails when an input failed or its printable value is missing.
func runBatchResults(cmd *cobra.Command, g *Globals, f *jobFlags, gid string, timeout time.Duration) error {
	if timeout < 0 {
		return fmt.Errorf("--timeout %s: give a positive duration (e.g. 10m), or 0 to wait for as long as it takes", timeout)
	}
	e, err := f.engine(cmd, g)
	if err != nil {
		return err
	}
	defer e.Close()
	ctx := cmd.Context()
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	v, err := watch(ctx, e, gid, "", cmd.ErrOrStderr())
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded && cmd.Context().Err() == nil {
			return &ExitError{Code: 124, Err: fmt.Errorf("batch %s did not finish within %s; it keeps running: `kinetic batch status %s` shows where it is", gid, timeout, gid)}
		}
		return err
	}
	rows := make([]resultRow, len(v.Statuses))
	failures, missing := 0, 0
	for i, s := range v.Statuses {
		var failed, gone bool
		rows[i], failed, gone = resultOf(cmd.Context(), e, v.Store, s)
		if failed {
			failures++
		}
		if gone {
			missing++
		}
	}
	if err := printResults(cmd, f.asJSON, rows); err != nil {
		return err
	}
	if failures > 0 {
		return &ExitError{Code: 1, Err: fmt.Errorf("%d of %d inputs failed", failures, len(rows))}
	}
	if missing > 0 {
		return &ExitError{Code: 1, Err: fmt.Errorf("%d of %d inputs succeeded but their result.json is missing (their values are in result.pkl)", missing, len(rows))}
	}
	return nil
}

// resultOf is child s's row: failed when it did not succeed, missing when it did but
// its printable value is gone.
func resultOf(ctx context.Context, e *engine.Engine, storeURL string, s batch.ChildStatus) (r resultRow, failed, missing bool) {
	r = resultRow{Index: s.Index, Status: s.Status, Error: s.Error}
	if s.CollectedAt != nil {
		// Succeeded; its value went to whoever collected it.
		r.Status, r.CollectedAt = job.Succeeded, s.CollectedAt
		return r, false, false
	}
	if s.Handle == nil {
		return r, true, false
	}
	r.JobID = s.Handle.JobID
	j, err := e.Attach(ctx, s.Handle.JobID, storeURL)
	if err != nil {
		r.Error = err.Error()
		return r, true, false
	}
	res, err := j.Result(ctx, jobview.ValueTo{})
	if err != nil {
		r.Error = err.Error()
		return r, true, false
	}
	r.Result = res.Envelope
	if env := res.Envelope; env.Success && env.HasValue && env.ValueRepr == "" {
		// Its result.json, which holds the value's printable form, is gone (the
		// value's presence was read from result.pkl alone): say so, never print a
		// success with an empty value.
		id := s.Handle.JobID
		r.Error = fmt.Sprintf("succeeded, but its %s, which holds the printable form of its value, is missing; the value itself is whole in its %s: kinetic.attach(%q).result() in Python returns it", store.ObjectName(id, store.EnvelopeKey(id)), store.ObjectName(id, store.ResultKey(id)), id)
		return r, false, true
	}
	return r, !res.Envelope.Success, false
}

// printResults writes rows as JSON or as a table.
func printResults(cmd *cobra.Command, asJSON bool, rows []resultRow) error {
	if asJSON {
		return writeJSON(cmd.OutOrStdout(), rows)
	}
	tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "INDEX\tSTATUS\tRESULT")
	for _, r := range rows {
		fmt.Fprintf(tw, "%d\t%s\t%s\n", r.Index, r.Status, strings.ReplaceAll(r.shown(), "\n", " "))
	}
	return tw.Flush()
}

// shown is what the table shows of r's result.
func (r resultRow) shown() string {
	switch {
	case r.CollectedAt != nil:
		return "(result collected and cleaned up at " + r.CollectedAt.Local().Format(time.DateTime) + ")"
	case r.Result != nil && r.Result.Success && r.Error != "":
		return "(" + r.Error + ")"
	case r.Result != nil && r.Result.Success:
		return r.Result.ValueRepr
	case r.Result != nil:
		return r.Result.ExcType + ": " + r.Result.ExcMessage
	}
	return r.Error
}

func newBatchCancelCmd(g *Globals) *cobra.Command {
	var f jobFlags
	cmd := &cobra.Command{
		Use: "cancel GROUP_ID", Short: "Cancel every unfinished child of a batch", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			e, err := f.engine(cmd, g)
			if err != nil {
				return err
			}
			defer e.Close()
			if err := batch.Cancel(cmd.Context(), e, args[0], ""); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "kinetic: cancelled the unfinished children of %s\n", args[0])
			return nil
		},
	}
	f.add(cmd)
	return cmd
}

func newBatchCleanupCmd(g *Globals) *cobra.Command {
	var (
		f                         jobFlags
		keepBackend, keepArtifact bool
	)
	cmd := &cobra.Command{
		Use: "cleanup GROUP_ID", Short: "Clean up a batch's children (and, unless --keep-artifacts, its manifest)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			e, err := f.engine(cmd, g)
			if err != nil {
				return err
			}
			defer e.Close()
			if err := batch.Cleanup(cmd.Context(), e, args[0], "", !keepBackend, !keepArtifact); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "kinetic: cleaned up %s\n", args[0])
			return nil
		},
	}
	f.add(cmd)
	cmd.Flags().BoolVar(&keepBackend, "keep-backend", false, "keep the backend's resources (k8s=False)")
	cmd.Flags().BoolVar(&keepArtifact, "keep-artifacts", false, "keep the store artifacts (gcs=False)")
	return cmd
}
