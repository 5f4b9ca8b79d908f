package slurm

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/job"
)

var _ backend.Observer = (*Backend)(nil)

// listFormat is what parseList reads: the job's name, its array task's index (squeue
// -r: one line per task) and its state.
const listFormat = "%j|%K|%T"

// List implements backend.Observer: this user's Slurm jobs that slurmctld remembers
// (pending, running, or ended less than MinJobAge ago) and that Kinetic named (a job's
// ID, or a batch's for each task of its array), from one squeue. The handles hold what
// the name says (the job, its batch and index, the cluster), nothing of the store's.
func (b *Backend) List(ctx context.Context) ([]*job.Handle, error) {
	out, err := b.command(ctx, "", "squeue", "-h", "-r", "--me", "--states=all", "-o", listFormat)
	if err != nil {
		return nil, fmt.Errorf("list the jobs in Slurm: %w", err)
	}
	cluster, err := b.clusterName(ctx)
	if err != nil {
		return nil, err
	}
	all, ended := parseListStates(out)
	hs := make([]*job.Handle, 0, len(all))
	for _, h := range all {
		// slurmctld keeps an ended job for MinJobAge whatever Kinetic did; one whose
		// output Cleanup removed is no longer the backend's.
		if ended[h.JobID] && !exists(b.outputPath(h)) {
			continue
		}
		h.Backend, h.ClusterName = Name, cluster
		hs = append(hs, h)
	}
	return hs, nil
}

// exists reports whether the file at path is there.
func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// finalStates are the states squeue shows for a job that has ended.
var finalStates = map[string]bool{
	"COMPLETED": true, "CANCELLED": true, "FAILED": true, "TIMEOUT": true, "NODE_FAIL": true,
	"PREEMPTED": true, "BOOT_FAIL": true, "DEADLINE": true, "OUT_OF_MEMORY": true,
}

// parseListStates is parseList, and which of the jobs have ended (a final state in the
// line's third field).
func parseListStates(out string) ([]*job.Handle, map[string]bool) {
	ended := map[string]bool{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Split(strings.TrimSpace(line), "|")
		if len(f) < 3 || !finalStates[f[2]] {
			continue
		}
		if h := listedHandle(f[0], f[1]); h != nil {
			ended[h.JobID] = true
		}
	}
	return parseList(out), ended
}

// parseList parses squeue -h -r -o listFormat into the handles of the jobs Kinetic
// named: a job's ID (job-…), or a batch's (grp-…) with the index of one task of its
// array. Other jobs, and lines it cannot read, are skipped; a job listed twice is one.
func parseList(out string) []*job.Handle {
	seen := map[string]bool{}
	var hs []*job.Handle
	for _, line := range strings.Split(out, "\n") {
		name, rest, _ := strings.Cut(strings.TrimSpace(line), "|")
		task, _, _ := strings.Cut(rest, "|")
		h := listedHandle(name, task)
		if h == nil || seen[h.JobID] {
			continue
		}
		seen[h.JobID] = true
		hs = append(hs, h)
	}
	sort.Slice(hs, func(i, k int) bool { return hs[i].JobID < hs[k].JobID })
	return hs
}

// listedHandle is the handle of the Slurm job named name (array task task, "N/A" or "" when
// none), or nil when Kinetic did not name it.
func listedHandle(name, task string) *job.Handle {
	if !job.ValidName(name) {
		return nil
	}
	i, err := strconv.Atoi(task)
	switch {
	case strings.HasPrefix(name, job.GroupPrefix) && job.ValidID(name) && err == nil && i >= 0:
		return &job.Handle{JobID: job.ChildID(name, i), GroupID: name, GroupIndex: strconv.Itoa(i), K8sName: name}
	case strings.HasPrefix(name, job.JobPrefix) && err != nil:
		return &job.Handle{JobID: name, K8sName: name}
	}
	return nil
}

// outputPath is where Slurm writes the output of h's Slurm job (or array task).
func (b *Backend) outputPath(h *job.Handle) string {
	name, task := slurmName(h)
	if task >= 0 {
		return b.outputFile(fmt.Sprintf("%s_%d", name, task))
	}
	return b.outputFile(name)
}

// followPoll is how often StreamLogs with follow looks for more output, and whether
// the runner recorded the job's end in the store; Slurm is asked every followAsk polls
// (for a job that ended without its runner), not to load slurmctld with squeues.
const (
	followPoll = 200 * time.Millisecond
	followAsk  = 10
)

// StreamLogs implements backend.Observer from the job's Slurm output file (the runner's
// output and its own lines, on the file system this machine shares with the nodes): the
// last tailLines lines (all when 0), then with follow what is added until the job ends.
// ErrNoLogs when this machine has no such file (not started yet, cleaned up, or an
// output directory it does not share): the store's copy is then what there is.
func (b *Backend) StreamLogs(ctx context.Context, h *job.Handle, follow bool, tailLines int, w io.Writer) error {
	f, err := os.Open(b.outputPath(h))
	if os.IsNotExist(err) {
		return backend.ErrNoLogs
	}
	if err != nil {
		return fmt.Errorf("logs of %s: %w", h.JobID, err)
	}
	defer f.Close()
	if err := copyTail(f, tailLines, w); err != nil {
		return fmt.Errorf("logs of %s: %w", h.JobID, err)
	}
	if !follow {
		return nil
	}
	return b.follow(ctx, h, f, w)
}

// follow copies what is added to f until h's job has ended (then what is left) or ctx
// ends.
func (b *Backend) follow(ctx context.Context, h *job.Handle, f *os.File, w io.Writer) error {
	t := time.NewTicker(followPoll)
	defer t.Stop()
	for n := 1; ; n++ {
		if _, err := io.Copy(w, f); err != nil {
			return fmt.Errorf("logs of %s: %w", h.JobID, err)
		}
		ended, err := b.ended(ctx, h, n%followAsk == 0)
		if err != nil {
			return err
		}
		if ended {
			_, err := io.Copy(w, f) // what the job wrote as it ended
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// ended reports whether h's job has ended: recorded in the store, or, with ask, as
// Status finds it (Slurm ended it without its runner).
func (b *Backend) ended(ctx context.Context, h *job.Handle, ask bool) (bool, error) {
	if !ask {
		_, _, final, err := b.stored(ctx, h)
		return final, err
	}
	s, _, err := b.Status(ctx, h)
	return s.Terminal(), err
}

// copyTail copies the last n lines of f (all of it when n <= 0) to w, leaving f at its
// end.
func copyTail(f *os.File, n int, w io.Writer) error {
	if n <= 0 {
		_, err := io.Copy(w, f)
		return err
	}
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	for _, l := range lines {
		if _, err := fmt.Fprintln(w, l); err != nil {
			return err
		}
	}
	return nil
}
