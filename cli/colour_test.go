package cli

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestPaintColumn: the status cells of a table are coloured after tabwriter aligned it,
// so every column still starts where its header does once the escapes are taken out.
func TestPaintColumn(t *testing.T) {
	table := "ID      STATUS                  FUNCTION\n" +
		"job-1   SUCCEEDED               main\n" +
		"job-22  FAILED (cancelled)      f\n" +
		"grp-3   RUNNING 2/8 done        g ×8\n"
	cells := []string{"SUCCEEDED", "FAILED (cancelled)", "RUNNING 2/8 done"}
	got := string(paintColumn([]byte(table), "STATUS", cells, painter(true).status))
	for _, want := range []string{"\x1b[32mSUCCEEDED\x1b[0m", "\x1b[33mFAILED (cancelled)\x1b[0m", "\x1b[36mRUNNING 2/8 done\x1b[0m"} {
		if !strings.Contains(got, want) {
			t.Errorf("painted table lacks %q:\n%q", want, got)
		}
	}
	if plain := stripEscapes(got); plain != table {
		t.Errorf("without its escapes the table changed:\n%s\nwant\n%s", plain, table)
	}
	if off := string(paintColumn([]byte(table), "STATUS", cells, painter(false).status)); off != table {
		t.Errorf("colour off changed the table:\n%q", off)
	}
}

func TestStatusColours(t *testing.T) {
	p := painter(true)
	for s, code := range map[string]string{
		"SUCCEEDED": "32", "FAILED": "31", "RUNNING": "36", "PENDING": "34",
		"FAILED: exit code 3": "31", "FAILED 2 of 8, 6 ok": "31", "FAILED (cancelled)": "33",
	} {
		if got, want := p.status(s), "\x1b["+code+"m"+s+"\x1b[0m"; got != want {
			t.Errorf("status(%q) = %q, want %q", s, got, want)
		}
	}
	if got := painter(false).status("FAILED"); got != "FAILED" {
		t.Errorf("colour off: %q", got)
	}
}

func stripEscapes(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == 0x1b {
			for i < len(s) && s[i] != 'm' {
				i++
			}
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// TestQuietAndWarnings: with -q, a command's notices on stderr ("kinetic: ..." lines)
// are dropped and its warnings, its data on stdout and other stderr lines (a job's
// logs) kept; without -q all of it shows. Neither is coloured off a terminal.
func TestQuietAndWarnings(t *testing.T) {
	t.Setenv("KINETIC_HOME", t.TempDir())
	run := func(args ...string) (string, string) {
		root := NewRoot()
		root.AddCommand(&cobra.Command{Use: "say", RunE: func(c *cobra.Command, _ []string) error {
			fmt.Fprintln(c.OutOrStdout(), "the data")
			fmt.Fprintln(c.ErrOrStderr(), "kinetic: job x submitted")
			fmt.Fprintln(c.ErrOrStderr(), "a line of the job's logs")
			fmt.Fprintln(c.ErrOrStderr(), "kinetic: warning: mind this")
			return nil
		}})
		var out, errb bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&errb)
		root.SetArgs(args)
		if err := root.Execute(); err != nil {
			t.Fatal(err)
		}
		return out.String(), errb.String()
	}
	all := "kinetic: job x submitted\na line of the job's logs\nkinetic: warning: mind this\n"
	for _, c := range []struct {
		args    []string
		wantErr string
	}{
		{[]string{"say"}, all},
		{[]string{"-q", "say"}, "a line of the job's logs\nkinetic: warning: mind this\n"},
		{[]string{"say", "--quiet"}, "a line of the job's logs\nkinetic: warning: mind this\n"},
	} {
		out, errOut := run(c.args...)
		if out != "the data\n" || errOut != c.wantErr {
			t.Errorf("kinetic %s: stdout %q, stderr %q; want %q, %q", strings.Join(c.args, " "), out, errOut, "the data\n", c.wantErr)
		}
	}
}

// TestWarningColour: on a terminal (here: a writer that says it is one) a warning's
// "warning:" is yellow, and NO_COLOR, TERM=dumb and --no-color each turn it off.
func TestWarningColour(t *testing.T) {
	var b bytes.Buffer
	s := &stderr{w: &b, colour: painter(true)}
	fmt.Fprintln(s, "kinetic: warning: mind this")
	fmt.Fprintln(s, "kinetic: job x submitted")
	if want := "kinetic: \x1b[33mwarning:\x1b[0m mind this\nkinetic: job x submitted\n"; b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
	for _, c := range []struct {
		env  [2]string
		args []string
	}{
		{[2]string{"NO_COLOR", "1"}, nil},
		{[2]string{"TERM", "dumb"}, nil},
		{[2]string{"KINETIC_UNUSED", ""}, []string{"--no-color"}},
	} {
		t.Run(c.env[0]+strings.Join(c.args, ""), func(t *testing.T) {
			t.Setenv("NO_COLOR", "")
			t.Setenv("TERM", "xterm-256color")
			t.Setenv(c.env[0], c.env[1])
			root := NewRoot()
			var off bool
			root.AddCommand(&cobra.Command{Use: "probe", RunE: func(c *cobra.Command, _ []string) error {
				off = colourOff(c)
				return nil
			}})
			root.SetArgs(append(c.args, "probe"))
			if err := root.Execute(); err != nil {
				t.Fatal(err)
			}
			if !off {
				t.Errorf("colour stays on with %s=%q %v", c.env[0], c.env[1], c.args)
			}
		})
	}
}

// TestStderrStaysATerminal: the filter -q and colour put in front of a command's stderr
// does not hide that stderr is a terminal (progress bars and prompts look).
func TestStderrStaysATerminal(t *testing.T) {
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	defer ptmx.Close()
	if !isTerminal(ptmx) {
		t.Skip("/dev/ptmx does not read as a terminal here")
	}
	if !isTerminal(&stderr{w: ptmx}) {
		t.Error("the stderr filter over a terminal does not read as one")
	}
	if isTerminal(&stderr{w: ptmx, quiet: true}) {
		t.Error("with -q the stderr filter reads as a terminal (progress bars would be drawn)")
	}
	if isTerminal(&stderr{w: &bytes.Buffer{}}) {
		t.Error("the stderr filter over a buffer reads as a terminal")
	}
}
