package cli

import (
	"golang.org/x/term"
)

// isTerminal reports whether a command's input or output is a terminal: a person can
// answer prompts there, and progress bars, redraws and other escape codes go only there,
// never into files and pipes.
func isTerminal(f any) bool {
	if s, ok := f.(*stderr); ok { // the command's stderr behind -q and colour (colour.go)
		if s.quiet {
			return false // -q: no progress bars or redraws there
		}
		f = s.w
	}
	fd, ok := f.(interface{ Fd() uintptr })
	return ok && term.IsTerminal(int(fd.Fd()))
}
