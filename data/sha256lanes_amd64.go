//go:build amd64 && !purego

package data

// blockLane hashes blocks 64-byte blocks at p into h (one message) with the SHA
// extensions.
//
//go:noescape
func blockLane(h *[8]uint32, p *byte, blocks int)

// blockLanes2 hashes blocks 64-byte blocks of two messages at once: pa into ha and pb
// into hb.
//
//go:noescape
func blockLanes2(ha, hb *[8]uint32, pa, pb *byte, blocks int)

func cpuidSHA() bool

// haveLanes: the CPU has the SHA extensions (and the SSE levels the code uses), and
// they are not turned off for Go's own SHA-256 (GODEBUG=cpu.sha=off).
var haveLanes = cpuidSHA() && !godebugOff("sha")
