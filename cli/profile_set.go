package cli

import (
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kinetic-run/kinetic/config"
)

// profileTarget is the profile set and unset-key change: --profile, else the active one.
func profileTarget(g *Globals, f *config.File) (string, error) {
	path := config.ProfilesPath(nil)
	name, _ := config.ActiveName(f, g.Profile, nil, path)
	if name == "" {
		return "", fmt.Errorf("no active profile to change: create one with `kinetic profile create NAME`, or name one with --profile")
	}
	if _, err := f.Get(name); err != nil {
		return "", err
	}
	return name, nil
}

// editProfile applies edit to a copy of the target profile and saves it (validated as
// by create) under the profiles file's lock; it returns the profile's name.
func editProfile(g *Globals, edit func(config.Profile) error) (name string, err error) {
	err = config.Update(config.ProfilesPath(nil), func(f *config.File) error {
		if name, err = profileTarget(g, f); err != nil {
			return err
		}
		p, _ := f.Get(name)
		next := config.Profile{}
		for k, v := range p {
			next[k] = v
		}
		if err := edit(next); err != nil {
			return err
		}
		return f.Put(name, next)
	})
	return name, err
}

func newProfileSetCmd(g *Globals) *cobra.Command {
	return &cobra.Command{
		Use:   "set KEY=VALUE...",
		Short: "Set keys of the active profile (or of --profile NAME)",
		Example: `  kinetic profile set image_registry=us-docker.pkg.dev/my-proj/kinetic
  kinetic profile set --profile dev zone=europe-west4-a cluster=tpus`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			set := map[string]string{}
			for _, a := range args {
				k, v, ok := strings.Cut(a, "=")
				k = strings.ReplaceAll(strings.TrimSpace(k), "-", "_")
				if !ok || k == "" {
					return fmt.Errorf("%q: write KEY=VALUE, e.g. zone=us-central1-a (keys: kinetic config show)", a)
				}
				if !config.Known(config.Key(k)) {
					return fmt.Errorf("unknown key %q (keys: %s)", k, keyNames())
				}
				set[k] = v
			}
			name, err := editProfile(g, func(p config.Profile) error {
				for k, v := range set {
					p[k] = v
				}
				return nil
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "profile %s: set %s\n", name, strings.Join(sortedKeys(set), ", "))
			return nil
		},
	}
}

func newProfileUnsetKeyCmd(g *Globals) *cobra.Command {
	return &cobra.Command{
		Use:     "unset-key KEY...",
		Short:   "Remove keys from the active profile (or --profile NAME): defaults and KINETIC_* apply again",
		Example: `  kinetic profile unset-key image_registry`,
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var removed []string
			name, err := editProfile(g, func(p config.Profile) error {
				for _, a := range args {
					k := strings.ReplaceAll(strings.TrimSpace(a), "-", "_")
					if _, ok := p[k]; ok {
						delete(p, k)
						removed = append(removed, k)
					} else if !config.Known(config.Key(k)) {
						return fmt.Errorf("unknown key %q (keys: %s)", k, keyNames())
					}
				}
				return nil
			})
			if err != nil {
				return err
			}
			if len(removed) == 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "profile %s: none of those keys was set\n", name)
			} else {
				fmt.Fprintf(cmd.ErrOrStderr(), "profile %s: removed %s\n", name, strings.Join(removed, ", "))
			}
			return nil
		},
	}
}

func keyNames() string {
	var s []string
	for _, k := range config.Keys() {
		s = append(s, string(k))
	}
	return strings.Join(s, ", ")
}

func sortedKeys(m map[string]string) []string {
	var s []string
	for k := range m {
		s = append(s, k)
	}
	sort.Strings(s)
	return s
}
