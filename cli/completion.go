package cli

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kinetic-run/kinetic/accel"
	"github.com/kinetic-run/kinetic/batch"
	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/engine"
)

// withCompletion gives the shells (kinetic completion bash|zsh|fish|powershell) the
// values a command takes: job and batch IDs from the store (newest first, never creating
// it), accelerator names from the catalog, profile names from the profiles file.
func withCompletion(root *cobra.Command, g *Globals) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		req, _ := placeholders(c.Use)
		if len(req) > 0 && c.ValidArgsFunction == nil {
			switch {
			case req[0] == "JOB_ID":
				c.ValidArgsFunction = firstArg(func(cmd *cobra.Command) []string { return jobIDs(cmd, g) })
			case req[0] == "GROUP_ID":
				c.ValidArgsFunction = firstArg(func(cmd *cobra.Command) []string { return groupIDs(cmd, g) })
			case req[0] == "NAME" && strings.HasPrefix(c.CommandPath(), "kinetic profile "):
				c.ValidArgsFunction = firstArg(func(*cobra.Command) []string { return profileNames() })
			}
		}
		if c.CommandPath() == "kinetic accelerators" {
			c.ValidArgsFunction = firstArg(func(*cobra.Command) []string { return acceleratorNames() })
		}
		if f := c.Flags().Lookup("accelerator"); f != nil {
			c.RegisterFlagCompletionFunc("accelerator", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
				return acceleratorNames(), cobra.ShellCompDirectiveNoFileComp
			})
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
	root.RegisterFlagCompletionFunc("profile", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return profileNames(), cobra.ShellCompDirectiveNoFileComp
	})
}

// firstArg completes the first positional argument with list, and nothing after it.
func firstArg(list func(*cobra.Command) []string) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []string
		for _, s := range list(cmd) {
			if strings.HasPrefix(s, toComplete) {
				out = append(out, s)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// completionEngine opens the configured store to look only (never creating it), with a
// short deadline: a completion must not hang a shell.
func completionEngine(cmd *cobra.Command, g *Globals) (*engine.Engine, context.Context, context.CancelFunc, error) {
	args := map[config.Key]string{}
	if f := cmd.Flags().Lookup("store"); f != nil && f.Value.String() != "" {
		args[config.Store] = f.Value.String()
	}
	e, err := engine.New(config.Options{Args: args, Profile: g.Profile}, engine.WithUnwritten(batch.Unwritten{}))
	if err != nil {
		return nil, nil, nil, err
	}
	e.LookOnly, e.Warn = true, func(string) {}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	return e, ctx, cancel, nil
}

func jobIDs(cmd *cobra.Command, g *Globals) []string {
	e, ctx, cancel, err := completionEngine(cmd, g)
	if err != nil {
		return nil
	}
	defer cancel()
	defer e.Close()
	listed, err := e.List(ctx, "")
	if err != nil {
		return nil
	}
	out := make([]string, 0, len(listed))
	for i := len(listed) - 1; i >= 0; i-- {
		out = append(out, listed[i].Handle.JobID)
	}
	return newestFirst(out)
}

func groupIDs(cmd *cobra.Command, g *Globals) []string {
	e, ctx, cancel, err := completionEngine(cmd, g)
	if err != nil {
		return nil
	}
	defer cancel()
	defer e.Close()
	ms, err := batch.List(ctx, e, "")
	if err != nil {
		return nil
	}
	out := make([]string, 0, len(ms))
	for _, m := range ms {
		out = append(out, m.GroupID)
	}
	return newestFirst(out)
}

// newestFirst sorts IDs, which sort by creation time, newest first.
func newestFirst(ids []string) []string {
	for i := 1; i < len(ids); i++ {
		for j := i; j > 0 && ids[j] > ids[j-1]; j-- {
			ids[j], ids[j-1] = ids[j-1], ids[j]
		}
	}
	return ids
}

func profileNames() []string {
	f, err := config.LoadProfiles(config.ProfilesPath(nil))
	if err != nil {
		return nil
	}
	return f.Names()
}

func acceleratorNames() []string {
	var out []string
	for _, s := range accel.Catalog() {
		out = append(out, s.Name)
	}
	return out
}
