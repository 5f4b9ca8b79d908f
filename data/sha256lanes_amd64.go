//go:build amd64 && !purego

package data

// blockLane hashes blocks 64-byte blocks at p into h (one message) with the SHA
// extensions.
//
//go:noescape
func blockLane(h *[8]uint32, p *byte, blocks int)

// blockLanes2 hashes blocks 64-byte blocks of two messages at once with the SHA
// extensions: pa into ha and pb into hb.
//
//go:noescape
func blockLanes2(ha, hb *[8]uint32, pa, pb *byte, blocks int)

// blockLanes8 hashes blocks 64-byte blocks of eight messages at once with AVX2: ptrs[i]
// into lane i of st, the eight states transposed (st[word][lane]).
//
//go:noescape
func blockLanes8(st *[8][8]uint32, ptrs *[8]*byte, blocks int)

func cpuidSHA() bool
func cpuidAVX2() bool

// haveSHANI: the CPU has the SHA extensions (and the SSE levels the code uses), and they
// are not turned off for Go's own SHA-256 (GODEBUG=cpu.sha=off).
var haveSHANI = cpuidSHA() && !godebugOff("sha")

var haveAVX2 = cpuidAVX2() && !godebugOff("avx2")

// bestKernel is how this CPU hashes several files at once, or nil.
func bestKernel() *laneKernel {
	switch {
	case haveSHANI:
		return &kernelSHA2
	case haveAVX2:
		return &kernelAVX2
	}
	return nil
}

// setSHANI is for tests: blockOne with or without the SHA extensions.
func setSHANI(on bool) { haveSHANI = on }
