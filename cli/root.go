// Package cli holds the cobra commands of the kinetic binary. Each command lives in its
// own file and calls one library function in RunE: the CLI stays a thin face over the
// engine. NewRoot lists every top-level command in one place.
package cli

import (
	"github.com/spf13/cobra"

	"github.com/kinetic-run/kinetic/backend/provision"
	"github.com/kinetic-run/kinetic/version"
)

// Globals are the flags every command shares.
type Globals struct {
	// Profile is --profile: the configuration profile to use instead of the active one.
	Profile string
}

// NewRoot builds the kinetic command tree.
func NewRoot() *cobra.Command {
	g := &Globals{}
	root := &cobra.Command{
		Use:           "kinetic",
		Short:         "Run a function on a TPU, GPU or CPU somewhere else and get the value back",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version.Version,
	}
	root.SetVersionTemplate("kinetic {{.Version}}\n")
	root.SetFlagErrorFunc(flagError)
	root.PersistentFlags().StringVar(&g.Profile, "profile", "", "configuration profile to use (default: the active one)")
	// --json before the subcommand (`kinetic --json jobs list`): the command's own --json
	// takes it; a command without one says so (checkRootJSON).
	root.PersistentFlags().Bool("json", false, "print JSON")
	root.PersistentFlags().MarkHidden("json")
	root.PersistentPreRunE = func(c *cobra.Command, _ []string) error { return checkRootJSON(c) }
	root.AddCommand(
		// Jobs and batches.
		newRunCmd(g),
		newJobsCmd(g),
		newBatchCmd(g),
		newStatusCmd(g),
		newDashboardCmd(g),
		newPruneCmd(g),
		// Configuration.
		newConfigCmd(g),
		newProfileCmd(g),
		newInitCmd(g),
		newAcceleratorsCmd(g),
		// Infrastructure.
		newUpCmd(g),
		newDownCmd(g),
		newDoctorCmd(g),
		newPoolCmd(g),
		newStoreCmd(g),
		newBuildImageCmd(g),
		// The engine for the SDKs, and the worker side.
		newServeCmd(g),
		newRunnerCmd(g),
		newInstallRunnerCmd(g),
		newVersionCmd(g),
	)
	root.AddCommand(provision.Commands()...) // a backend's own (the local backend's supervise)
	withManners(root)
	withBackendReason(root, g)
	withCompletion(root, g)
	withExamples(root)
	return root
}
