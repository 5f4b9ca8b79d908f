package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/kinetic-run/kinetic/internal/atomicfile"
)

// Profile is one named set of settings, keyed by Key strings. It is a plain map so keys
// this version does not know (written by a newer Kinetic, or by hand) survive a rewrite.
type Profile map[string]string

// Get returns the profile's value for k ("" if unset).
func (p Profile) Get(k Key) string { return p[string(k)] }

// File is the content of the profiles file.
type File struct {
	// Current is the profile the file marks active ("" for none).
	Current string
	// Profiles maps names to profiles.
	Profiles map[string]Profile
	// extra keeps unknown top-level fields (compacted JSON) so rewriting the file never
	// drops what a newer version or another tool put there.
	extra map[string]json.RawMessage
	// path is where LoadProfiles read the file from, for error messages.
	path string
}

// maxFileSize bounds what we read: the file holds a handful of short strings, and a
// runaway file should fail clearly rather than exhaust memory.
const maxFileSize = 8 << 20

// ProfilesPath is the profiles file: $KINETIC_PROFILES_FILE, else $KINETIC_HOME/profiles.json,
// else ~/.kinetic/profiles.json.
// getenv nil means os.Getenv.
func ProfilesPath(getenv func(string) string) string {
	if getenv == nil {
		getenv = os.Getenv
	}
	if p := getenv("KINETIC_PROFILES_FILE"); p != "" {
		return p
	}
	if d := getenv("KINETIC_HOME"); d != "" {
		// KINETIC_HOME moves all of Kinetic's state, profiles included.
		return filepath.Join(absPath(d), "profiles.json")
	}
	return filepath.Join(homeDir(getenv), ".kinetic", "profiles.json")
}

// LoadProfiles reads the profiles file at path. A missing file is an empty File, not an
// error: having no profiles is the normal state of a fresh install.
func LoadProfiles(path string) (*File, error) {
	fh, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &File{path: path}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read profiles file: %w", err)
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(fh, maxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read profiles file %s: %w", path, err)
	}
	if len(data) > maxFileSize {
		return nil, &CorruptFileError{Path: path, Err: fmt.Errorf("larger than %d bytes", maxFileSize)}
	}
	f, err := ParseProfiles(data)
	if err != nil {
		return nil, &CorruptFileError{Path: path, Err: err}
	}
	f.path = path
	return f, nil
}

// ParseProfiles parses the content of a profiles file. It is lenient where leniency is
// safe and strict where a guess could run a job in the wrong place:
//   - an empty file, null values and empty strings mean "not set";
//   - unknown top-level fields are kept, unknown string settings are kept, unknown
//     settings of other types are dropped;
//   - a known setting, "current" or "profiles" of the wrong type is an error.
func ParseProfiles(data []byte) (*File, error) {
	f := &File{}
	if len(bytes.TrimSpace(data)) == 0 {
		return f, nil
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, jsonWords(err, data, "a JSON object")
	}
	for field, raw := range top {
		switch field {
		case "current":
			if err := unmarshalOptional(raw, &f.Current); err != nil {
				return nil, fmt.Errorf(`"current" must be a string: %w`, err)
			}
		case "profiles":
			ps, err := parseProfileMap(raw)
			if err != nil {
				return nil, err
			}
			f.Profiles = ps
		default:
			var buf bytes.Buffer
			if err := json.Compact(&buf, raw); err != nil {
				return nil, err // cannot happen: Unmarshal validated it
			}
			if f.extra == nil {
				f.extra = map[string]json.RawMessage{}
			}
			f.extra[field] = buf.Bytes()
		}
	}
	return f, nil
}

