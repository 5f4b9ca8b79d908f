package config

import (
	"fmt"
	"strings"
	"sync"
)

// Setting is a key a package outside config owns: a backend declares the settings only
// it reads (the Kubernetes pod settings, the local backend's slots), with a default and
// a doc, and config resolves, validates and shows them like its own keys (argument >
// KINETIC_<KEY> > profile > Env > Default) without knowing them by name. A program
// knows the settings of the backends it links, as it knows their names.
type Setting struct {
	Key Key
	// Owner says who declared the setting ("backend kubernetes"), for errors and docs.
	Owner string
	// Doc is a short description, for flag help and docs.
	Doc string
	// Default is the value when nothing sets it ("": unset); DefaultWhy, when set, is
	// said after "default" in its source ("CPUs" gives "default (CPUs)").
	Default, DefaultWhy string
	// Env is another tool's environment variable consulted after the profile and before
	// Default (KUBECONFIG), so a working kubectl setup needs nothing of Kinetic's.
	Env string
	// Check validates a value and returns its normal form (CheckDuration, CheckBool,
	// OneOf, ...); nil accepts anything.
	Check func(string) (string, error)
}

var (
	declMu   sync.RWMutex
	declared []keyInfo
)

// Declare adds s to the keys Resolve knows, after config's own keys in the order they
// were declared, and returns its key. Call it when the declaring package is
// initialised (a package-level var). It panics on an empty key, or a key that config
// or an earlier declaration has already: two owners of one key are a programming error.
func Declare(s Setting) Key {
	if s.Key == "" || s.Owner == "" || s.Doc == "" {
		panic(fmt.Sprintf("config.Declare(%q): a setting needs a key, an owner and a doc", s.Key))
	}
	if s.Key != Key(strings.ToLower(string(s.Key))) || strings.ContainsAny(string(s.Key), " -.") {
		panic(fmt.Sprintf("config.Declare(%q): keys are lower_case_with_underscores", s.Key))
	}
	declMu.Lock()
	defer declMu.Unlock()
	for _, ki := range allKeysLocked() {
		if ki.key == s.Key {
			panic(fmt.Sprintf("config.Declare(%q) by %s: the key is declared already (by %s)", s.Key, s.Owner, ki.ownerOr()))
		}
	}
	ki := keyInfo{key: s.Key, help: s.Doc, check: s.Check, owner: s.Owner}
	if s.Env != "" || s.Default != "" {
		env, def, why := s.Env, s.Default, s.DefaultWhy
		ki.fallback = func(getenv func(string) string) (string, string) {
			if env != "" {
				if v, src := fromEnv(env)(getenv); v != "" {
					return v, src
				}
			}
			if def == "" {
				return "", ""
			}
			if why != "" {
				return def, SourceDefault + " (" + why + ")"
			}
			return def, SourceDefault
		}
	}
	declared = append(declared, ki)
	return s.Key
}

// Owner is who declared k (Setting.Owner); "config" for config's own keys and "" for
// a key this program does not know.
func Owner(k Key) string {
	ki, ok := lookup(k)
	if !ok {
		return ""
	}
	return ki.ownerOr()
}

func (ki keyInfo) ownerOr() string {
	if ki.owner == "" {
		return "config"
	}
	return ki.owner
}

// allKeys is every key in display order: config's, then the declared ones.
func allKeys() []keyInfo {
	declMu.RLock()
	defer declMu.RUnlock()
	return allKeysLocked()
}

func allKeysLocked() []keyInfo {
	out := make([]keyInfo, 0, len(keyTable)+len(declared))
	return append(append(out, keyTable...), declared...)
}

// The checks a declared setting may use (Setting.Check).
var (
	// CheckDuration accepts a positive Go duration and normalises it (90s → 1m30s).
	CheckDuration = checkDuration
	// CheckBool accepts true/false, 1/0, yes/no, on/off and normalises to true/false.
	CheckBool = checkBool
	// CheckQuantity accepts a Kubernetes resource quantity (500m, 2, 4Gi).
	CheckQuantity = checkQuantity
	// CheckPositiveInt accepts a whole number of at least 1.
	CheckPositiveInt = checkPositiveInt
	// CheckHTTPURL accepts an http:// or https:// URL.
	CheckHTTPURL = checkHTTPURL
)

// OneOf accepts exactly one of choices (and says them when it refuses).
func OneOf(choices ...string) func(string) (string, error) { return oneOf(choices) }
