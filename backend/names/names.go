// Package names is the set of backend names linked into this program. backend.Register
// adds each name it registers; config validates the backend setting against the set and
// lists it in its errors and help. It imports nothing of Kinetic, so config stays a leaf
// that links neither the store nor any backend.
package names

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
