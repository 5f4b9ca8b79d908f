package cli

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kinetic-run/kinetic/backend/provision"
	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/engine"
	"github.com/kinetic-run/kinetic/errs"
	"github.com/kinetic-run/kinetic/internal/textdist"
	"github.com/kinetic-run/kinetic/job"
)

// ExitUsage is the exit code of a command called the wrong way (a missing or extra
// argument, an unknown command or flag, a bad flag value), as getopt-style tools use it;
// 1 stays for a job that failed or a command that could not do its work.
const ExitUsage = provision.ExitUsage

// usageError is a mistake in how a command was called: exit code ExitUsage.
func usageError(err error) error {
	var ee *ExitError
	if errors.As(err, &ee) {
		return err
	}
	return &ExitError{Code: ExitUsage, Err: err}
}

func usageErrorf(format string, a ...any) error { return usageError(fmt.Errorf(format, a...)) }

// IsUsage reports whether err is a usage error (exit code 2).
func IsUsage(err error) bool {
	var ee *ExitError
	return errors.As(err, &ee) && ee.Code == ExitUsage
}

// argHints say where a command's positional argument comes from, by command path and
// placeholder: the user's next step when it is missing.
var argHints = map[string]string{
	"JOB_ID":                  "list them with `kinetic jobs list`",
	"GROUP_ID":                "list them with `kinetic batch list`",
	"kinetic profile/NAME":    "list them with `kinetic profile ls`",
	"kinetic pool/NAME":       "list them with `kinetic pool list`",
	"kinetic profile set/KEY": "`kinetic config show` lists the keys",
}

func argHint(c *cobra.Command, placeholder string) string {
	if h, ok := argHints[placeholder]; ok {
		return h
	}
	for p := c; p != nil; p = p.Parent() {
		if h, ok := argHints[p.CommandPath()+"/"+placeholder]; ok {
			return h
		}
	}
	return ""
}

// placeholders are the positional arguments a command's Use line names: required ones
// (JOB_ID) and optional ones ([NAME]), without flags.
func placeholders(use string) (required, optional []string) {
	fields := strings.Fields(use)
	for _, f := range fields[min(1, len(fields)):] {
		if strings.HasPrefix(f, "-") || strings.HasPrefix(f, "[-") || f == "|" {
			continue
		}
		opt := strings.HasPrefix(f, "[")
		name := strings.Trim(f, "[]")
		name = strings.TrimSuffix(name, "...")
		if name == "" || strings.HasPrefix(name, "-") || strings.ToUpper(name) != name || strings.ContainsAny(name, "|") {
			continue
		}
		if opt {
			optional = append(optional, name)
		} else {
			required = append(required, name)
		}
	}
	return required, optional
}

// usageLine is the command as typed: its path and its positional arguments.
func usageLine(c *cobra.Command) string {
	req, opt := placeholders(c.Use)
	parts := []string{c.CommandPath()}
	parts = append(parts, req...)
	for _, o := range opt {
		parts = append(parts, "["+o+"]")
	}
	return strings.Join(parts, " ")
}

// quoteArgs quotes arguments for a message, each cut to a readable length.
func quoteArgs(args []string) string {
	q := make([]string, 0, len(args))
	for i, a := range args {
		if i == 3 {
			q = append(q, fmt.Sprintf("and %d more", len(args)-3))
			break
		}
		q = append(q, errs.Quote(a))
	}
	return strings.Join(q, ", ")
}

// argsError rewrites cobra's "accepts 1 arg(s), received 0" in the user's words: what is
// missing or extra, the command as it is typed, and where the value comes from.
func argsError(c *cobra.Command, args []string, err error) error {
	req, opt := placeholders(c.Use)
	switch {
	case len(args) < len(req):
		missing := req[len(args)]
		msg := fmt.Sprintf("missing %s: %s", missing, usageLine(c))
		if h := argHint(c, missing); h != "" {
			msg += " (" + h + ")"
		}
		return usageErrorf("%s", msg)
	case len(req)+len(opt) == 0:
		return usageErrorf("%s takes no arguments, got %s (see %s --help)", c.CommandPath(), quoteArgs(args), c.CommandPath())
	case len(args) > len(req)+len(opt):
		extra := args[len(req)+len(opt):]
		return usageErrorf("too many arguments: %s (unexpected: %s; see %s --help)", usageLine(c), quoteArgs(extra), c.CommandPath())
	}
	return usageErrorf("%s: %v (see %s --help)", usageLine(c), err, c.CommandPath())
}

