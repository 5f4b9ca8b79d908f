package cli

import (
	"io"

	"github.com/kinetic-run/kinetic/backend/provision"
)

// prompter asks questions on a terminal (provision.Prompter, shared with the
// provisioners' init and up).
type prompter = provision.Prompter

func newPrompter(in io.Reader, out io.Writer) *prompter { return provision.NewPrompter(in, out) }
