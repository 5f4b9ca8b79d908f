package cli

import (
	"errors"

	"github.com/spf13/cobra"

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
