package config

import (
	"fmt"
)

// KeyDefault is a default a package outside config gives one of config's own keys: a
// backend says what the backend, store or registry are when nothing sets them (the
// Kubernetes backend: with a project set, backend gke and the bucket and repository
// `kinetic up` makes; the local backend: backend local when nothing else is said), so
// config resolves them without naming any backend.
type KeyDefault struct {
	Key Key
	// Owner says who declared it ("backend kubernetes").
	Owner string
	// Derive gives the value from the keys resolved before Key (earlier in Keys) when no
	// argument, env var or profile sets it; "" falls through to the next Default's
	// Derive, then to Value. Its source starts with "default: " and says why.
	Derive func(prev map[Key]Entry) (value, source string)
	// Value is the key's default when nothing sets or derives it ("": none).
	Value string
}

// DeclareDefault adds d to what Resolve consults for d.Key, after the defaults declared
// before it. Call it when the declaring package is initialised. It panics on a key that
// is not config's own, and on a second Value for one key.
func DeclareDefault(d KeyDefault) {
	if d.Owner == "" || (d.Derive == nil && d.Value == "") {
		panic(fmt.Sprintf("config.DeclareDefault(%q): a default needs an owner and a Derive or a Value", d.Key))
	}
	declMu.Lock()
	defer declMu.Unlock()
	for i := range keyTable {
		ki := &keyTable[i]
		if ki.key != d.Key {
			continue
		}
		if d.Value != "" {
			if ki.fallback != nil {
				panic(fmt.Sprintf("config.DeclareDefault(%q) by %s: the key has a default already", d.Key, d.Owner))
			}
			ki.fallback = fixed(d.Value)
		}
		if d.Derive != nil {
			ki.derive = chainDerive(ki.derive, d.Derive)
		}
		return
	}
	panic(fmt.Sprintf("config.DeclareDefault(%q) by %s: not one of config's own keys (Declare the setting instead)", d.Key, d.Owner))
}

// chainDerive is first, then next when first gives nothing.
func chainDerive(first, next func(map[Key]Entry) (string, string)) func(map[Key]Entry) (string, string) {
	if first == nil {
		return next
	}
	return func(prev map[Key]Entry) (string, string) {
		if v, src := first(prev); v != "" {
			return v, src
		}
		return next(prev)
	}
}

// DefaultBackend is the backend key's default when nothing sets or derives it: what the
// backend that declared it gives (the local backend, where cmd/kinetic links it); "" when
// no linked backend declared one.
func DefaultBackend() string {
	info, ok := lookup(Backend)
	if !ok || info.fallback == nil {
		return ""
	}
	v, _ := info.fallback(func(string) string { return "" })
	return v
}
