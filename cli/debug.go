package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newJobsDebugCmd(g *Globals) *cobra.Command {
	var (
		f    jobFlags
		port int
	)
	cmd := &cobra.Command{
		Use:   "debug JOB_ID",
		Short: "Wait for a debug job's debugger and print the VS Code configuration that attaches to it",
		Long: `Wait until a job submitted with --debug (debug=True) has started debugpy, connect this
machine to it (on a cluster, a port-forward that lives until Ctrl-C or the job ends; on
the local backend, debugpy's own address), and print the launch.json configuration
("request": "attach") to stdout. Attach within the job's debug wait (10 minutes by
default), or the job fails.`,
		Example: `  kinetic jobs debug job-01kaq2m0s5f8e3yb0t2c6rk9v
  kinetic jobs debug --port 5679 --json job-01kaq2m0s5f8e3yb0t2c6rk9v`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if port < 0 || port > 65535 {
				return usageErrorf("--port %d: give a TCP port from 1 to 65535 (or 0 for any free port)", port)
			}
			e, j, err := f.attach(cmd, g, args[0])
			if err != nil {
				return err
			}
			defer e.Close()
			ctx := cmd.Context()
			fmt.Fprintf(cmd.ErrOrStderr(), "kinetic: waiting for %s to start its debugger...\n", j.Handle.JobID)
			s, err := j.DebugAttach(ctx, port)
			if err != nil {
				return err
			}
			defer s.Close()
			if f.asJSON {
				if err := writeJSON(cmd.OutOrStdout(), s); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(cmd.ErrOrStderr(), "kinetic: debugpy of %s is reachable at %s:%d; add this to .vscode/launch.json \"configurations\" and start it:\n", j.Handle.JobID, s.Host, s.Port)
				if err := writeJSON(cmd.OutOrStdout(), s.Launch); err != nil {
					return err
				}
			}
			if !s.Forwarded {
				return nil
			}
			fmt.Fprintln(cmd.ErrOrStderr(), "kinetic: forwarding until the job ends (Ctrl-C to stop)")
			state, reason, err := j.Wait(ctx, nil)
			if err != nil {
				return nil // interrupted: the forward ends with us
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "kinetic: %s is %s %s\n", j.Handle.JobID, state, reason)
			return nil
		},
	}
	f.add(cmd)
	cmd.Flags().IntVar(&port, "port", 0, "local port for the forward to the job's debugpy (default: any free port; not used on the local backend)")
	return cmd
}
