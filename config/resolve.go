package config

import (
	"fmt"
	"os"
	"strings"
)

// Options are the inputs of Resolve besides the environment and the profiles file.
type Options struct {
	// Args are explicit arguments (flags, SDK options); "" means not given.
	Args map[Key]string
	// Profile is an explicit --profile; "" means the active one.
	Profile string
	// Getenv reads the environment; nil means os.Getenv. Tests inject a map.
	Getenv func(string) string
	// ProfilesFile is the profiles file; "" means ProfilesPath(Getenv).
	ProfilesFile string
}

// Entry is one resolved key, for listing.
type Entry struct {
	Key    Key    `json:"key"`
	Value  string `json:"value"`
	Source string `json:"source"`
}

// Resolved holds the value of every key and where it came from.
type Resolved struct {
	values        map[Key]Entry
	profile       string
	profileSource string
	profilesFile  string
}

// Resolve computes every key: argument > KINETIC_<KEY> > active profile > default.
// Some defaults follow other keys (keyInfo.derive), as the linked backends declare them
// (DeclareDefault): with the Kubernetes backend linked and a project set (argument,
// KINETIC_PROJECT, a profile or GOOGLE_CLOUD_PROJECT) the backend is gke, and on GKE the
// store and image_registry are what `kinetic up` makes for the project.
// Values are trimmed, validated and normalised (a store path becomes a file:// URL).
// It fails on an unknown key in Args, an invalid value (naming its source), a named
// profile that does not exist, or a corrupt profiles file.
func Resolve(o Options) (*Resolved, error) {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	for k := range o.Args {
		if !Known(k) {
			return nil, fmt.Errorf("unknown configuration key %q (keys: %s)", k, keyList())
		}
	}
	r := &Resolved{values: map[Key]Entry{}, profilesFile: o.ProfilesFile}
	if r.profilesFile == "" {
		r.profilesFile = ProfilesPath(getenv)
	}
	prof, err := r.activeProfile(o.Profile, o.Args, getenv)
	if err != nil {
		return nil, err
	}
	for _, ki := range allKeys() {
		e := resolveKey(ki, o.Args[ki.key], getenv, prof, r.profile, r.values)
		if e.Value != "" && ki.check != nil {
			v, err := ki.check(e.Value)
			if err != nil {
				return nil, &ValueError{Key: ki.key, Value: e.Value, Source: e.Source, Reason: err.Error()}
			}
			e.Value = v
		}
		r.values[ki.key] = e
	}
	return r, nil
}

func resolveKey(ki keyInfo, arg string, getenv func(string) string, prof Profile, profName string, prev map[Key]Entry) Entry {
	e := Entry{Key: ki.key}
	env := ki.key.EnvVar()
	switch {
	case strings.TrimSpace(arg) != "":
		e.Value, e.Source = strings.TrimSpace(arg), SourceArgument
	case strings.TrimSpace(getenv(env)) != "":
		e.Value, e.Source = strings.TrimSpace(getenv(env)), "env "+env
	case strings.TrimSpace(prof.Get(ki.key)) != "":
		e.Value, e.Source = strings.TrimSpace(prof.Get(ki.key)), "profile "+profName
	default:
		if ki.derive != nil {
			e.Value, e.Source = ki.derive(prev)
		}
		if e.Value == "" && ki.fallback != nil {
			e.Value, e.Source = ki.fallback(getenv)
		}
	}
	if e.Value == "" {
		e.Source = SourceUnset
	}
	return e
}

