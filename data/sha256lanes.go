package data

import (
	"encoding/binary"
	"os"
	"strings"
)

// laneDigest is a SHA-256 in progress whose blocks are hashed by blockLane, or by
// blockLanes2 together with another laneDigest's (writeTwo). Two files hashed at once on
// one core run faster than one after the other: each SHA-256 round waits on the one
// before it, and the SHA unit has room for the other file's rounds in between (about
// 1.2× on AMD Zen 4; see docs/benchmarks.md).
type laneDigest struct {
	h   [8]uint32
	x   [64]byte // a partial block
	nx  int
	len uint64
}

var sha256IV = [8]uint32{0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19}

func (d *laneDigest) reset() { *d = laneDigest{h: sha256IV} }

// write hashes p on this lane alone.
func (d *laneDigest) write(p []byte) {
	p = d.align(p)
	if n := len(p) / 64; n > 0 {
		blockLane(&d.h, &p[0], n)
		d.len += uint64(64 * n)
		p = p[64*n:]
	}
	if len(p) > 0 {
		d.nx = copy(d.x[:], p)
		d.len += uint64(len(p))
	}
}

// align adds to the partial block what completes it, so that the rest of p (returned)
// starts a block; with no partial block it returns p.
func (d *laneDigest) align(p []byte) []byte {
	if d.nx == 0 {
		return p
	}
	n := copy(d.x[d.nx:], p)
	d.nx += n
	d.len += uint64(n)
	if d.nx == 64 {
		blockLane(&d.h, &d.x[0], 1)
		d.nx = 0
	}
	return p[n:]
}

// writeTwo hashes the whole blocks pa and pb have in common into a and b at once, and
// returns what is left of each (all but under a block of one of them).
func writeTwo(a, b *laneDigest, pa, pb []byte) ([]byte, []byte) {
	pa, pb = a.align(pa), b.align(pb)
	if a.nx != 0 || b.nx != 0 { // a piece too short to complete a block
		return pa, pb
	}
	if n := min(len(pa), len(pb)) / 64; n > 0 {
		blockLanes2(&a.h, &b.h, &pa[0], &pb[0], n)
		a.len += uint64(64 * n)
		b.len += uint64(64 * n)
		pa, pb = pa[64*n:], pb[64*n:]
	}
	return pa, pb
}

// sum pads the message and writes its digest to out.
func (d *laneDigest) sum(out *[32]byte) {
	bits := d.len * 8
	var pad [72]byte
	pad[0] = 0x80
	n := 56 - int(d.len%64)
	if n <= 0 {
		n += 64
	}
	binary.BigEndian.PutUint64(pad[n:], bits)
	d.write(pad[:n+8])
	for i, v := range d.h {
		binary.BigEndian.PutUint32(out[4*i:], v)
	}
}

// godebugOff reports whether GODEBUG turns off the CPU feature name for Go's own code
// (cpu.name=off or cpu.all=off): then the lanes stay off too, so that a run that
// measures a CPU without SHA extensions that way measures it throughout.
func godebugOff(name string) bool {
	for _, kv := range strings.Split(os.Getenv("GODEBUG"), ",") {
		if kv == "cpu."+name+"=off" || kv == "cpu.all=off" {
			return true
		}
	}
	return false
}
