// Package backendnames is the set of backend names linked into this program, the accepted
// values of config's backend key. backend.Register adds each name it registers; config
// validates the backend setting against the set and lists it in its errors and help. It
// sits under config, which owns the setting, and imports nothing of Kinetic: config links
// no backend, and the backend interface links nothing else of config.
package backendnames

import (
	"fmt"
	"slices"
	"sync"
)

var (
	mu  sync.RWMutex
	set = map[string]bool{}
)

// Add records name. It panics if name is empty or already recorded: two backends under
// one name is a programming error, as with database/sql drivers.
func Add(name string) {
	mu.Lock()
	defer mu.Unlock()
	if name == "" {
		panic("backend names: empty name")
	}
	if set[name] {
		panic(fmt.Sprintf("backend names: %q registered twice", name))
	}
	set[name] = true
}

// Has reports whether name is recorded.
func Has(name string) bool {
	mu.RLock()
	defer mu.RUnlock()
	return set[name]
}

// List returns the recorded names, sorted.
func List() []string {
	mu.RLock()
	defer mu.RUnlock()
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}
