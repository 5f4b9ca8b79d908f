//go:build !linux

package dirwatch

// watch: no watching here; callers poll.
func watch(string, map[string]bool, bool, func()) (func(), func(), bool) { return nil, nil, false }
