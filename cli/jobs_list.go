package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"

	"github.com/kinetic-run/kinetic/batch/layout"
	"github.com/kinetic-run/kinetic/engine"
	"github.com/kinetic-run/kinetic/internal/seconds"
	"github.com/kinetic-run/kinetic/job"
)

// defaultListLimit is a screenful of rows.
const defaultListLimit = 20

type listFlags struct {
	jobFlags
	status   []string
	limit    int
	all      bool
	since    string
	watch    bool
	interval time.Duration
}

func newJobsListCmd(g *Globals) *cobra.Command {
	var f listFlags
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the jobs in the store, newest first (a screenful; batches folded to one row)",
		Long: `List the jobs in the store, newest first.

The table shows a screenful (--limit, default 20; --all for every job), one row per
batch (its children folded: how many are done, and the batch's state), and the AGE
(since submission) and DURATION (from submission to the end; so far, for a job that
has not ended) of each row. Jobs whose result was collected and cleaned up by
result() show as "SUCCEEDED (collected)" while their tombstone lasts.

--json prints every job (children of batches included, unfolded) as before, with
age_seconds, duration_seconds, finished_at, collected and cleaned_at added; --limit,
--status and --since filter it when given.`,
		Example: `  kinetic jobs list
  kinetic jobs list --status running,pending --since 1h
  kinetic jobs list --all --json
  kinetic jobs list --watch`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runJobsList(cmd, g, &f)
		},
	}
	f.add(cmd)
	cmd.Flags().StringSliceVar(&f.status, "status", nil, "only jobs in these states (comma-separated: pending, running, succeeded, failed, error)")
	cmd.Flags().IntVar(&f.limit, "limit", defaultListLimit, "show at most this many rows, newest first")
	cmd.Flags().BoolVar(&f.all, "all", false, "show every row (no --limit)")
	cmd.Flags().StringVar(&f.since, "since", "", "only jobs submitted within this long (e.g. 30m, 1h, 7d)")
	cmd.Flags().BoolVarP(&f.watch, "watch", "w", false, "redraw the table every --interval until Ctrl-C")
	durationFlag(cmd.Flags(), &f.interval, "interval", 2*time.Second, "how often --watch redraws (seconds, or a duration like 5s)")
	return cmd
}

// listRow is a row of `jobs list --json`: the engine's row, with when it ended and
// whether it was collected.
type listRow struct {
	engine.Listed
	AgeSeconds      float64    `json:"age_seconds"`
	DurationSeconds *float64   `json:"duration_seconds,omitempty"`
	FinishedAt      *time.Time `json:"finished_at,omitempty"`
	Collected       bool       `json:"collected,omitempty"`
	CleanedAt       *time.Time `json:"cleaned_at,omitempty"`

	created time.Time
}

func runJobsList(cmd *cobra.Command, g *Globals, f *listFlags) error {
	since, want, err := f.check()
	if err != nil {
		return err
	}
	e, err := newEngine(cmd, g, f.args())
	if err != nil {
		return err
	}
	defer e.Close()
	ctx := cmd.Context()
	limit := f.limit
	if f.all || (f.asJSON && !cmd.Flags().Changed("limit")) {
		limit = 0
	}
	render := func(w, warn io.Writer) error {
		rows, err := listRows(ctx, e, since, want)
		if err != nil {
			return err
		}
		if f.asJSON {
			return writeListJSON(ctx, e, w, rows, limit)
		}
		return printListTable(ctx, e, w, warn, rows, limit, painter(colourOn(cmd, cmd.OutOrStdout())))
	}
	if !f.watch {
		return render(cmd.OutOrStdout(), cmd.ErrOrStderr())
	}
	return watchList(cmd, f.interval, render)
}

// check checks the flags of jobs list: --since as an age, --status as the states wanted.
func (f *listFlags) check() (since time.Duration, want map[job.State]bool, err error) {
	if f.limit < 1 && !f.all {
		return 0, nil, fmt.Errorf("--limit %d: give at least 1 (or --all for every job)", f.limit)
	}
	if f.since != "" {
		if since, err = parseAge(f.since); err != nil {
			return 0, nil, usageErrorf("--since %q: %w", f.since, err)
		}
	}
	want = map[job.State]bool{}
	for _, s := range f.status {
		st := job.State(strings.ToUpper(strings.TrimSpace(s)))
		if !slices.Contains([]job.State{job.Pending, job.Running, job.Succeeded, job.Failed, job.NotFound, engine.ListError}, st) {
			return 0, nil, fmt.Errorf("--status %q: not a state; give one or more of pending, running, succeeded, failed, error (comma-separated)", s)
		}
		want[st] = true
	}
	if f.watch && f.interval < 100*time.Millisecond {
		return 0, nil, usageErrorf("--interval %s: give at least 100ms", f.interval)
	}
	return since, want, f.existingStore()
}

