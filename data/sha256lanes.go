package data

//go:generate go run sha256lanes_gen.go sha256lanes_amd64.s

import (
	"crypto/sha256"
	"encoding"
	"encoding/binary"
	"os"
	"strings"
)

// laneDigest is a SHA-256 in progress whose whole blocks are hashed by a laneKernel
// together with other messages' blocks, or alone by blockOne. Several files hashed at
// once on one core run faster than one after the other: on the SHA extensions each
// round waits on the one before it and the SHA unit has room for another file's rounds
// in between (blockLanes2: about 1.5× on AMD Zen 5); without them, eight files fill the
// eight 32-bit lanes of AVX2 registers (blockLanes8: about 2× OpenSSL's AVX2 SHA-256).
// See docs/data.md.
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
		blockOne(&d.h, p[:64*n])
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
		blockOne(&d.h, d.x[:])
		d.nx = 0
	}
	return p[n:]
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

// blockOne hashes the whole blocks of p into h, one message: with the SHA extensions
// directly, else through crypto/sha256 (its best code for the CPU), whose state is set
// and read back through its documented binary form.
func blockOne(h *[8]uint32, p []byte) {
	if haveSHANI {
		blockLane(h, &p[0], len(p)/64)
		return
	}
	var st [4 + 32 + 64 + 8]byte // "sha\x03", h, an empty block buffer, the length
	copy(st[:], "sha\x03")
	for i, v := range h {
		binary.BigEndian.PutUint32(st[4+4*i:], v)
	}
	d := sha256.New()
	if err := d.(encoding.BinaryUnmarshaler).UnmarshalBinary(st[:]); err != nil {
		panic("crypto/sha256 state: " + err.Error())
	}
	d.Write(p)
	b, err := d.(encoding.BinaryMarshaler).MarshalBinary()
	if err != nil || len(b) < 36 {
		panic("crypto/sha256 state: " + err.Error())
	}
	for i := range h {
		h[i] = binary.BigEndian.Uint32(b[4+4*i:])
	}
}

// laneStream is one message's digest and the piece of it at hand.
type laneStream struct {
	d    laneDigest
	data []byte
}

// laneKernel hashes the whole blocks of several messages at once.
type laneKernel struct {
	name  string
	lanes int
	// min is the fewest messages with whole blocks that make a call worth it; with fewer
	// they are hashed one after the other.
	min  int
	hash func(ss []*laneStream, blocks int)
}

// step hashes what it can of the streams' pieces: the whole blocks they all have, at
// once (up to k.lanes of them), and the rest of each piece shorter than a block. Afterwards each piece is either
// used up or has a block or more left (to go with the next pieces of the others), and
// at least one is used up.
func (k *laneKernel) step(ss []*laneStream, ready []*laneStream) {
	ready = ready[:0]
	for _, s := range ss {
		s.data = s.d.align(s.data)
		if s.d.nx == 0 && len(s.data) >= 64 {
			ready = append(ready, s)
		}
	}
	ready = ready[:min(len(ready), k.lanes)] // the others wait for the next step
	if len(ready) >= k.min {
		n := len(ready[0].data) / 64
		for _, s := range ready[1:] {
			n = min(n, len(s.data)/64)
		}
		k.hash(ready, n)
		for _, s := range ready {
			s.d.len += uint64(64 * n)
			s.data = s.data[64*n:]
		}
	} else {
		for _, s := range ready {
			s.d.write(s.data)
			s.data = nil
		}
	}
	for _, s := range ss {
		if len(s.data) < 64 {
			s.d.write(s.data)
			s.data = nil
		}
	}
}

// kernelSHA2: two messages on the SHA extensions.
var kernelSHA2 = laneKernel{name: "2 lanes (SHA extensions)", lanes: 2, min: 2, hash: func(ss []*laneStream, n int) {
	blockLanes2(&ss[0].d.h, &ss[1].d.h, &ss[0].data[0], &ss[1].data[0], n)
}}

// idleLane is what the lanes of blockLanes8 without a message hash (and throw away).
var idleLane [1024 * 64]byte

// kernelAVX2: eight messages in AVX2 registers. With fewer than four, one after the
// other is faster (crypto/sha256 runs at about 2.5/8 of blockLanes8's eight lanes).
var kernelAVX2 = laneKernel{name: "8 lanes (AVX2)", lanes: 8, min: 4, hash: func(ss []*laneStream, n int) {
	var st [8][8]uint32
	var ptrs [8]*byte
	for i := range ptrs {
		ptrs[i] = &idleLane[0]
		if i < len(ss) {
			ptrs[i] = &ss[i].data[0]
			for w := range st {
				st[w][i] = ss[i].d.h[w]
			}
		}
	}
	for done := 0; done < n; {
		c := n - done
		if len(ss) < 8 {
			c = min(c, len(idleLane)/64) // the idle lanes read idleLane
		}
		blockLanes8(&st, &ptrs, c)
		if done += c; done < n {
			for i := range ss {
				ptrs[i] = &ss[i].data[64*done]
			}
		}
	}
	for i := range ss {
		for w := range st {
			ss[i].d.h[w] = st[w][i]
		}
	}
}}

// godebugOff reports whether GODEBUG turns off the CPU feature name for Go's own code
// (cpu.name=off or cpu.all=off): then the lanes follow, so that a run that measures a
// CPU without SHA extensions that way measures it throughout.
func godebugOff(name string) bool {
	for _, kv := range strings.Split(os.Getenv("GODEBUG"), ",") {
		if kv == "cpu."+name+"=off" || kv == "cpu.all=off" {
			return true
		}
	}
	return false
}
