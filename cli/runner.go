package cli

import (
	"errors"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/kinetic-run/kinetic/backend/local"
	"github.com/kinetic-run/kinetic/runner"
)

// newRunnerCmd is what runs on the worker: in a pod, or under a local supervisor
// (cmd/kinetic-runner takes the same argv).
func newRunnerCmd(g *Globals) *cobra.Command {
	var w runner.Worker
	cmd := &cobra.Command{
		Use:    "runner --store URL (--job ID | --group GID --index-env VAR)",
		Short:  "Run one job on this worker (used inside pods and by the local backend)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			err := runner.RunWorker(cmd.Context(), w)
			if errors.Is(err, runner.ErrJobFailed) {
				return &ExitError{Code: 1, Err: errJobFailed}
			}
			return err
		},
	}
	cmd.Flags().AddGoFlagSet(w.Flags())
	cmd.MarkFlagRequired("store")
	return cmd
}

// newInstallRunnerCmd is the runner image's init container: it copies this binary into
// the pod's shared volume, so any image with python3 can run jobs.
func newInstallRunnerCmd(g *Globals) *cobra.Command {
	return &cobra.Command{
		Use:    "install-runner DEST",
		Short:  "Copy this kinetic binary to DEST (the init container of job pods)",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE:   func(cmd *cobra.Command, args []string) error { return runner.InstallSelf(args[0]) },
	}
}

func newSuperviseCmd(g *Globals) *cobra.Command {
	var o local.SuperviseOptions
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
			defer profile("supervise")()
			var err error
			if group != "" {
				err = local.WorkGroup(cmd.Context(), local.GroupWorkOptions{SuperviseOptions: o, Group: group, Worker: worker})
			} else if queue != "" {
				err = local.Work(cmd.Context(), local.WorkOptions{SuperviseOptions: o, Queue: queue, Worker: worker, Idle: idle})
			} else {
				err = local.Supervise(cmd.Context(), o)
			}
			local.SayStartupError(o.Ready, err)
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
