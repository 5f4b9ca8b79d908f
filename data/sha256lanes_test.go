package data

import (
	"bytes"
	"crypto/sha256"
	"math/rand/v2"
	"os"
	"os/exec"
	"testing"
)

// The assembly is what its generator writes (go generate ./data after changing it).
func TestGeneratedAssemblyIsCurrent(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	want, err := exec.Command("go", "run", "sha256lanes_gen.go").Output()
	if err != nil {
		t.Fatalf("go run sha256lanes_gen.go: %v", err)
	}
	got, err := os.ReadFile("sha256lanes_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("sha256lanes_amd64.s is not what sha256lanes_gen.go writes: run go generate ./data")
	}
}

// kernels are the lane kernels this CPU can run.
func kernels() []*laneKernel {
	var ks []*laneKernel
	if haveSHANI {
		ks = append(ks, &kernelSHA2)
	}
	if haveAVX2 {
		ks = append(ks, &kernelAVX2)
	}
	return ks
}

// hashStreams hashes msgs as hashLanes does, each cut into pieces of its step's length
// (plus one), with kernel k: the pieces of different lengths meet in every way.
func hashStreams(k *laneKernel, msgs [][]byte, steps []int) [][32]byte {
	ss := make([]laneStream, len(msgs))
	rest := make([][]byte, len(msgs))
	for i := range ss {
		ss[i].d.reset()
		rest[i] = msgs[i]
	}
	ready := make([]*laneStream, 0, len(ss))
	for {
		var open []*laneStream
		for i := range ss {
			if len(ss[i].data) == 0 && len(rest[i]) > 0 {
				n := min(len(rest[i]), steps[i]+1)
				ss[i].data, rest[i] = rest[i][:n], rest[i][n:]
			}
			if len(ss[i].data) > 0 {
				open = append(open, &ss[i])
			}
		}
		if len(open) == 0 {
			break
		}
		k.step(open, ready)
	}
	sums := make([][32]byte, len(ss))
	for i := range ss {
		ss[i].d.sum(&sums[i])
	}
	return sums
}

// Every split of up to eight messages into pieces, hashed several at a time where they
// have whole blocks and one at a time elsewhere, gives crypto/sha256's digests.
func FuzzLaneDigests(f *testing.F) {
	f.Add([]byte("abc"), uint8(2), uint16(1), uint16(1))
	f.Add(bytes.Repeat([]byte{7}, 5000), uint8(8), uint16(63), uint16(640))
	f.Add(bytes.Repeat([]byte{9}, 70000), uint8(5), uint16(65000), uint16(64))
	f.Fuzz(func(t *testing.T, data []byte, count uint8, stepA, stepB uint16) {
		ks := kernels()
		if len(ks) == 0 {
			t.Skip("no lane kernel on this CPU")
		}
		n := int(count%8) + 1
		msgs := make([][]byte, n)
		steps := make([]int, n)
		for i := range msgs {
			// message i: a slice of data of its own length, starting at its own offset
			off := (i * 131) % (len(data) + 1)
			end := min(len(data), off+len(data)*(i+1)/n)
			msgs[i] = data[off:end]
			steps[i] = int(stepA)
			if i%2 == 1 {
				steps[i] = int(stepB)
			}
		}
		for _, k := range ks {
			for i, got := range hashStreams(k, msgs, steps) {
				if got != sha256.Sum256(msgs[i]) {
					t.Fatalf("%s: message %d (%d bytes, pieces of %d) differs from crypto/sha256", k.name, i, len(msgs[i]), steps[i]+1)
				}
			}
		}
	})
}

func TestLaneDigestKnownAnswer(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, sha := range []bool{false, true} {
		if sha && !haveSHANI {
			continue
		}
		old := haveSHANI
		setSHANI(sha) // blockOne through crypto/sha256, then on the SHA extensions
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
				t.Errorf("SHA extensions %v, %d bytes: digest differs from crypto/sha256", sha, n)
			}
		}
		setSHANI(old)
	}
}

// Eight messages of many blocks through each kernel at once, against crypto/sha256.
func TestKernelsKnownAnswer(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, k := range kernels() {
		for _, lanes := range []int{k.min, k.lanes} {
			msgs := make([][]byte, lanes)
			for i := range msgs {
				msgs[i] = make([]byte, 64*(3000+i)) // more than idleLane holds
				for j := range msgs[i] {
					msgs[i][j] = byte(rng.Uint32())
				}
			}
			steps := make([]int, lanes)
			for i := range steps {
				steps[i] = 1 << 20
			}
			for i, got := range hashStreams(k, msgs, steps) {
				if got != sha256.Sum256(msgs[i]) {
					t.Fatalf("%s, %d lanes: message %d differs", k.name, lanes, i)
				}
			}
		}
	}
}

func BenchmarkLanes(b *testing.B) {
	m := make([]byte, 128<<10)
	b.Run("crypto/sha256", func(b *testing.B) {
		b.SetBytes(int64(len(m)))
		for b.Loop() {
			sha256.Sum256(m)
		}
	})
	for _, k := range kernels() {
		b.Run(k.name, func(b *testing.B) {
			ss := make([]laneStream, k.lanes)
			open := make([]*laneStream, k.lanes)
			ready := make([]*laneStream, 0, k.lanes)
			b.SetBytes(int64(k.lanes * len(m)))
			for b.Loop() {
				for i := range ss {
					ss[i].d.reset()
					ss[i].data = m
					open[i] = &ss[i]
				}
				k.step(open, ready)
			}
		})
	}
}
