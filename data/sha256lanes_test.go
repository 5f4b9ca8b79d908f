package data

import (
	"bytes"
	"crypto/sha256"
	"math/rand/v2"
	"testing"
)

// Every split of two messages into pieces, hashed two lanes at a time where both have
// whole blocks and one lane at a time elsewhere, gives crypto/sha256's digests.
func FuzzLaneDigests(f *testing.F) {
	f.Add([]byte("abc"), []byte(""), uint16(1), uint16(1))
	f.Add(bytes.Repeat([]byte{7}, 1000), bytes.Repeat([]byte{9}, 4097), uint16(63), uint16(640))
	f.Fuzz(func(t *testing.T, a, b []byte, stepA, stepB uint16) {
		if !haveLanes {
			t.Skip("no SHA extensions")
		}
		var da, db laneDigest
		da.reset()
		db.reset()
		pa, pb := a, b
		piece := func(p []byte, step uint16) ([]byte, []byte) {
			n := min(len(p), int(step)+1)
			return p[:n], p[n:]
		}
		var ca, cb []byte // the pieces being hashed
		for len(pa)+len(ca) > 0 || len(pb)+len(cb) > 0 {
			if len(ca) == 0 {
				ca, pa = piece(pa, stepA)
			}
			if len(cb) == 0 {
				cb, pb = piece(pb, stepB)
			}
			if len(ca) > 0 && len(cb) > 0 {
				ca, cb = writeTwo(&da, &db, ca, cb)
			}
			if len(ca) > 0 && len(ca) < 64 || len(cb) == 0 {
				da.write(ca)
				ca = nil
			}
			if len(cb) > 0 && len(cb) < 64 || len(ca) == 0 {
				db.write(cb)
				cb = nil
			}
		}
		var ga, gb [32]byte
		da.sum(&ga)
		db.sum(&gb)
		if ga != sha256.Sum256(a) || gb != sha256.Sum256(b) {
			t.Fatalf("lane digests differ from crypto/sha256 (len %d step %d, len %d step %d)", len(a), stepA, len(b), stepB)
		}
	})
}

func TestLaneDigestKnownAnswer(t *testing.T) {
	if !haveLanes {
		t.Skip("no SHA extensions")
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{0, 1, 55, 56, 63, 64, 65, 119, 120, 128, 1000, 1 << 17} {
		m := make([]byte, n)
		for i := range m {
			m[i] = byte(rng.Uint32())
		}
		var d laneDigest
		d.reset()
		d.write(m)
		var got [32]byte
		d.sum(&got)
		if got != sha256.Sum256(m) {
			t.Errorf("%d bytes: digest differs from crypto/sha256", n)
		}
	}
}

func BenchmarkLanes(b *testing.B) {
	if !haveLanes {
		b.Skip("no SHA extensions")
	}
	pa, pb := make([]byte, 128<<10), make([]byte, 128<<10)
	b.Run("crypto/sha256", func(b *testing.B) {
		b.SetBytes(int64(len(pa)))
		for b.Loop() {
			sha256.Sum256(pa)
		}
	})
	b.Run("one lane", func(b *testing.B) {
		b.SetBytes(int64(len(pa)))
		var d laneDigest
		for b.Loop() {
			d.reset()
			d.write(pa)
		}
	})
	b.Run("two lanes", func(b *testing.B) {
		b.SetBytes(int64(2 * len(pa)))
		var da, db laneDigest
		for b.Loop() {
			da.reset()
			db.reset()
			writeTwo(&da, &db, pa, pb)
		}
	})
}
