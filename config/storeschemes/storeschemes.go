// Package storeschemes is the set of store URL schemes linked into this program, the
// accepted schemes of config's store key. store/driver.Register adds each scheme with
// its driver's URL check; config validates the store setting against the set and lists
// it in its errors. It mirrors config/backendnames: it sits under config, which owns the
// setting, and imports the standard library only, so config links no store driver.
package storeschemes

import (
	"fmt"
	"net/url"
	"slices"
	"sync"
)

// Check refuses a URL of its scheme that cannot name a store (a bucket missing, a
// relative path), with a message naming what a good one looks like. It has no side
// effects.
type Check func(u *url.URL) error

var (
	mu  sync.RWMutex
	set = map[string]Check{}
)

// Add records scheme with its check. It panics if scheme is empty or already recorded:
// two drivers of one scheme is a programming error, as with database/sql drivers.
func Add(scheme string, c Check) {
	mu.Lock()
	defer mu.Unlock()
	if scheme == "" || c == nil {
		panic("store schemes: empty scheme or no check")
	}
	if _, ok := set[scheme]; ok {
		panic(fmt.Sprintf("store schemes: %q registered twice", scheme))
	}
	set[scheme] = c
}

// Lookup returns scheme's check, and whether scheme is recorded.
func Lookup(scheme string) (Check, bool) {
	mu.RLock()
	defer mu.RUnlock()
	c, ok := set[scheme]
	return c, ok
}

// List returns the recorded schemes, sorted.
func List() []string {
	mu.RLock()
	defer mu.RUnlock()
	out := make([]string, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}