// checkIDs refuses a JOB_ID or GROUP_ID that cannot name a job, before any store is
// opened or created, and without echoing a huge argument back.
func checkIDs(c *cobra.Command, args []string) error {
	req, opt := placeholders(c.Use)
	for i, p := range append(req, opt...) {
		if i >= len(args) || (p != "JOB_ID" && p != "GROUP_ID") || job.ValidName(args[i]) {
			continue
		}
		what, like := "job", "job IDs look like job-01k8612xmwtfd0n4dk0vb3m"
		if p == "GROUP_ID" {
			what, like = "group", "batch IDs look like grp-01k8612xmwtfd0n4dk0vb3m"
		}
		return usageErrorf("%s %s is not a %s ID (%s: lowercase letters, digits and dashes, at most 63; %s)", p, errs.Quote(args[i]), what, like, argHint(c, p))
	}
	return nil
}

// withManners gives every command of the tree the same manners: argument errors in the
// user's words with exit code 2, `ls` for `list`, an unknown subcommand refused with a
// suggestion, and the completion command built now so that it gets them too.
func withManners(root *cobra.Command) {
	root.InitDefaultCompletionCmd()
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Args != nil {
			orig := c.Args
			c.Args = func(cmd *cobra.Command, args []string) error {
				if err := orig(cmd, args); err != nil {
					return argsError(cmd, args, err)
				}
				return checkIDs(cmd, args)
			}
		}
		if c.Name() == "list" && !c.HasAlias("ls") {
			c.Aliases = append(c.Aliases, "ls")
		}
		if c.HasSubCommands() && !c.Runnable() {
			c.Args = cobra.ArbitraryArgs
			c.RunE = func(c *cobra.Command, args []string) error {
				if len(args) > 0 {
					return unknownCommand(c, args[0])
				}
				return c.Help()
			}
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
}

// unknownCommand refuses an unknown subcommand of c, with the closest ones.
func unknownCommand(c *cobra.Command, name string) error {
	var names []string
	for _, s := range c.Commands() {
		if s.IsAvailableCommand() {
			names = append(names, s.Name())
		}
	}
	msg := fmt.Sprintf("unknown command %s for %s", errs.Quote(name), c.CommandPath())
	if c.SuggestionsMinimumDistance <= 0 {
		c.SuggestionsMinimumDistance = 2
	}
	if s := c.SuggestionsFor(name); len(s) > 0 {
		msg += "; did you mean " + strings.Join(s, " or ") + "?"
	}
	return usageErrorf("%s (commands: %s; see %s --help)", msg, strings.Join(names, ", "), c.CommandPath())
}

// flagSuggestions are the flags of c closest to an unknown one (name without dashes).
func flagSuggestions(c *cobra.Command, name string) []string {
	type cand struct {
		name string
		d    int
	}
	var cs []cand
	seen := map[string]bool{}
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Hidden || seen[f.Name] {
			return
		}
		seen[f.Name] = true
		d := textdist.EditDistance(name, f.Name)
		if d <= max(1, min(3, len(name)/3)) || (len(name) >= 3 && strings.HasPrefix(f.Name, name)) {
			cs = append(cs, cand{f.Name, d})
		}
	})
	sort.Slice(cs, func(i, j int) bool { return cs[i].d < cs[j].d || cs[i].d == cs[j].d && cs[i].name < cs[j].name })
	var out []string
	for i, x := range cs {
		if i == 3 {
			break
		}
		out = append(out, "--"+x.name)
	}
	return out
}

// unknownFlagError rewrites pflag's "unknown flag: --jsn" with the closest flags.
func unknownFlagError(c *cobra.Command, err error) error {
	msg := err.Error()
	name, ok := strings.CutPrefix(msg, "unknown flag: --")
	if !ok {
		return err
	}
	out := fmt.Sprintf("%s has no flag --%s", c.CommandPath(), name)
	if s := flagSuggestions(c, name); len(s) > 0 {
		out += "; did you mean " + strings.Join(s, " or ") + "?"
	}
	return fmt.Errorf("%s (see %s --help)", out, c.CommandPath())
}

// rootJSON is --json given before the subcommand (`kinetic --json jobs list`): each
// command that prints data has its own --json, which cobra fills from wherever the flag
// stands; this one only catches the commands that have none, to say so.
func checkRootJSON(c *cobra.Command) error {
	if c.LocalNonPersistentFlags().Lookup("json") != nil {
		return nil
	}
	if f := c.Flags().Lookup("json"); f != nil && f.Changed {
		return usageErrorf("%s has no JSON output: leave out --json", c.CommandPath())
	}
	return nil
}

