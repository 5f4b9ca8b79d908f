package cli

import (
	"bytes"
	"io"
	"os"
	"strings"

	"github.com/fatih/color"
	"github.com/spf13/cobra"

	"github.com/kinetic-run/kinetic/engine"
	"github.com/kinetic-run/kinetic/job"
)

// Colour goes only to a person's terminal (https://no-color.org): never into a file or
// a pipe, never with --json, and not when NO_COLOR is set (to anything but ""), when
// TERM=dumb or with --no-color. Colour never changes the text: the same words print
// with and without it, so what a test or a script matches is the same either way.

// colourOff reports whether the environment or the command line turned colour off for
// every stream: --no-color, NO_COLOR or TERM=dumb.
func colourOff(c *cobra.Command) bool {
	if off, err := c.Root().PersistentFlags().GetBool("no-color"); err == nil && off {
		return true
	}
	return os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb"
}

// colourOn reports whether text c writes to w may carry colour: w is a terminal and
// nothing turned colour off.
func colourOn(c *cobra.Command, w io.Writer) bool {
	return !colourOff(c) && isTerminal(w)
}

// painter colours text when on, and returns it as it is when not.
type painter bool

// paint gives s the colour attributes a, when p is on.
func (p painter) paint(s string, a ...color.Attribute) string {
	if !p || s == "" {
		return s
	}
	c := color.New(a...)
	c.EnableColor() // the decision is ours (colourOn), not fatih/color's guess about stdout
	return c.Sprint(s)
}

// statusColours is the colour of each status a person reads, by the status's first word
// (a batch row reads "FAILED 2 of 8, 6 ok"); a cancelled job (FAILED, marked
// "(cancelled)") reads yellow, apart from failures.
var statusColours = map[string][]color.Attribute{
	"PENDING":   {color.FgBlue},
	"RUNNING":   {color.FgCyan},
	"SUCCEEDED": {color.FgGreen},
	"FAILED":    {color.FgRed},
	"NOT_FOUND": {color.Faint},
	"ERROR":     {color.FgRed, color.Bold},
	"cancelled": {color.FgYellow},
}

// status colours a status as a table or a status line shows it.
func (p painter) status(s string) string {
	if strings.Contains(s, "(cancelled)") {
		return p.paint(s, statusColours["cancelled"]...)
	}
	word, _, _ := strings.Cut(s, " ")
	word = strings.TrimSuffix(word, ":")
	return p.paint(s, statusColours[word]...)
}

// state colours a job's state as `jobs status` shows it: a cancelled job (FAILED with
// the reason a cancel leaves) yellow, as the tables' "(cancelled)".
func (p painter) state(s job.State, reason string) string {
	if cancelled(engine.Listed{State: s, Reason: reason}) {
		return p.paint(string(s), statusColours["cancelled"]...)
	}
	return p.status(string(s))
}

// paintColumn colours the cells of one column of a table tabwriter made (header first,
// one line per row, cells in rows' order): cells[i] is row i's cell, which starts where
// the header's name does. The columns before it must be ASCII (IDs), so that a byte
// offset is a column on the screen. Colouring after the table is made keeps tabwriter,
// which counts escape codes as width, from misaligning the columns.
func paintColumn(table []byte, name string, cells []string, paint func(string) string) []byte {
	lines := bytes.SplitAfter(table, []byte("\n"))
	if len(lines) == 0 {
		return table
	}
	at := bytes.Index(lines[0], []byte(name))
	if at < 0 {
		return table
	}
	for i, cell := range cells {
		if i+1 >= len(lines) {
			break
		}
		l := lines[i+1]
		if len(l) < at+len(cell) || string(l[at:at+len(cell)]) != cell {
			continue
		}
		lines[i+1] = append([]byte(string(l[:at])+paint(cell)), l[at+len(cell):]...)
	}
	return bytes.Join(lines, nil)
}

// stderr is what a command writes for a person on stderr, after the root's flags are
// read: with -q it drops the notices ("kinetic: ..." lines other than warnings and
// errors: what was submitted, removed or cleaned up), and on a terminal with colour on
// it colours the "warning:" of a warning yellow. Other lines (a job's logs streamed by
// `kinetic run`) pass as they are. It looks at each write's start, where a command's
// fmt.Fprintf puts a whole line.
type stderr struct {
	w      io.Writer
	quiet  bool
	colour painter
}

const warnPrefix = "kinetic: warning:"

func (s *stderr) Write(b []byte) (int, error) {
	line := string(b)
	switch {
	case strings.HasPrefix(line, warnPrefix):
		if s.colour {
			_, err := io.WriteString(s.w, "kinetic: "+s.colour.paint("warning:", color.FgYellow)+line[len(warnPrefix):])
			return len(b), err
		}
	case s.quiet && strings.HasPrefix(line, "kinetic: ") && !strings.HasPrefix(line, "kinetic: error"):
		return len(b), nil
	}
	return s.w.Write(b)
}

// withStderr puts the stderr filter in front of c's stderr once the flags are read.
func withStderr(c *cobra.Command, g *Globals) {
	w := c.ErrOrStderr()
	if _, done := w.(*stderr); done {
		return
	}
	c.Root().SetErr(&stderr{w: w, quiet: g.Quiet, colour: painter(colourOn(c, w))})
}

// rawStderr is c's stderr without the filter, for a program c starts: exec gives a
// program an *os.File as it is (a terminal stays one), anything else through a pipe.
func rawStderr(c *cobra.Command) io.Writer {
	if s, ok := c.ErrOrStderr().(*stderr); ok {
		return s.w
	}
	return c.ErrOrStderr()
}

// WriteError writes err's message as the binary's last line on w (stderr): "kinetic: "
// and the message, its "kinetic:" red on a terminal with colour on. root is the command
// tree that ran (NewRoot), whose --no-color counts.
func WriteError(root *cobra.Command, w io.Writer, msg string) {
	p := painter(!colourOff(root) && isTerminal(w))
	io.WriteString(w, p.paint("kinetic:", color.FgRed, color.Bold)+" "+msg+"\n")
}
