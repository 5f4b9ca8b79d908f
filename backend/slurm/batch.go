package slurm

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/kinetic-run/kinetic/batch/driver"
	"github.com/kinetic-run/kinetic/batch/layout"
	"github.com/kinetic-run/kinetic/job"
)

// A batch is one Slurm job array, named after the batch: task i runs input i's job,
// which it finds in the store (`kinetic runner --group GID --index-env
// SLURM_ARRAY_TASK_ID`, as an Indexed Job's pod does with JOB_COMPLETION_INDEX), and
// max_concurrent is the array's throttle (--array=0-N%M). Retries are jobs of their own.

// member reports whether h runs as a task of its batch's array.
func member(h *job.Handle) (index int, ok bool) {
	if h.GroupID == "" || h.K8sName != h.GroupID {
		return 0, false
	}
	i, err := strconv.Atoi(h.GroupIndex)
	return i, err == nil && i >= 0
}

// Modes implements driver.Driver: the first attempts of a batch are one job array.
func (b *Backend) Modes(h *job.Handle, spec *job.Spec) driver.Modes {
	return driver.Modes{Unit: true}
}

// Enqueue implements driver.Driver: never asked (Modes has no queue).
func (b *Backend) Enqueue(ctx context.Context, h *job.Handle, parallelism int) error {
	return driver.ErrUnsupported
}

// StartGroup implements driver.Driver: one sbatch --array for the whole batch. A
// second call for a batch Slurm already has submits nothing.
func (b *Backend) StartGroup(ctx context.Context, g driver.Group, tmpl *job.Handle) error {
	if g.Size <= 0 {
		return nil
	}
	if started, err := b.WithdrawGroup(ctx, g.ID); err != nil || started {
		return err
	}
	if c, err := b.slurmConfig(ctx); err == nil && c.maxArraySize > 0 && g.Size > c.maxArraySize {
		return fmt.Errorf("batch %s has %d inputs, and the Slurm cluster %s takes job arrays of at most %d (MaxArraySize in its slurm.conf): map at most %d inputs at a time, or ask its administrators to raise MaxArraySize", g.ID, g.Size, c.name, c.maxArraySize, c.maxArraySize)
	}
	par := max(1, min(g.Parallelism, g.Size))
	array := fmt.Sprintf("0-%d%%%d", g.Size-1, par)
	args, err := b.sbatchArgs(tmpl, g.ID, array, b.outputFile(g.ID+"_%a"))
	if err != nil {
		return err
	}
	spec, err := b.groupSpec(ctx, g.ID)
	if err != nil {
		return err
	}
	script, err := b.script(tmpl, spec, "--group", g.ID, "--index-env", "SLURM_ARRAY_TASK_ID")
	if err != nil {
		return err
	}
	out, err := b.command(ctx, script, "sbatch", args...)
	if err != nil {
		return fmt.Errorf("submit the job array of batch %s to Slurm: %w", g.ID, err)
	}
	if _, err := parseSbatch(out); err != nil {
		return fmt.Errorf("submit the job array of batch %s to Slurm: %w", g.ID, err)
	}
	return nil
}

// GroupDone implements driver.Driver: the tasks of the batch's array that Slurm
// has ended, from one squeue. slurmctld forgets a task MinJobAge after it ends, while
// the rest of its array runs on: a task of the batch that squeue no longer lists has
// ended too (squeue -r lists every task that has not, pending ones included). nil when
// slurmctld no longer has the array at all (its members are then looked at one by one,
// in the store first).
func (b *Backend) GroupDone(ctx context.Context, gid string) (map[int]bool, error) {
	es, err := b.squeue(ctx, gid, true)
	if err != nil {
		return nil, fmt.Errorf("look at the job array of batch %s: %w", gid, err)
	}
	if len(es) == 0 {
		return nil, nil
	}
	size, err := b.groupSize(ctx, gid)
	if err != nil {
		return nil, err
	}
	return tasksDone(es, size), nil
}

// tasksDone are the tasks of an array of size tasks that have ended, by what squeue
// lists of it (es, not empty): those it lists as ended, and those it no longer lists.
func tasksDone(es []entry, size int) map[int]bool {
	done := map[int]bool{}
	listed := map[int]bool{}
	for _, e := range es {
		if e.Task < 0 {
			continue
		}
		listed[e.Task] = true
		if phaseOf(e.State) == phaseEnded {
			done[e.Task] = true
		}
	}
	for i := 0; i < size; i++ {
		if !listed[i] {
			done[i] = true
		}
	}
	return done
}

// groupSize is the number of inputs of batch gid, from its manifest (read once).
func (b *Backend) groupSize(ctx context.Context, gid string) (int, error) {
	if n, ok := b.sizes.Load(gid); ok {
		return n.(int), nil
	}
	m, err := layout.ReadManifest(ctx, b.st, gid)
	if err != nil {
		return 0, fmt.Errorf("batch %s: %w", gid, err)
	}
	if m.SubmissionComplete {
		b.sizes.Store(gid, m.TotalExpected)
	}
	return m.TotalExpected, nil
}

// UnwrittenStatus implements driver.Driver: a member whose job is not in the store
// yet, by what Slurm says of its task.
func (b *Backend) UnwrittenStatus(ctx context.Context, h *job.Handle) (job.State, string, error) {
	return b.slurmStatus(ctx, h)
}

// WithdrawGroup implements driver.Withdrawer: an array Slurm knows was started;
// one it does not was never submitted, since only StartGroup submits it.
func (b *Backend) WithdrawGroup(ctx context.Context, gid string) (bool, error) {
	es, err := b.listed(ctx, gid, -2)
	if err != nil {
		return false, fmt.Errorf("look at the job array of batch %s: %w", gid, err)
	}
	return len(es) > 0, nil
}

// CleanupGroup implements driver.Driver: cancel what is left of the batch's array
// and remove its output files (its members' results stay in the store).
func (b *Backend) CleanupGroup(ctx context.Context, gid string) error {
	if _, err := b.command(ctx, "", "scancel", "--name="+gid); err != nil && !gone(err) {
		return fmt.Errorf("cancel the job array of batch %s: %w", gid, err)
	}
	files, _ := filepath.Glob(filepath.Join(b.o.OutputDir, gid+"_*.out"))
	for _, f := range files {
		if err := os.Remove(f); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("cleanup of batch %s: %w", gid, err)
		}
	}
	return nil
}

// Release implements driver.Driver: a task ends with its job; nothing is held.
func (b *Backend) Release(ctx context.Context, h *job.Handle) error { return nil }