// backendCommands are the commands whose errors may come from the backend in use (they
// submit to it, or read the store it implies): such an error says why that backend was
// chosen, when the user did not name it on the command line.
var backendCommands = []string{"kinetic run", "kinetic jobs ", "kinetic batch ", "kinetic status", "kinetic doctor", "kinetic dashboard", "kinetic prune"}

func isBackendCommand(path string) bool {
	for _, p := range backendCommands {
		if path == p || strings.HasPrefix(path, p) {
			return true
		}
	}
	return false
}

// withBackendReason wraps the RunE of the backend commands: an error (not a usage error
// or a job's own failure) gets one more sentence saying which backend was in use and
// what chose it, with the way back to this machine (issue 46: "backend gke because
// KINETIC_PROJECT is set").
func withBackendReason(root *cobra.Command, g *Globals) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if run := c.RunE; run != nil {
			backendCmd := isBackendCommand(c.CommandPath())
			c.RunE = func(cmd *cobra.Command, args []string) error {
				err := run(cmd, args)
				if err == nil || IsUsage(err) || Interrupted(cmd.Context(), err) {
					return err
				}
				var cu *engine.CleanedUpError
				if errors.As(err, &cu) {
					err = &cliCleanedUp{cu}
				}
				if !backendCmd {
					return err
				}
				var ee *ExitError
				if errors.As(err, &ee) {
					return err // a job's failure, said already
				}
				if why := backendReason(cmd, g); why != "" {
					return &reasonError{err: err, why: why}
				}
				return err
			}
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
}

// cliCleanedUp is engine.CleanedUpError in the CLI's words: the flag that keeps a job
// is the CLI's (a read keeps it unless --cleanup), not the SDK's result(cleanup=False).
type cliCleanedUp struct{ e *engine.CleanedUpError }

func (c *cliCleanedUp) Error() string {
	t := c.e.Tombstone
	if c.e.What != "" {
		return fmt.Sprintf("the %s of job %s were removed by cleanup: it succeeded and its result was %s, then cleaned up (`kinetic jobs result` keeps a job unless given --cleanup)", c.e.What, t.JobID, t.CollectedBySummary())
	}
	return fmt.Sprintf("job %s %s: its logs and result were removed by cleanup (`kinetic jobs result` keeps a job unless given --cleanup)", t.JobID, t.Summary())
}
func (c *cliCleanedUp) Unwrap() error { return c.e }

// reasonError is an error with the reason for the backend after it.
type reasonError struct {
	err error
	why string
}

func (e *reasonError) Error() string { return e.err.Error() + "\n  (" + e.why + ")" }
func (e *reasonError) Unwrap() error { return e.err }

// backendReason says which backend the command used and what chose it, or "" when it is
// the local backend or the user named it on this command line.
func backendReason(cmd *cobra.Command, g *Globals) string {
	args := map[config.Key]string{}
	for _, k := range config.Keys() {
		if f := cmd.Flags().Lookup(keyFlagName(k)); f != nil && f.Changed {
			args[k] = f.Value.String()
		}
	}
	if _, ok := args[config.Backend]; ok {
		return ""
	}
	res, err := config.Resolve(config.Options{Args: args, Profile: g.Profile})
	if err != nil {
		return ""
	}
	return BackendReason(res)
}

// BackendReason says why res's backend is not the local one, and how to stay on this
// machine: "" for the local backend.
func BackendReason(res *config.Resolved) string {
	b, src := res.Get(config.Backend), res.Source(config.Backend)
	if b == "" || b == config.DefaultBackend() {
		return ""
	}
	stay := "; pass --backend local to run on this machine instead"
	switch {
	case strings.HasPrefix(src, "default: project set (env "):
		v := strings.TrimSuffix(strings.TrimPrefix(src, "default: project set (env "), ")")
		return fmt.Sprintf("backend %s because %s is set (%s=%s)%s, or unset %s", b, v, v, res.Get(config.Project), stay, v)
	case strings.HasPrefix(src, "default: project set (profile "):
		p := strings.TrimSuffix(strings.TrimPrefix(src, "default: project set (profile "), ")")
		return fmt.Sprintf("backend %s because the profile %s sets project %s%s, or `kinetic profile unset`", b, p, res.Get(config.Project), stay)
	case src == "default: project set (argument)":
		return fmt.Sprintf("backend %s because --project %s is given%s", b, res.Get(config.Project), stay)
	case strings.HasPrefix(src, "env "):
		v := strings.TrimPrefix(src, "env ")
		return fmt.Sprintf("backend %s from %s%s, or unset %s", b, v, stay, v)
	case strings.HasPrefix(src, "profile "):
		return fmt.Sprintf("backend %s from the %s%s, or `kinetic profile unset`", b, src, stay)
	}
	return ""
}
