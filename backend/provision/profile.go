package provision

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/kinetic-run/kinetic/config"
)

// ProfilePlan is the change a setup command makes to one profile (made current).
type ProfilePlan struct {
	Name, Path string
	Exists     bool
	Current    bool // it is the file's current profile already
	Changed    []string
	Merged     config.Profile
}

// PlanProfile plans the profile name holding want (empty values left out) on top of
// what it holds, made current.
func PlanProfile(name string, want config.Profile) (*ProfilePlan, error) {
	path := config.ProfilesPath(nil)
	f, err := config.LoadProfiles(path)
	if err != nil {
		return nil, err
	}
	old, exists := f.Profiles[name]
	pp := &ProfilePlan{Name: name, Path: path, Exists: exists, Current: f.Current == name, Merged: config.Profile{}}
	for k, v := range old {
		pp.Merged[k] = v
	}
	for k, v := range want {
		if v == "" {
			continue
		}
		if old[k] != v {
			pp.Changed = append(pp.Changed, k+"="+v)
		}
		pp.Merged[k] = v
	}
	sort.Strings(pp.Changed)
	return pp, nil
}

// Changes is 1 when the profile is written or made current, else 0.
func (pp *ProfilePlan) Changes() int {
	if !pp.Exists || len(pp.Changed) > 0 || !pp.Current {
		return 1
	}
	return 0
}

// Print writes the plan's line.
func (pp *ProfilePlan) Print(w io.Writer) {
	switch {
	case !pp.Exists:
		fmt.Fprintf(w, "  + create   profile %s in %s (%s)\n", pp.Name, pp.Path, strings.Join(pp.Changed, ", "))
	case len(pp.Changed) > 0:
		fmt.Fprintf(w, "  ~ update   profile %s in %s (%s)\n", pp.Name, pp.Path, strings.Join(pp.Changed, ", "))
	case !pp.Current:
		fmt.Fprintf(w, "  ~ use      profile %s (make it the current one)\n", pp.Name)
	default:
		fmt.Fprintf(w, "  = ok       profile %s\n", pp.Name)
	}
}

// Write writes the profile and makes it current, when it changes.
func (pp *ProfilePlan) Write(w io.Writer) error {
	if pp.Changes() == 0 {
		return nil
	}
	if err := PutProfile(pp.Path, pp.Name, pp.Merged, true); err != nil {
		return err
	}
	fmt.Fprintf(w, "  ✓ profile %s\n", pp.Name)
	return nil
}

// PutProfile writes profile name of the file at path as p, made current when current
// (or when the file has no current profile).
func PutProfile(path, name string, p config.Profile, current bool) error {
	return config.Update(path, func(f *config.File) error {
		if err := f.Put(name, p); err != nil {
			return err
		}
		if current || f.Current == "" {
			f.Current = name
		}
		return nil
	})
}

// MergeProfile is old with want on top.
func MergeProfile(old, want config.Profile) config.Profile {
	merged := config.Profile{}
	for k, v := range old {
		merged[k] = v
	}
	for k, v := range want {
		merged[k] = v
	}
	return merged
}

// ExistingProfile is name if it names a profile that exists, else "" (the one a setup
// command is about to create cannot be resolved yet).
func ExistingProfile(name string) string {
	if name == "" {
		return ""
	}
	f, err := config.LoadProfiles(config.ProfilesPath(nil))
	if err != nil || f.Profiles[name] == nil {
		return ""
	}
	return name
}

// ProfileName is the profile init writes: --profile-name, else --profile, else
// fallback, else "default" (asked for on a terminal); checked.
func ProfileName(c *Call, fallback string) (string, error) {
	name := c.String("profile-name")
	if name == "" {
		name = c.Profile
	}
	if name == "" {
		name = fallback
	}
	if name == "" {
		name = "default"
		if c.Prompter != nil {
			var err error
			if name, err = c.Prompter.Ask("Profile to write", name); err != nil {
				return "", err
			}
		}
	}
	return name, config.ValidateProfileName(name)
}

// Resolve resolves the configuration for c: args on top of c's profile when it exists.
func Resolve(c *Call, args map[config.Key]string) (*config.Resolved, error) {
	return config.Resolve(config.Options{Args: args, Profile: c.Profile})
}

// KeyArgs are the flags of c named after the configuration keys given (and defined,
// non-empty), as configuration arguments.
func KeyArgs(c *Call, keys ...config.Key) map[config.Key]string {
	args := map[config.Key]string{}
	for _, k := range keys {
		if v := c.String(string(k)); v != "" {
			args[k] = v
		}
	}
	return args
}
