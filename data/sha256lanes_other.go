//go:build !amd64 || purego

package data

// Without the x86 SHA extensions files are hashed one at a time with crypto/sha256.
const haveLanes = false

func blockLane(h *[8]uint32, p *byte, blocks int) { panic("blockLane: no SHA extensions") }

func blockLanes2(ha, hb *[8]uint32, pa, pb *byte, blocks int) {
	panic("blockLanes2: no SHA extensions")
}