// writeListJSON writes the first limit rows (all: 0) as JSON, their times filled.
func writeListJSON(ctx context.Context, e *engine.Engine, w io.Writer, rows []listRow, limit int) error {
	if limit > 0 && len(rows) > limit {
		rows = rows[:limit]
	}
	fillTimes(ctx, e, rows)
	if rows == nil {
		rows = []listRow{}
	}
	return writeJSON(w, rows)
}

// watchList renders the list every interval until interrupted: redrawn in place on a
// terminal.
func watchList(cmd *cobra.Command, interval time.Duration, render func(w, warn io.Writer) error) error {
	ctx := cmd.Context()
	tty := isTerminal(cmd.OutOrStdout())
	for {
		var b bytes.Buffer
		if err := render(&b, &b); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		out := cmd.OutOrStdout()
		if tty {
			// Home, clear: the table redrawn in place.
			fmt.Fprintf(out, "\x1b[H\x1b[2J%s\nEvery %s: kinetic jobs list (Ctrl-C to stop)\n", b.Bytes(), interval)
		} else {
			fmt.Fprintf(out, "%s\n", b.Bytes())
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(interval):
		}
	}
}

// listRows is every job of the store (and every tombstone of a collected one), newest
// first, filtered by age and state.
func listRows(ctx context.Context, e *engine.Engine, since time.Duration, want map[job.State]bool) ([]listRow, error) {
	listed, tombs, err := e.Listing(ctx, "")
	if err != nil {
		return nil, err
	}
	now := time.Now()
	byID := map[string]int{}
	var rows []listRow
	for _, l := range listed {
		byID[l.Handle.JobID] = len(rows)
		rows = append(rows, listRow{Listed: l, FinishedAt: timeOrNil(l.FinishedAt)})
	}
	for _, t := range tombs {
		cleaned := t.CleanedAt
		if i, ok := byID[t.JobID]; ok { // still being cleaned up
			rows[i].Collected, rows[i].CleanedAt = true, &cleaned
			continue
		}
		rows = append(rows, tombstoneRow(t))
	}
	slices.SortStableFunc(rows, func(a, b listRow) int { return strings.Compare(b.Handle.JobID, a.Handle.JobID) })
	out := rows[:0]
	for _, r := range rows {
		r.created = createdOf(r.Handle)
		r.AgeSeconds = now.Sub(r.created).Seconds()
		if wanted(r, now, since, want) {
			out = append(out, r)
		}
	}
	return out, nil
}

// timeOrNil is a copy of t, nil when it is zero.
func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// tombstoneRow is the row of a job collected and cleaned up: SUCCEEDED.
func tombstoneRow(t *job.Tombstone) listRow {
	cleaned := t.CleanedAt
	h := &job.Handle{JobID: t.JobID, DisplayName: t.DisplayName, Accelerator: t.Accelerator, Backend: t.Backend, CreatedAt: t.CreatedAt, GroupID: t.GroupID, GroupIndex: t.GroupIndex}
	return listRow{Listed: engine.Listed{Handle: h, State: job.Succeeded}, Collected: true, CleanedAt: &cleaned, FinishedAt: timeOrNil(t.FinishedAt)}
}

// wanted says r passes --since and --status.
func wanted(r listRow, now time.Time, since time.Duration, want map[job.State]bool) bool {
	if since > 0 && !r.created.IsZero() && now.Sub(r.created) > since {
		return false
	}
	return len(want) == 0 || want[r.State]
}

// createdOf is when the job was submitted: its handle's time, else its ID's.
func createdOf(h *job.Handle) time.Time {
	if t, err := time.Parse(time.RFC3339Nano, h.CreatedAt); err == nil {
		return t
	}
	t, _ := job.CreatedAt(h.JobID)
	return t
}

// fillTimes looks up when each final row ended (status.json), for DURATION.
func fillTimes(ctx context.Context, e *engine.Engine, rows []listRow) {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for i := range rows {
		r := &rows[i]
		if r.FinishedAt == nil && r.State.Terminal() && !r.Collected {
			g.Go(func() error {
				if t := e.FinishedAt(gctx, r.Handle.JobID, ""); !t.IsZero() {
					r.FinishedAt = &t
				}
				return nil
			})
		}
	}
	g.Wait()
	now := time.Now()
	for i := range rows {
		r := &rows[i]
		if r.created.IsZero() {
			continue
		}
		end := now
		if r.FinishedAt != nil {
			end = *r.FinishedAt
		} else if r.State.Terminal() {
			continue // ended, but when is not recorded
		}
		d := end.Sub(r.created).Seconds()
		r.DurationSeconds = &d
	}
}

