// Package cli holds the cobra commands of the kinetic binary. Each command lives in its
// own file and calls one library function in RunE: the CLI stays a thin face over the
// engine. NewRoot lists every top-level command in one place.
package cli

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/kinetic-run/kinetic/backend/provision"
	"github.com/kinetic-run/kinetic/version"
)

// Globals are the flags every command shares.
type Globals struct {
	// Profile is --profile: the configuration profile to use instead of the active one.
	Profile string
	// Quiet is -q/--quiet: no progress and no notices on stderr, only errors, warnings
	// and data.
	Quiet bool
	// Verbose is -v/--verbose: the engine's debug logs, as KINETIC_LOG_LEVEL=DEBUG.
	Verbose bool
	// NoColor is --no-color: no colour even on a terminal (as NO_COLOR=1).
	NoColor bool
}

// SetupLogging sets the level of the binary's logger (a KINETIC_LOG_LEVEL value):
// cmd/kinetic sets it, and -v calls it with "DEBUG". Nil leaves the logger as it is.
var SetupLogging func(level string)

// applyGlobals acts on -v, -q and --no-color once the flags are read.
func applyGlobals(c *cobra.Command, g *Globals) {
	if g.Verbose {
		// -v wins over the variable; setting it passes the level on to what this process
		// starts (the SDK's engine, supervisors), as the variable itself would.
		os.Setenv(logLevelEnv, "DEBUG")
		if SetupLogging != nil {
			SetupLogging("DEBUG")
		}
	}
	withStderr(c, g)
}

// logLevelEnv is the variable that sets the log level (cmd/kinetic reads it).
const logLevelEnv = "KINETIC_LOG_LEVEL"

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
	root.PersistentFlags().BoolVarP(&g.Quiet, "quiet", "q", false, "no progress or notices on stderr: only errors, warnings and data (a job's logs still show)")
	root.PersistentFlags().BoolVarP(&g.Verbose, "verbose", "v", false, "debug logs on stderr (as KINETIC_LOG_LEVEL=DEBUG, which it overrides)")
	root.PersistentFlags().BoolVar(&g.NoColor, "no-color", false, "no colour, even on a terminal (as NO_COLOR=1 or TERM=dumb)")
	root.PersistentPreRunE = func(c *cobra.Command, _ []string) error {
		applyGlobals(c, g)
		return checkRootJSON(c)
	}
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
