package cli

import (
	"errors"
	"os"

	"github.com/spf13/cobra"

	"github.com/kinetic-run/kinetic/internal/cpuprofile"
	"github.com/kinetic-run/kinetic/server"
)

func newServeCmd(g *Globals) *cobra.Command {
	var stdio bool
	cmd := &cobra.Command{
		Use:    "serve --stdio",
		Short:  "Serve the engine protocol over stdin/stdout (used by the Python SDK)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !stdio {
				return errors.New("only --stdio is supported")
			}
			defer cpuprofile.Start("serve")()
			e, err := newEngine(cmd, g, nil)
			if err != nil {
				return err
			}
			defer e.Close()
			return server.Serve(cmd.Context(), e, os.Stdin, os.Stdout)
		},
	}
	cmd.Flags().BoolVar(&stdio, "stdio", false, "speak JSON lines on stdin/stdout")
	return cmd
}
