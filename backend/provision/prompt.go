package provision

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/kinetic-run/kinetic/errs"
)

// ErrNoAnswer is a prompt that got end of input instead of an answer.
var ErrNoAnswer = errs.New(errs.FailedPrecondition, "no answer (end of input): nothing was changed")

// Prompter asks questions on a terminal: plain lines, an answer per line, so it works
// over any terminal (and in tmux) with no raw mode.
type Prompter struct {
	in  *bufio.Reader
	out io.Writer
}

func NewPrompter(in io.Reader, out io.Writer) *Prompter {
	return &Prompter{in: bufio.NewReader(in), out: out}
}

func (p *Prompter) line() (string, error) {
	s, err := p.in.ReadString('\n')
	if err != nil && (s == "" || !errors.Is(err, io.EOF)) {
		return "", ErrNoAnswer
	}
	return strings.TrimSpace(s), nil
}

// Confirm asks a yes/no question; the default is no.
func (p *Prompter) Confirm(q string) (bool, error) {
	fmt.Fprintf(p.out, "%s [y/N] ", q)
	a, err := p.line()
	if err != nil {
		return false, err
	}
	a = strings.ToLower(a)
	return a == "y" || a == "yes", nil
}

// Ask asks for a value, def when the answer is empty; with no def it asks until answered.
func (p *Prompter) Ask(q, def string) (string, error) {
	for {
		a, err := p.AskOptional(q, def)
		if err != nil || a != "" {
			return a, err
		}
		fmt.Fprintln(p.out, "  (an answer is needed)")
	}
}

// Choose lists options numbered from 1 and returns the index picked (def when empty).
func (p *Prompter) Choose(q string, options []string, def int) (int, error) {
	fmt.Fprintln(p.out, q)
	for i, o := range options {
		fmt.Fprintf(p.out, "  %d) %s\n", i+1, o)
	}
	for {
		fmt.Fprintf(p.out, "choice [%d]: ", def+1)
		a, err := p.line()
		if err != nil {
			return 0, err
		}
		if a == "" {
			return def, nil
		}
		n, err := strconv.Atoi(a)
		if err == nil && n >= 1 && n <= len(options) {
			return n - 1, nil
		}
		fmt.Fprintf(p.out, "  (a number from 1 to %d)\n", len(options))
	}
}

// AskOptional asks for a value that may stay empty: def (or "") when the answer is.
func (p *Prompter) AskOptional(q, def string) (string, error) {
	if def != "" {
		fmt.Fprintf(p.out, "%s [%s]: ", q, def)
	} else {
		fmt.Fprintf(p.out, "%s: ", q)
	}
	a, err := p.line()
	if err != nil {
		return "", err
	}
	if a == "" {
		return def, nil
	}
	return a, nil
}