// tableRow is one printed row: a job, or a batch with its children folded.
type tableRow struct {
	id, status, function, accel, backend string
	age, duration                        string
}

// listEntry is one printed entry: a job, or a batch with its children folded.
type listEntry struct {
	job   *listRow
	group []*listRow
}

func printListTable(ctx context.Context, e *engine.Engine, w, warn io.Writer, rows []listRow, limit int, p painter) error {
	entries := foldEntries(rows)
	more := 0
	if limit > 0 && len(entries) > limit {
		more = len(entries) - limit
		entries = entries[:limit]
	}
	byID := shownRows(ctx, e, entries)
	now := time.Now()
	var trs []tableRow
	var damaged []*listRow
	for _, en := range entries {
		var tr tableRow
		if en.job != nil {
			r := byID[en.job.Handle.JobID]
			tr = jobTableRow(r, now)
			if r.State == engine.ListError {
				damaged = append(damaged, r)
			}
		} else {
			kids := make([]*listRow, len(en.group))
			for i, k := range en.group {
				kids[i] = byID[k.Handle.JobID]
			}
			tr = foldBatch(kids, expectedInputs(ctx, e, kids[0].Handle.GroupID), now)
		}
		trs = append(trs, tr)
	}
	if err := writeTable(w, trs, p); err != nil {
		return err
	}
	if more > 0 {
		fmt.Fprintf(warn, "%d more; --all shows them (or --limit N)\n", more)
	}
	for _, r := range damaged {
		fmt.Fprintf(warn, "kinetic: warning: %s\n", r.Reason)
	}
	return nil
}

// foldEntries folds batch children: one entry per batch, where its newest child stands.
func foldEntries(rows []listRow) []*listEntry {
	var entries []*listEntry
	groups := map[string]*listEntry{}
	for i := range rows {
		r := &rows[i]
		gid := r.Handle.GroupID
		if gid == "" {
			entries = append(entries, &listEntry{job: r})
			continue
		}
		if en := groups[gid]; en != nil {
			en.group = append(en.group, r)
			continue
		}
		en := &listEntry{group: []*listRow{r}}
		groups[gid] = en
		entries = append(entries, en)
	}
	return entries
}

// shownRows are the rows of entries, their times filled, by job ID.
func shownRows(ctx context.Context, e *engine.Engine, entries []*listEntry) map[string]*listRow {
	var shown []listRow
	for _, en := range entries {
		if en.job != nil {
			shown = append(shown, *en.job)
		}
		for _, r := range en.group {
			shown = append(shown, *r)
		}
	}
	fillTimes(ctx, e, shown)
	byID := map[string]*listRow{}
	for i := range shown {
		byID[shown[i].Handle.JobID] = &shown[i]
	}
	return byID
}

// jobTableRow is the printed row of a single job.
func jobTableRow(r *listRow, now time.Time) tableRow {
	h := r.Handle
	tr := tableRow{id: h.JobID, status: string(r.State), function: h.DisplayName, accel: h.Accelerator, backend: h.Backend, age: "-", duration: "-"}
	if r.Collected {
		tr.status += " (collected)"
	}
	if cancelled(r.Listed) {
		tr.status += " (cancelled)"
	}
	if !r.created.IsZero() {
		tr.age = humanDuration(now.Sub(r.created))
	}
	if r.DurationSeconds != nil {
		tr.duration = humanDuration(seconds.Duration(*r.DurationSeconds))
	}
	return tr
}

