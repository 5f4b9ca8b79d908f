package cli

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Every command's help has an example; each example line is a real command whose flags
// exist; no flag's help has a backquote (cobra takes `x` as the value's placeholder and
// garbles the help); an unknown subcommand of a group is an error.
func TestHelpExamplesAndFlags(t *testing.T) {
	root := NewRoot()
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden {
			return
		}
		if strings.TrimSpace(c.Example) == "" {
			t.Errorf("%s has no example (cli/examples.go)", c.CommandPath())
		}
		for _, line := range strings.Split(c.Example, "\n") {
			line = strings.TrimSpace(line)
			if i := strings.Index(line, "  #"); i >= 0 {
				line = strings.TrimSpace(line[:i])
			}
			if !strings.HasPrefix(line, "kinetic ") {
				continue
			}
			args := strings.Fields(line)[1:]
			if dash := indexOf(args, "--"); dash >= 0 {
				args = args[:dash]
			}
			fresh := NewRoot()
			fresh.InitDefaultVersionFlag()
			cmd, rest, err := fresh.Find(args)
			if err != nil {
				t.Errorf("%s: example %q: %v", c.CommandPath(), line, err)
				continue
			}
			if err := cmd.ParseFlags(rest); err != nil {
				t.Errorf("%s: example %q: %v", c.CommandPath(), line, err)
			}
		}
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if strings.Contains(f.Usage, "`") {
				t.Errorf("%s --%s: a backquote in its help garbles it: %q", c.CommandPath(), f.Name, f.Usage)
			}
		})
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)

	for _, args := range [][]string{{"jobs", "nosuch"}, {"batch", "nosuch"}, {"profile", "nosuch"}, {"nosuch"}} {
		r := NewRoot()
		r.SetArgs(args)
		r.SetOut(new(strings.Builder))
		r.SetErr(new(strings.Builder))
		if err := r.Execute(); err == nil || !strings.Contains(err.Error(), `unknown command "nosuch"`) {
			t.Errorf("kinetic %s: %v, want an unknown-command error", strings.Join(args, " "), err)
		}
	}
}

func indexOf(xs []string, x string) int {
	for i, s := range xs {
		if s == x {
			return i
		}
	}
	return -1
}