func parseProfileMap(raw json.RawMessage) (map[string]Profile, error) {
	var byName map[string]json.RawMessage
	if err := json.Unmarshal(raw, &byName); err != nil {
		return nil, fmt.Errorf(`"profiles" must be an object mapping names to profiles: %w`, jsonWords(err, raw, "an object"))
	}
	if len(byName) == 0 {
		return nil, nil
	}
	out := make(map[string]Profile, len(byName))
	for name, praw := range byName {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(praw, &fields); err != nil {
			return nil, fmt.Errorf("profile %q must be an object: %w", name, jsonWords(err, praw, "an object"))
		}
		if fields == nil { // "name": null — treat as absent
			continue
		}
		p := Profile{}
		for k, vraw := range fields {
			var v string
			if err := unmarshalOptional(vraw, &v); err != nil {
				if Known(Key(k)) {
					return nil, fmt.Errorf("profile %q: %q must be a string: %w", name, k, jsonWords(err, vraw, "a string"))
				}
				continue // unknown and not a string: not ours to interpret
			}
			if v != "" {
				p[k] = v
			}
		}
		out[name] = p
	}
	return out, nil
}

// unmarshalOptional decodes a JSON string into dst, leaving it "" for null.
func unmarshalOptional(raw json.RawMessage, dst *string) error {
	if string(raw) == "null" {
		return nil
	}
	return json.Unmarshal(raw, dst)
}

// referenceKeys are always written, as null when unset, because the reference reads them
// from every profile and may not tolerate their absence.
var referenceKeys = []Key{Project, Zone, Cluster, Namespace}

