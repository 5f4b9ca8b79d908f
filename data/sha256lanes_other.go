//go:build !amd64 || purego

package data

// Off x86, files are hashed one at a time with crypto/sha256.
const haveSHANI, haveAVX2 = false, false

func bestKernel() *laneKernel { return nil }

func blockLane(h *[8]uint32, p *byte, blocks int) { panic("blockLane: no SHA extensions") }

func blockLanes2(ha, hb *[8]uint32, pa, pb *byte, blocks int) {
	panic("blockLanes2: no SHA extensions")
}

func blockLanes8(st *[8][8]uint32, ptrs *[8]*byte, blocks int) { panic("blockLanes8: no AVX2") }

func setSHANI(on bool) {}
