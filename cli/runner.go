package cli

import (
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/kinetic-run/kinetic/backend/local"
	"github.com/kinetic-run/kinetic/runner"
)

func init() { register(newRunnerCmd); register(newSuperviseCmd) }

// newRunnerCmd is what runs on the worker: in a pod, or under a local supervisor.
func newRunnerCmd(g *Globals) *cobra.Command {
	var o runner.Options
	cmd := &cobra.Command{
		Use:    "runner --store URL --job ID",
		Short:  "Run one job on this worker (used inside pods and by the local backend)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Workspace == "" {
				o.Workspace = "/tmp/kinetic/" + o.JobID
			}
			o.Stdout = os.Stdout
			env, err := runner.Run(cmd.Context(), o)
			if err != nil {
				return err
			}
			if !env.Success {
				return &ExitError{Code: 1, Err: errJobFailed}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&o.StoreURL, "store", "", "store URL")
	cmd.Flags().StringVar(&o.JobID, "job", "", "job ID")
	cmd.Flags().StringVar(&o.Workspace, "workspace", "", "private working directory")
	cmd.Flags().StringVar(&o.Host, "host", os.Getenv("KINETIC_HOST_INDEX"), "host index in a multi-host job")
	cmd.Flags().IntVar(&o.DebugPort, "debug-port", runner.DefaultDebugPort, "port debugpy listens on (127.0.0.1) in a debug job; 0 for any free port")
	cmd.MarkFlagRequired("store")
	cmd.MarkFlagRequired("job")
	return cmd
}

func newSuperviseCmd(g *Globals) *cobra.Command {
	var o local.SuperviseOptions
	var queue string
	var worker int
	cmd := &cobra.Command{
		Use:    "supervise --store URL --job ID --state-dir DIR",
		Short:  "Supervise one local job (started by the local backend)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Ready = os.NewFile(3, "ready")
			defer profile("supervise")()
			if queue != "" {
				return local.Work(cmd.Context(), local.WorkOptions{SuperviseOptions: o, Queue: queue, Worker: worker})
			}
			return local.Supervise(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.StoreURL, "store", "", "store URL")
	cmd.Flags().StringVar(&o.JobID, "job", "", "job ID")
	cmd.Flags().StringVar(&o.StateDir, "state-dir", "", "local backend state directory")
	cmd.Flags().StringVar(&queue, "queue", "", "serve this batch queue instead of one job")
	cmd.Flags().IntVar(&worker, "worker", 0, "worker number within the queue's pool")
	cmd.Flags().IntVar(&o.Slots, "slots", 2, "concurrent jobs on this machine")
	cmd.Flags().DurationVar(&o.Grace, "grace", 10*time.Second, "time between SIGTERM and SIGKILL on cancel")
	return cmd
}
