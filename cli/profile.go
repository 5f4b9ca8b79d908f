package cli

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kinetic-run/kinetic/config"
)

func newProfileCmd(g *Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "profile",
		Short: "Manage named configuration profiles",
		Long: "Manage named configuration profiles, kept in ~/.kinetic/profiles.json\n" +
			"(KINETIC_PROFILES_FILE overrides the path). The active profile is --profile,\n" +
			"else KINETIC_PROFILE, else the one chosen with \"kinetic profile use\".",
	}
	cmd.AddCommand(newProfileCreateCmd(), newProfileListCmd(g), newProfileUseCmd(),
		newProfileShowCmd(g), newProfileRemoveCmd(), newProfileUnsetCmd(), newProfileSetCmd(g), newProfileUnsetKeyCmd(g))
	return cmd
}

func newProfileCreateCmd() *cobra.Command {
	var use, force bool
	cmd := &cobra.Command{
		Use:   "create [NAME] [--project P] [--zone Z] [--cluster C] [...]",
		Short: "Create a profile (it becomes active if none is, or with --use); on a terminal, what is not given is asked",
		Args:  cobra.MaximumNArgs(1),
	}
	vals := keyFlags(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		p := config.Profile{}
		name, err := profileName(cmd, args)
		if err != nil {
			return err
		}
		given := keyFlagArgs(vals)
		for k, v := range given {
			p[string(k)] = v
		}
		if len(given) == 0 && isTerminal(cmd.InOrStdin()) {
			// Nothing given on a terminal: ask, with the defaults shown.
			asked, err := askProfile(newPrompter(cmd.InOrStdin(), cmd.ErrOrStderr()))
			if err != nil {
				return err
			}
			p = asked
		}
		var activated bool
		err = config.Update(config.ProfilesPath(nil), func(f *config.File) error {
			if err := f.Create(name, p, force); err != nil {
				return err
			}
			// Like gcloud configurations: a first profile is what the user means to use.
			if use || f.Current == "" {
				f.Current, activated = name, true
			}
			return nil
		})
		if err != nil {
			return err
		}
		msg := fmt.Sprintf("created profile %s", name)
		if activated {
			msg += " (now active)"
		}
		fmt.Fprintln(cmd.ErrOrStderr(), msg)
		return nil
	}
	cmd.Flags().BoolVar(&use, "use", false, "make the new profile the active one")
	cmd.Flags().BoolVar(&force, "force", false, "replace a profile of the same name")
	return cmd
}

func newProfileListCmd(g *Globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List profiles; the active one is marked with *",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			path := config.ProfilesPath(nil)
			f, err := config.LoadProfiles(path)
			if err != nil {
				return err
			}
			active, origin := config.ActiveName(f, g.Profile, nil, path)
			if _, ok := f.Profiles[active]; active != "" && !ok {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: active profile %q (named by %s) does not exist\n", active, origin)
			}
			type item struct {
				Name     string         `json:"name"`
				Active   bool           `json:"active"`
				Settings config.Profile `json:"settings"`
			}
			items := []item{}
			rows := [][]string{}
			for _, name := range f.Names() {
				p := f.Profiles[name]
				items = append(items, item{name, name == active, p})
				mark := ""
				if name == active {
					mark = "*"
				}
				row := []string{mark, name}
				for _, k := range profileColumns {
					row = append(row, profileCell(p.Get(k)))
				}
				rows = append(rows, row)
			}
			if asJSON {
				return configJSON(cmd.OutOrStdout(), items)
			}
			if len(items) == 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "no profiles in %s; create one with \"kinetic profile create NAME\"\n", path)
				return nil
			}
			header := []string{"", "NAME"}
			for _, k := range profileColumns {
				header = append(header, keyHeader(k))
			}
			return configTable(cmd.OutOrStdout(), header, rows)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// profileColumns are the keys "profile ls" shows; "profile show" has them all.
var profileColumns = []config.Key{config.Project, config.Zone, config.Cluster, config.Namespace, config.Backend}

func newProfileUseCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "use NAME",
		Short: "Make a profile the active one",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if err := config.Update(config.ProfilesPath(nil), func(f *config.File) error { return f.Use(name) }); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "active profile: %s\n", name)
			if env := os.Getenv("KINETIC_PROFILE"); env != "" && env != name {
				fmt.Fprintf(cmd.ErrOrStderr(), "note: KINETIC_PROFILE=%s is set and takes precedence in this shell\n", env)
			}
			return nil
		},
	}
}

