//go:build !linux

package dirwatch

// watch: no watching here; callers poll.
func watch(string, func()) (func(), bool) { return nil, false }
