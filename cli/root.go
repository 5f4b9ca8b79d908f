// Package cli holds the cobra commands of the kinetic binary. Each command lives in its
// own file, registers itself in init, and calls one library function in RunE: the CLI
// stays a thin face over the engine.
package cli

import (
	"github.com/spf13/cobra"

	"github.com/kinetic-run/kinetic/version"
)

// commands are the constructors of the top-level commands, registered by each file's init.
var commands []func(*Globals) *cobra.Command

func register(f func(*Globals) *cobra.Command) { commands = append(commands, f) }

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
	for _, c := range commands {
		root.AddCommand(c(g))
	}
	withExamples(root)
	return root
}
