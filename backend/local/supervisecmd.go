package local

import (
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/kinetic-run/kinetic/backend/provision"
	"github.com/kinetic-run/kinetic/internal/cpuprofile"
	"github.com/kinetic-run/kinetic/runner"
)

// `kinetic supervise` (hidden) is what the backend starts on this machine for a job, a
// batch queue or a batch's group (Backend.Submit, StartGroup): it is added to the
// program's commands through provision.RegisterCommand.
func init() { provision.RegisterCommand(newSuperviseCmd) }

func newSuperviseCmd() *cobra.Command {
	var o SuperviseOptions
	var queue, group string
	var worker int
	var idle time.Duration
	cmd := &cobra.Command{
		Use:    "supervise --store URL --job ID --state-dir DIR",
		Short:  "Supervise one local job (started by the local backend)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Ready = os.NewFile(3, "ready")
			defer cpuprofile.Start("supervise")()
			var err error
			if group != "" {
				err = WorkGroup(cmd.Context(), GroupWorkOptions{SuperviseOptions: o, Group: group, Worker: worker})
			} else if queue != "" {
				err = Work(cmd.Context(), WorkOptions{SuperviseOptions: o, Queue: queue, Worker: worker, Idle: idle})
			} else {
				err = Supervise(cmd.Context(), o)
			}
			SayStartupError(o.Ready, err)
			return err
		},
	}
	cmd.Flags().StringVar(&o.StoreURL, "store", "", "store URL")
	cmd.Flags().StringVar(&o.JobID, "job", "", "job ID")
	cmd.Flags().StringVar(&o.StateDir, "state-dir", "", "local backend state directory")
	cmd.Flags().StringVar(&queue, "queue", "", "serve this batch queue instead of one job")
	cmd.Flags().StringVar(&group, "group", "", "serve this batch's inputs with an executor (its children derived) instead of one job")
	cmd.Flags().DurationVar(&idle, "idle", 0, "with --queue, how long a worker waits for another job before it exits (0: a few seconds)")
	cmd.Flags().IntVar(&worker, "worker", 0, "worker number within the queue's pool, or the batch's workers")
	cmd.Flags().IntVar(&o.Slots, "slots", 2, "concurrent jobs on this machine")
	cmd.Flags().DurationVar(&o.Grace, "grace", runner.DefaultGrace, "time between SIGTERM and SIGKILL on cancel")
	cmd.Flags().BoolVar(&o.Python.Cold, "cold", false, "start every Python call in a new interpreter (no warm workers)")
	cmd.Flags().DurationVar(&o.Python.WarmIdle, "warm-idle", runner.DefaultWarmIdle, "how long an idle warm worker server lives")
	cmd.Flags().StringVar(&o.Python.Interpreter, "python", "", "the interpreter Python jobs run with (default: the job's own)")
	return cmd
}
