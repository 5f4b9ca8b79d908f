package slurm

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/kinetic-run/kinetic/backend/provision"
	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/job"
)

// Partition is one line of sinfo as status shows it (sinfoFormat).
type Partition struct {
	Name  string `json:"name"`
	Avail string `json:"avail"`
	Nodes string `json:"nodes"`
	State string `json:"state"`
	Gres  string `json:"gres"`
}

// QueuedJob is one of Kinetic's jobs in squeue (statusSqueueFormat).
type QueuedJob struct {
	SlurmID   string `json:"slurm_id"`
	Name      string `json:"name"`
	State     string `json:"state"`
	Partition string `json:"partition"`
	Time      string `json:"time"`
	Reason    string `json:"reason"`
}

// sinfoFormat: partition (* marks the default), availability, node count, state, gres.
const sinfoFormat = "%P|%a|%D|%T|%G"

// statusSqueueFormat: job ID, name, state, partition, time used, reason.
const statusSqueueFormat = "%i|%j|%T|%P|%M|%r"

// parseSinfo parses sinfo -h -o sinfoFormat; lines it cannot read are skipped.
func parseSinfo(out string) []Partition {
	var ps []Partition
	for _, f := range fieldLines(out, 5) {
		ps = append(ps, Partition{Name: f[0], Avail: f[1], Nodes: f[2], State: f[3], Gres: f[4]})
	}
	return ps
}

// parseKineticJobs parses squeue -h -o statusSqueueFormat and keeps Kinetic's jobs
// (named after a job or batch ID).
func parseKineticJobs(out string) []QueuedJob {
	var js []QueuedJob
	for _, f := range fieldLines(out, 6) {
		if job.ValidID(f[1]) {
			js = append(js, QueuedJob{SlurmID: f[0], Name: f[1], State: f[2], Partition: f[3], Time: f[4], Reason: f[5]})
		}
	}
	return js
}

// fieldLines are out's non-empty lines split at "|" into exactly n fields.
func fieldLines(out string, n int) [][]string {
	var ls [][]string
	for _, line := range strings.Split(out, "\n") {
		f := strings.Split(strings.TrimSpace(line), "|")
		if len(f) == n && f[0] != "" {
			ls = append(ls, f)
		}
	}
	return ls
}

// statusView is what `kinetic status --json` prints on the Slurm backend.
type statusView struct {
	Backend    string      `json:"backend"`
	Store      string      `json:"store"`
	Cluster    string      `json:"cluster,omitempty"`
	Partitions []Partition `json:"partitions"`
	Jobs       []QueuedJob `json:"jobs"`
	Error      string      `json:"error,omitempty"`
	OK         bool        `json:"ok"`
}

// Status is `kinetic status` on Slurm: the partitions and nodes (sinfo) and the jobs
// Kinetic has there (squeue, yours, named after a job or batch); not ready when the
// controller does not answer.
func (provisioner) Status(ctx context.Context, c *provision.Call) error {
	res, err := provision.Resolve(c, nil)
	if err != nil {
		return err
	}
	v := readStatus(ctx, res)
	if c.Bool("json") {
		if err := provision.WriteJSON(c.Out, v); err != nil {
			return err
		}
	} else {
		v.print(c.Out)
	}
	if !v.OK {
		return provision.NotReady("Slurm did not answer: " + v.Error + " (`kinetic doctor` says what to fix)")
	}
	return nil
}

func readStatus(ctx context.Context, res *config.Resolved) *statusView {
	v := &statusView{Backend: Name, Store: res.Get(config.Store), Partitions: []Partition{}, Jobs: []QueuedJob{}}
	b := &Backend{}
	out, err := b.command(ctx, "", "sinfo", "-h", "-o", sinfoFormat)
	if err != nil {
		v.Error = personal(ctx, err)
		return v
	}
	v.Partitions = append(v.Partitions, parseSinfo(out)...)
	v.Cluster, _ = b.clusterName(ctx)
	out, err = b.command(ctx, "", "squeue", "-h", "--me", "-o", statusSqueueFormat)
	if err != nil {
		v.Error = personal(ctx, err)
		return v
	}
	v.Jobs = append(v.Jobs, parseKineticJobs(out)...)
	v.OK = true
	return v
}

// personal is err in a person's words: a cancelled command says so, not Go's text.
func personal(ctx context.Context, err error) string {
	if ctx.Err() != nil {
		return "interrupted before Slurm answered"
	}
	return err.Error()
}

func (v *statusView) print(w io.Writer) {
	fmt.Fprintf(w, "Jobs go to the Slurm cluster %s (sbatch); store %s\n", orUnknown(v.Cluster), v.Store)
	if v.Error != "" {
		fmt.Fprintf(w, "✗ %s\n", v.Error)
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PARTITION\tAVAIL\tNODES\tSTATE\tGRES")
	for _, p := range v.Partitions {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p.Name, p.Avail, p.Nodes, p.State, p.Gres)
	}
	tw.Flush()
	if len(v.Jobs) == 0 {
		fmt.Fprintln(w, "no Kinetic jobs in Slurm's queue")
		return
	}
	fmt.Fprintf(w, "%d Kinetic job(s) in Slurm's queue:\n", len(v.Jobs))
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SLURM ID\tNAME\tSTATE\tPARTITION\tTIME\tREASON")
	for _, j := range v.Jobs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", j.SlurmID, j.Name, j.State, j.Partition, j.Time, j.Reason)
	}
	tw.Flush()
}
