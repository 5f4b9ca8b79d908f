package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kinetic-run/kinetic/config"
)

// whereKeys are the settings a person changes most: where the job runs and where its
// records go. Help shows them under their own heading, above the other settings.
var whereKeys = []config.Key{config.Backend, config.Project, config.Zone, config.Cluster, config.Namespace, config.Store}

// testOnlyKeys are settings for tests and emulators: accepted everywhere, left out of help.
var testOnlyKeys = map[config.Key]bool{"gcp_endpoints": true, "accelerator_resources": true}

// infraKeys are settings of `up`, `down` and `pool`: a job does not read them, so `run`
// accepts them (a profile may hold them) without listing them in its help.
var infraKeys = []config.Key{"force_destroy", "lws_image", "reservation"}

// hideKeys leaves the flags of keys out of c's help (they are still accepted).
func hideKeys(c *cobra.Command, keys ...config.Key) {
	for _, k := range keys {
		if f := c.Flags().Lookup(keyFlagName(k)); f != nil {
			f.Hidden = true
		}
	}
}

// settingAnnotation marks the flag of a configuration key (keyFlags).
const settingAnnotation = "kinetic/setting"

// boolKey reports whether the key takes true or false (its flag then reads as a boolean:
// --warm alone is --warm=true).
func boolKey(k config.Key) bool {
	t, errT := config.Validate(k, "yes") // a boolean's normal form; an executable's is a path
	f, errF := config.Validate(k, "off")
	return errT == nil && errF == nil && t == "true" && f == "false"
}

// groupedUsage prints a command's usage with its flags in groups: the command's own
// first, then where the job runs, then every other setting under one heading that
// points to `kinetic config show` (test-only settings hidden), then the global flags.
func groupedUsage(c *cobra.Command) error {
	own, where, settings := pflag.NewFlagSet("own", pflag.ContinueOnError), pflag.NewFlagSet("where", pflag.ContinueOnError), pflag.NewFlagSet("settings", pflag.ContinueOnError)
	isWhere := map[string]bool{}
	for _, k := range whereKeys {
		isWhere[keyFlagName(k)] = true
	}
	c.LocalFlags().VisitAll(func(f *pflag.Flag) {
		switch {
		case f.Hidden:
		case len(f.Annotations[settingAnnotation]) == 0:
			own.AddFlag(f)
		case isWhere[f.Name]:
			where.AddFlag(f)
		default:
			settings.AddFlag(f)
		}
	})
	w := c.OutOrStderr()
	fmt.Fprintf(w, "Usage:\n  %s\n", c.UseLine())
	if c.HasExample() {
		fmt.Fprintf(w, "\nExamples:\n%s\n", c.Example)
	}
	for _, g := range []struct {
		title string
		fs    *pflag.FlagSet
	}{
		{"Flags", own},
		{"Where it runs (argument > KINETIC_* variable > profile > default)", where},
		{"Settings (also KINETIC_* variables or profile keys; `kinetic config show` lists their values)", settings},
		{"Global Flags", c.InheritedFlags()},
	} {
		if u := g.fs.FlagUsagesWrapped(100); strings.TrimSpace(u) != "" {
			fmt.Fprintf(w, "\n%s:\n%s", g.title, u)
		}
	}
	return nil
}