func newProfileShowCmd(g *Globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show [NAME]",
		Short: "Show the settings a profile holds (default: the active one)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := config.ProfilesPath(nil)
			f, err := config.LoadProfiles(path)
			if err != nil {
				return err
			}
			active, _ := config.ActiveName(f, g.Profile, nil, path)
			name := active
			if len(args) == 1 {
				name = args[0]
			}
			if name == "" {
				return fmt.Errorf("no active profile: name one, or create one with \"kinetic profile create NAME\"")
			}
			p, err := f.Get(name)
			if err != nil {
				return err
			}
			if asJSON {
				return configJSON(cmd.OutOrStdout(), struct {
					Name     string         `json:"name"`
					Active   bool           `json:"active"`
					Settings config.Profile `json:"settings"`
				}{name, name == active, p})
			}
			return configTable(cmd.OutOrStdout(), []string{"KEY", "VALUE"}, configRows(p.Settings(), false))
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newProfileRemoveCmd() *cobra.Command {
	var yes bool
	cmd := &cobra.Command{
		Use:     "rm NAME [--yes]",
		Aliases: []string{"remove", "delete"},
		Short:   "Delete a profile (asks first on a terminal; --yes does not ask)",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !yes {
				if !isTerminal(cmd.InOrStdin()) {
					return fmt.Errorf("profile rm %s: give --yes to delete it without asking (there is no terminal to ask on)", args[0])
				}
				ok, err := newPrompter(cmd.InOrStdin(), cmd.ErrOrStderr()).Confirm(fmt.Sprintf("delete profile %s?", args[0]))
				if err != nil {
					return err
				}
				if !ok {
					fmt.Fprintf(cmd.ErrOrStderr(), "kept profile %s\n", args[0])
					return nil
				}
			}
			var wasCurrent bool
			err := config.Update(config.ProfilesPath(nil), func(f *config.File) (err error) {
				wasCurrent, err = f.Remove(args[0])
				return err
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "removed profile %s\n", args[0])
			if wasCurrent {
				fmt.Fprintln(cmd.ErrOrStderr(), "it was the active profile; no profile is active now")
			}
			return nil
		},
	}
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "delete without asking")
	return cmd
}

func newProfileUnsetCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "unset",
		Short: "Clear the active profile (defaults and KINETIC_* variables apply)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var was string
			err := config.Update(config.ProfilesPath(nil), func(f *config.File) error {
				was, f.Current = f.Current, ""
				return nil
			})
			if err != nil {
				return err
			}
			if was == "" {
				fmt.Fprintln(cmd.ErrOrStderr(), "no profile was active")
			} else {
				fmt.Fprintf(cmd.ErrOrStderr(), "profile %s is no longer active\n", was)
			}
			return nil
		},
	}
}

func profileCell(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func keyHeader(k config.Key) string { return strings.ToUpper(keyFlagName(k)) }

// askProfile asks for a new profile's main settings; an empty answer keeps the default
// (and leaves the key out, so the default keeps applying).
func askProfile(pr *prompter) (config.Profile, error) {
	p := config.Profile{}
	backends := config.Backends()
	def := 0
	for i, b := range backends {
		if b == config.DefaultBackend() {
			def = i
		}
	}
	i, err := pr.Choose("backend: where jobs run", backends, def)
	if err != nil {
		return nil, err
	}
	if backends[i] != config.DefaultBackend() {
		p[string(config.Backend)] = backends[i]
	}
	questions := []struct {
		key config.Key
		q   string
	}{{config.Store, "store URL (file:// path, gs://bucket, s3://bucket)"}}
	if backends[i] != config.DefaultBackend() {
		questions = append([]struct {
			key config.Key
			q   string
		}{
			{config.Project, "Google Cloud project (empty: none)"},
			{config.Zone, "zone"},
			{config.Cluster, "cluster"},
			{config.Namespace, "namespace"},
		}, questions...)
	}
	for _, q := range questions {
		defVal := config.Default(q.key)
		a, err := pr.AskOptional(q.q, defVal)
		if err != nil {
			return nil, err
		}
		if a != "" && a != defVal {
			p[string(q.key)] = a
		}
	}
	return p, nil
}

// profileName is create's NAME: the argument, else asked on a terminal (as the
// reference's `profile create` does), else an error saying what to give.
func profileName(cmd *cobra.Command, args []string) (string, error) {
	if len(args) == 1 {
		return args[0], nil
	}
	if !isTerminal(cmd.InOrStdin()) {
		return "", errors.New("give the profile's name: kinetic profile create NAME [--project P] [--zone Z] [--cluster C]")
	}
	name, err := newPrompter(cmd.InOrStdin(), cmd.ErrOrStderr()).Ask("Profile name", "")
	if err != nil {
		return "", err
	}
	if name == "" {
		return "", errors.New("no profile name given: kinetic profile create NAME")
	}
	return name, nil
}
