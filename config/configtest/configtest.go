// Package configtest checks the settings a package declares with config.Declare (a
// backend's) through config.Resolve, as the CLI resolves them: defaults and their
// sources, and that an argument beats KINETIC_<KEY>, which beats the active profile.
package configtest

import (
	"path/filepath"
	"testing"

	"github.com/kinetic-run/kinetic/config"
)

// Resolve resolves the configuration with env as the whole environment (HOME a fresh
// directory unless env sets it), profile, when not nil, as the active profile, and
// args; the backend is the first linked one unless args name one.
func Resolve(t *testing.T, env map[string]string, profile config.Profile, args map[config.Key]string) (*config.Resolved, error) {
	t.Helper()
	e := map[string]string{"HOME": t.TempDir()}
	for k, v := range env {
		e[k] = v
	}
	path := filepath.Join(t.TempDir(), "profiles.json")
	if profile != nil {
		f := &config.File{Current: "p"}
		if err := f.Put("p", profile); err != nil {
			t.Fatal(err)
		}
		if err := f.Save(path); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := args[config.Backend]; !ok && len(config.Backends()) > 0 {
		// The default backend (local) may not be linked into the test.
		a := map[config.Key]string{config.Backend: config.Backends()[0]}
		for k, v := range args {
			a[k] = v
		}
		args = a
	}
	return config.Resolve(config.Options{Args: args, Getenv: func(k string) string { return e[k] }, ProfilesFile: path})
}

// Owned returns the entries of the keys owner declared, in display order.
func Owned(r *config.Resolved, owner string) []config.Entry {
	var out []config.Entry
	for _, e := range r.Entries() {
		if config.Owner(e.Key) == owner {
			out = append(out, e)
		}
	}
	return out
}

// Layers checks for k that an argument beats KINETIC_<KEY>, which beats the active
// profile; arg, env and profile are three valid values, in their normal form.
func Layers(t *testing.T, k config.Key, arg, env, profile string) {
	t.Helper()
	for _, c := range []struct {
		name      string
		args      map[config.Key]string
		env       map[string]string
		want, src string
	}{
		{"argument", map[config.Key]string{k: arg}, map[string]string{k.EnvVar(): env}, arg, config.SourceArgument},
		{"env", nil, map[string]string{k.EnvVar(): env}, env, "env " + k.EnvVar()},
		{"profile", nil, nil, profile, "profile p"},
	} {
		r, err := Resolve(t, c.env, config.Profile{string(k): profile}, c.args)
		if err != nil {
			t.Fatalf("%s, layer %s: %v", k, c.name, err)
		}
		if r.Get(k) != c.want || r.Source(k) != c.src {
			t.Errorf("%s, layer %s: %q from %q, want %q from %q", k, c.name, r.Get(k), r.Source(k), c.want, c.src)
		}
	}
}