// Marshal renders f as the profiles file: indented JSON, keys sorted, trailing newline.
func (f *File) Marshal() ([]byte, error) {
	top := map[string]any{}
	for k, v := range f.extra {
		top[k] = v
	}
	if f.Current != "" {
		top["current"] = f.Current
	} else {
		top["current"] = nil
	}
	profiles := map[string]map[string]any{}
	for name, p := range f.Profiles {
		m := map[string]any{}
		for _, k := range referenceKeys {
			m[string(k)] = nil
		}
		for k, v := range p {
			if v != "" {
				m[k] = v
			}
		}
		profiles[name] = m
	}
	top["profiles"] = profiles
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	// Values are paths and URLs; HTML escaping would only make them unreadable by hand.
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(top); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Save writes f to path atomically and durably (atomicfile.WriteDurable), creating the directory (0700)
// if needed. The file is 0600: it names projects and clusters, which are nobody else's
// business.
func (f *File) Save(path string) error {
	data, err := f.Marshal()
	if err != nil {
		return fmt.Errorf("encode profiles: %w", err)
	}
	if err := atomicfile.WriteDurable(path, data, 0o600, 0o700); err != nil {
		return fmt.Errorf("save profiles file: %w", err)
	}
	return nil
}

// Names returns the profile names, sorted.
func (f *File) Names() []string { return slices.Sorted(maps.Keys(f.Profiles)) }

// Get returns the named profile, or a ProfileNotFoundError.
func (f *File) Get(name string) (Profile, error) {
	p, ok := f.Profiles[name]
	if !ok {
		return nil, &ProfileNotFoundError{Name: name, Existing: f.Names(), File: f.path}
	}
	return p, nil
}

// profileName keeps new names easy to type and safe in file names and labels. Names
// already in a file are accepted whatever they are: the reference did not restrict them.
var profileName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

// ValidateProfileName checks a name for a new profile.
func ValidateProfileName(name string) error {
	if !profileName.MatchString(name) {
		return fmt.Errorf("invalid profile name %q: use up to 63 letters, digits, '.', '_' or '-', starting with a letter or digit", name)
	}
	return nil
}

// Put stores p under name, replacing any profile of that name. Values are validated and
// normalised, so a bad value fails at "profile create", not at the next job.
func (f *File) Put(name string, p Profile) error {
	if err := ValidateProfileName(name); err != nil {
		return err
	}
	clean := Profile{}
	for k, v := range p {
		if Known(Key(k)) {
			nv, err := Validate(Key(k), v)
			if err != nil {
				return err
			}
			v = nv
		}
		if v = strings.TrimSpace(v); v != "" {
			clean[k] = v
		}
	}
	if f.Profiles == nil {
		f.Profiles = map[string]Profile{}
	}
	f.Profiles[name] = clean
	return nil
}

// Remove deletes the named profile. If it was current, the file is left with no current
// profile rather than pointing at nothing; it reports whether that happened.
func (f *File) Remove(name string) (wasCurrent bool, err error) {
	if _, err := f.Get(name); err != nil {
		return false, err
	}
	delete(f.Profiles, name)
	if f.Current == name {
		f.Current = ""
		return true, nil
	}
	return false, nil
}

// Use makes the named profile current.
func (f *File) Use(name string) error {
	if _, err := f.Get(name); err != nil {
		return err
	}
	f.Current = name
	return nil
}

// Update loads the profiles file, applies fn and saves the result, holding an advisory
// lock on the file's directory so two concurrent "kinetic profile" commands cannot lose
// each other's changes. fn returning an error leaves the file untouched.
//
// When the file's directory does not exist yet, fn is first tried on an empty File: an
// error, or nothing to write, leaves the disk as it was (no ~/.kinetic made by a
// command that failed or changed nothing); fn then runs again under the lock, so it
// must only change the File it is given and set the caller's variables.
func Update(path string, fn func(*File) error) error {
	dir := filepath.Dir(path)
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		if changed, err := changes(&File{path: path}, fn); err != nil || !changed {
			return err
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create profiles directory: %w", err)
	}
	unlock, err := lockDir(dir)
	if err != nil {
		return fmt.Errorf("lock profiles directory: %w", err)
	}
	defer unlock()
	f, err := LoadProfiles(path)
	if err != nil {
		return err
	}
	// Skip no-op writes, so e.g. "profile unset" on a fresh install creates no file.
	if changed, err := changes(f, fn); err != nil || !changed {
		return err
	}
	return f.Save(path)
}

// changes runs fn on f and says whether it changed what f would write.
func changes(f *File, fn func(*File) error) (bool, error) {
	before, err := f.Marshal()
	if err != nil {
		return false, err
	}
	if err := fn(f); err != nil {
		return false, err
	}
	after, err := f.Marshal()
	return err != nil || !bytes.Equal(before, after), nil
}

// Create adds a profile under a new name; replace allows overwriting an existing one.
// Refusing by default protects a hand-tuned profile from a mistyped create.
func (f *File) Create(name string, p Profile, replace bool) error {
	if _, exists := f.Profiles[name]; exists && !replace {
		return fmt.Errorf("profile %q already exists (use --force to replace it)", name)
	}
	return f.Put(name, p)
}

// Settings lists the profile's keys in display order: known keys in the order of Keys,
// then unknown ones sorted.
func (p Profile) Settings() []Entry {
	var out []Entry
	for _, k := range Keys() {
		if v := p[string(k)]; v != "" {
			out = append(out, Entry{Key: k, Value: v})
		}
	}
	for _, k := range slices.Sorted(maps.Keys(p)) {
		if !Known(Key(k)) && p[k] != "" {
			out = append(out, Entry{Key: Key(k), Value: p[k]})
		}
	}
	return out
}

// jsonError is a JSON decoding error told in a person's words (where the file stops
// being JSON, or what was found instead of what belongs there); Unwrap gives the
// decoder's own error.
type jsonError struct {
	msg string
	err error
}

func (e *jsonError) Error() string { return e.msg }
func (e *jsonError) Unwrap() error { return e.err }

// jsonWords describes err, from decoding data where want belongs, without the
// decoder's Go wording ("invalid character 'b' looking for beginning of object key
// string", "cannot unmarshal string into Go value of type map[string]json.RawMessage").
func jsonWords(err error, data []byte, want string) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		line, col := 1, 1
		for _, b := range data[:min(int(se.Offset), len(data))] {
			if b == '\n' {
				line, col = line+1, 1
			} else {
				col++
			}
		}
		if se.Offset >= int64(len(data)) {
			return &jsonError{fmt.Sprintf("not valid JSON: it ends too early (line %d); is it cut short?", line), err}
		}
		return &jsonError{fmt.Sprintf("not valid JSON at line %d, column %d (a missing quote, comma or brace?)", line, max(1, col-1)), err}
	case errors.As(err, &te):
		return &jsonError{fmt.Sprintf("found a JSON %s where %s belongs", te.Value, want), err}
	}
	return &jsonError{"not valid JSON", err}
}