// activeProfile picks the profile: explicit > the profile of the cluster the arguments
// name (ProfileFor) > KINETIC_PROFILE > the file's current. The file is read even when
// no profile is named, because its "current" may name one; a corrupt file is an error
// rather than silently ignored, since ignoring it would run jobs with settings the user
// did not choose.
func (r *Resolved) activeProfile(explicit string, args map[Key]string, getenv func(string) string) (Profile, error) {
	f, err := LoadProfiles(r.profilesFile)
	if err != nil {
		return nil, err
	}
	name, origin := activeName(f, explicit, getenv, r.profilesFile)
	if explicit == "" {
		if other := f.ProfileFor(args); other != "" && other != name && !f.Profiles[name].names(args) {
			// attach(job_id, cluster="B") with profile A active: B's profile knows
			// where B's jobs are (its store) and how to reach B.
			name, origin = other, "the profile of "+clusterWords(args)
		}
	}
	if name == "" {
		return nil, nil
	}
	p, ok := f.Profiles[name]
	if !ok {
		return nil, &ProfileNotFoundError{Name: name, Origin: origin, Existing: f.Names(), File: r.profilesFile}
	}
	r.profile, r.profileSource = name, origin
	return p, nil
}

// ActiveName is the profile that Resolve would use, and who chose it ("--profile",
// "KINETIC_PROFILE", "current in FILE"); "" when none. It does not check the profile
// exists, so listings can still show what is going on. getenv nil means os.Getenv.
func ActiveName(f *File, explicit string, getenv func(string) string, path string) (name, origin string) {
	if getenv == nil {
		getenv = os.Getenv
	}
	return activeName(f, explicit, getenv, path)
}

func activeName(f *File, explicit string, getenv func(string) string, path string) (string, string) {
	if explicit != "" {
		return explicit, "--profile"
	}
	if v := strings.TrimSpace(getenv("KINETIC_PROFILE")); v != "" {
		return v, "KINETIC_PROFILE"
	}
	if f.Current != "" {
		return f.Current, "current in " + path
	}
	return "", ""
}

// Get returns the value of k ("" if unset).
func (r *Resolved) Get(k Key) string { return r.values[k].Value }

// Source says where the value of k came from: "argument", "env KINETIC_ZONE",
// "profile dev", "default", "env GOOGLE_CLOUD_PROJECT", or "unset".
func (r *Resolved) Source(k Key) string {
	if e, ok := r.values[k]; ok {
		return e.Source
	}
	return SourceUnset
}

// Entries lists every key in display order (the order of Keys).
func (r *Resolved) Entries() []Entry {
	all := allKeys()
	out := make([]Entry, 0, len(all))
	for _, ki := range all {
		out = append(out, r.values[ki.key])
	}
	return out
}

// ProfileName is the active profile ("" if none).
func (r *Resolved) ProfileName() string { return r.profile }

// ProfileSource says who chose the active profile: "--profile", "KINETIC_PROFILE" or
// "current in FILE" ("" if none).
func (r *Resolved) ProfileSource() string { return r.profileSource }

// ProfilesFile is the profiles file that was consulted.
func (r *Resolved) ProfilesFile() string { return r.profilesFile }

// clusterKeys are the arguments that name a cluster, and so may choose its profile.
var clusterKeys = []Key{Project, Cluster}

// names reports whether p has every cluster key given in args (and at least one is).
func (p Profile) names(args map[Key]string) bool {
	given := 0
	for _, k := range clusterKeys {
		v := strings.TrimSpace(args[k])
		if v == "" {
			continue
		}
		given++
		if p.Get(k) != v {
			return false
		}
	}
	return given > 0
}

// ProfileFor returns the one profile whose project and cluster are those args gives (of
// the two, the ones given): the profile of the cluster a call names. It returns "" when
// args name no cluster, or when no profile or several match (the arguments then apply
// on top of the active profile, as any argument does). A store given by argument keeps
// the active profile: the caller said where the jobs are.
func (f *File) ProfileFor(args map[Key]string) string {
	if strings.TrimSpace(args[Store]) != "" {
		return ""
	}
	found := ""
	for _, name := range f.Names() {
		if f.Profiles[name].names(args) {
			if found != "" {
				return ""
			}
			found = name
		}
	}
	return found
}

func clusterWords(args map[Key]string) string {
	var parts []string
	for _, k := range clusterKeys {
		if v := strings.TrimSpace(args[k]); v != "" {
			parts = append(parts, string(k)+" "+v)
		}
	}
	return strings.Join(parts, ", ")
}