// writeTable writes the rows as an aligned table, their statuses coloured by p.
func writeTable(w io.Writer, rows []tableRow, p painter) error {
	var table bytes.Buffer
	tw := tabwriter.NewWriter(&table, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATUS\tFUNCTION\tACCELERATOR\tBACKEND\tAGE\tDURATION")
	statuses := make([]string, len(rows))
	for i, tr := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", tr.id, tr.status, tr.function, tr.accel, tr.backend, tr.age, tr.duration)
		statuses[i] = tr.status
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := w.Write(paintColumn(table.Bytes(), "STATUS", statuses, p.status))
	return err
}

// foldBatch is the row of a batch: its state (RUNNING while any child runs, PENDING
// while any waits, else FAILED if any failed, else SUCCEEDED), how many children are
// done, the age of its first child and its span so far.
//
// total is how many inputs the batch has (its manifest's; 0 when unknown): the counts
// are of every input, those not submitted (yet, or ever: fail_fast) included.
func foldBatch(kids []*listRow, total int, now time.Time) tableRow {
	h := kids[0].Handle
	c := countKids(kids)
	total = max(total, len(kids))
	tr := tableRow{id: h.GroupID, status: c.status(total), function: h.DisplayName + " ×" + strconv.Itoa(total), accel: h.Accelerator, backend: h.Backend, age: "-", duration: "-"}
	if !c.start.IsZero() {
		tr.age = humanDuration(now.Sub(c.start))
		if !c.allFinal {
			tr.duration = humanDuration(now.Sub(c.start))
		} else if !c.end.IsZero() {
			tr.duration = humanDuration(c.end.Sub(c.start))
		}
	}
	return tr
}

// kidCounts is what foldBatch counts of a batch's children: how many are in each state
// (unreadable ones are FAILED), the first's creation and the last's end.
type kidCounts struct {
	n          map[job.State]int
	start, end time.Time
	allFinal   bool
}

func countKids(kids []*listRow) kidCounts {
	c := kidCounts{n: map[job.State]int{}, allFinal: true}
	for _, k := range kids {
		st := k.State
		if st == engine.ListError || st == job.NotFound {
			st = job.Failed
		}
		c.n[st]++
		if !k.created.IsZero() && (c.start.IsZero() || k.created.Before(c.start)) {
			c.start = k.created
		}
		if !st.Terminal() {
			c.allFinal = false
		} else if k.FinishedAt != nil && k.FinishedAt.After(c.end) {
			c.end = *k.FinishedAt
		}
	}
	return c
}

// status is the batch's STATUS column, of total inputs.
func (c kidCounts) status(total int) string {
	n := c.n
	done := n[job.Succeeded] + n[job.Failed]
	switch {
	case n[job.Running] > 0:
		return fmt.Sprintf("RUNNING %d/%d done", done, total)
	case n[job.Pending] > 0:
		return fmt.Sprintf("PENDING %d/%d done", done, total)
	case n[job.Failed] > 0:
		status := fmt.Sprintf("FAILED %d of %d", n[job.Failed], total)
		if ok := n[job.Succeeded]; ok > 0 {
			status += fmt.Sprintf(", %d ok", ok)
		}
		return status
	}
	return fmt.Sprintf("SUCCEEDED %d/%d", done, total)
}

// cancelled reports whether a job ended because it was cancelled: FAILED with the
// reason the backends record for a cancel ("cancelled"). The status stays FAILED (the
// API's JobStatus has no CANCELLED); tables mark it (docs/parity.md).
func cancelled(l engine.Listed) bool {
	return l.State == job.Failed && strings.HasPrefix(l.Reason, "cancelled")
}

// expectedInputs is how many inputs batch gid has, from its manifest (0 when it cannot
// be read: the row then counts the children it sees).
func expectedInputs(ctx context.Context, e *engine.Engine, gid string) int {
	st, err := e.DefaultStore(ctx)
	if err != nil || gid == "" {
		return 0
	}
	m, err := layout.ReadManifest(ctx, st, gid)
	if err != nil || m == nil {
		return 0
	}
	return m.TotalExpected
}

// humanDuration is d the way kubectl shows ages: 45s, 3m, 2h, 2h5m below 10h, 5d.
func humanDuration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	switch {
	case d < time.Second:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < 2*time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 10*time.Hour:
		h, m := int(d.Hours()), int(d.Minutes())%60
		if m == 0 {
			return fmt.Sprintf("%dh", h)
		}
		return fmt.Sprintf("%dh%dm", h, m)
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	default:
		return fmt.Sprintf("%dd", int(d.Hours()/24))
	}
}

// parseAge reads a duration as a person writes it: Go's (90s, 30m, 1h30m) plus days
// (7d, 1d12h).
func parseAge(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "-") {
		return 0, fmt.Errorf("a negative duration: give how long, like 30m, 2h or 7d (without the minus)")
	}
	days, s, err := parseDays(s)
	if err != nil {
		return 0, err
	}
	var rest time.Duration
	if s != "" {
		if rest, err = time.ParseDuration(s); err != nil {
			return 0, fmt.Errorf("write a duration like 30m, 2h or 7d")
		}
	}
	d := days + rest
	if rest < 0 || rest > maxFlagDuration || d > maxFlagDuration {
		return 0, fmt.Errorf("at most %d days", maxFlagDuration/(24*time.Hour))
	}
	if d <= 0 {
		return 0, fmt.Errorf("give a positive duration like 30m, 2h or 7d")
	}
	return d, nil
}

// parseDays reads the leading "Nd" of s, if any, and returns the rest.
func parseDays(s string) (time.Duration, string, error) {
	i := strings.IndexByte(s, 'd')
	if i <= 0 {
		return 0, s, nil
	}
	n, err := strconv.Atoi(s[:i])
	if err != nil || n < 0 {
		return 0, "", fmt.Errorf("write a duration like 30m, 2h or 7d")
	}
	if time.Duration(n) > maxFlagDuration/(24*time.Hour) {
		return 0, "", fmt.Errorf("at most %d days", maxFlagDuration/(24*time.Hour))
	}
	return time.Duration(n) * 24 * time.Hour, s[i+1:], nil
}
