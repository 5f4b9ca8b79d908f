package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// errNoAnswer is a prompt that got end of input instead of an answer.
var errNoAnswer = errors.New("no answer (end of input): nothing was changed")

// prompter asks questions on a terminal: plain lines, an answer per line, so it works
// over any terminal (and in tmux) with no raw mode.
type prompter struct {
	in  *bufio.Reader
	out io.Writer
}

func newPrompter(in io.Reader, out io.Writer) *prompter {
	return &prompter{in: bufio.NewReader(in), out: out}
}

func (p *prompter) line() (string, error) {
	s, err := p.in.ReadString('\n')
	if err != nil && (s == "" || !errors.Is(err, io.EOF)) {
		return "", errNoAnswer
	}
	return strings.TrimSpace(s), nil
}

// confirm asks a yes/no question; the default is no.
func (p *prompter) confirm(q string) (bool, error) {
	fmt.Fprintf(p.out, "%s [y/N] ", q)
	a, err := p.line()
	if err != nil {
		return false, err
	}
	a = strings.ToLower(a)
	return a == "y" || a == "yes", nil
}

// ask asks for a value, def when the answer is empty; with no def it asks until answered.
func (p *prompter) ask(q, def string) (string, error) {
	for {
		a, err := p.askOptional(q, def)
		if err != nil || a != "" {
			return a, err
		}
		fmt.Fprintln(p.out, "  (an answer is needed)")
	}
}

// choose lists options numbered from 1 and returns the index picked (def when empty).
func (p *prompter) choose(q string, options []string, def int) (int, error) {
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

// askOptional asks for a value that may stay empty: def (or "") when the answer is.
func (p *prompter) askOptional(q, def string) (string, error) {
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
