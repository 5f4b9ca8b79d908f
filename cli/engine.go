package cli

import (
	"encoding/json"
	"io"

	"github.com/spf13/cobra"

	"github.com/kinetic-run/kinetic/batch"
	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/engine"
)

// newEngine builds the engine for a command, with its explicit config flags on top.
func newEngine(cmd *cobra.Command, g *Globals, args map[config.Key]string) (*engine.Engine, error) {
	e, err := engine.New(config.Options{Args: args, Profile: g.Profile}, engine.WithUnwritten(batch.Unwritten{}))
	if err != nil {
		return nil, err
	}
	e.Warn = func(s string) { cmd.PrintErrln("kinetic: warning:", s) }
	e.Notice = cmd.ErrOrStderr()
	if g.Quiet { // -q: no progress bars and no notices (the engine's own check)
		e.Quiet, e.Bars, e.Notice = true, false, io.Discard
	}
	e.LookOnly = lookOnly[cmd.CommandPath()]
	return e, nil
}

// lookOnly are the commands that only look at a store: they never create one (a file://
// store that does not exist holds no jobs, and says so).
var lookOnly = map[string]bool{
	"kinetic jobs list": true, "kinetic jobs status": true, "kinetic jobs logs": true, "kinetic jobs result": true,
	"kinetic batch list": true, "kinetic batch status": true, "kinetic batch results": true,
	"kinetic dashboard": true,
	// A job or batch that is not in a store that does not exist cannot be cancelled,
	// cleaned up or debugged either: these never create the store to say so.
	"kinetic jobs debug": true, "kinetic jobs cancel": true, "kinetic jobs cleanup": true,
	"kinetic batch cancel": true, "kinetic batch cleanup": true,
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
