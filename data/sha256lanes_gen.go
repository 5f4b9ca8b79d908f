//go:build ignore

// sha256lanes_gen writes sha256lanes_amd64.s: SHA-256 block functions on the x86 SHA
// extensions for one message and for two messages at once. Two independent messages
// interleaved keep the SHA unit busy while each message's rounds wait on the previous
// ones (SHA256RNDS2 has a latency of several cycles and each round depends on the last).
//
//	go generate ./data   (go run sha256lanes_gen.go sha256lanes_amd64.s)
package main

import (
	"fmt"
	"os"
	"strings"
)

var out strings.Builder

func p(format string, a ...any) { fmt.Fprintf(&out, "\t"+format+"\n", a...) }

// lane is one message's registers: the state (ABEF, CDGH), the four message words
// being scheduled, and where its block pointer and saved state live.
type lane struct {
	s0, s1 string
	m      [4]string
	ptr    string
	save   int // frame offset of the saved ABEF, CDGH
	state  string
}

const (
	msg  = "X0" // SHA256RNDS2's implicit operand
	tmp  = "X13"
	mask = "X14"
	k    = "X15"
)

var k256 = []uint32{
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
	0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
	0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
	0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
	0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
}

// loadState turns H0..H7 into the ABEF/CDGH layout SHA256RNDS2 works on.
func loadState(l lane) {
	p("MOVOU (%s), %s", l.state, l.s0)
	p("MOVOU 16(%s), %s", l.state, l.s1)
	p("PSHUFD $0xb1, %s, %s", l.s0, l.s0)
	p("PSHUFD $0x1b, %s, %s", l.s1, l.s1)
	p("MOVO %s, %s", l.s0, tmp)
	p("PALIGNR $0x08, %s, %s", l.s1, l.s0)
	p("PBLENDW $0xf0, %s, %s", tmp, l.s1)
}

func storeState(l lane) {
	p("PSHUFD $0x1b, %s, %s", l.s0, tmp)
	p("PSHUFD $0xb1, %s, %s", l.s1, l.s1)
	p("MOVO %s, %s", tmp, msg)
	p("PBLENDW $0xf0, %s, %s", l.s1, msg)
	p("PALIGNR $0x08, %s, %s", tmp, l.s1)
	p("MOVOU %s, (%s)", msg, l.state)
	p("MOVOU %s, 16(%s)", l.s1, l.state)
}

// rounds emits the four rounds r*4..r*4+3 of one lane, with the message schedule for
// later rounds (the order of Intel's reference code for the SHA extensions).
func rounds(l lane, r int) {
	m := l.m[r&3]
	if r < 4 {
		p("MOVOU %d(%s), %s", 16*r, l.ptr, m)
		p("PSHUFB %s, %s", mask, m)
	}
	p("MOVO %s, %s", m, msg)
	p("PADDD %s, %s", k, msg)
	p("SHA256RNDS2 %s, %s, %s", msg, l.s0, l.s1)
	if r >= 3 && r < 15 {
		next, prev := l.m[(r+1)&3], l.m[(r+3)&3]
		p("MOVO %s, %s", m, tmp)
		p("PALIGNR $0x04, %s, %s", prev, tmp)
		p("PADDD %s, %s", tmp, next)
		p("SHA256MSG2 %s, %s", m, next)
	}
	p("PSHUFD $0x0e, %s, %s", msg, msg)
	p("SHA256RNDS2 %s, %s, %s", msg, l.s1, l.s0)
	if r >= 1 && r < 13 {
		p("SHA256MSG1 %s, %s", m, l.m[(r+3)&3])
	}
}

func function(name string, lanes []lane) {
	frame := 32 * len(lanes)
	if len(lanes) == 1 {
		fmt.Fprintf(&out, "\n// func %s(h *[8]uint32, p *byte, blocks int)\n", name)
		fmt.Fprintf(&out, "TEXT ·%s(SB), NOSPLIT, $%d-24\n", name, frame)
		p("MOVQ h+0(FP), DI")
		p("MOVQ p+8(FP), SI")
		p("MOVQ blocks+16(FP), CX")
	} else {
		fmt.Fprintf(&out, "\n// func %s(ha, hb *[8]uint32, pa, pb *byte, blocks int)\n", name)
		fmt.Fprintf(&out, "TEXT ·%s(SB), NOSPLIT, $%d-40\n", name, frame)
		p("MOVQ ha+0(FP), DI")
		p("MOVQ hb+8(FP), R8")
		p("MOVQ pa+16(FP), SI")
		p("MOVQ pb+24(FP), R9")
		p("MOVQ blocks+32(FP), CX")
	}
	p("TESTQ CX, CX")
	p("JEQ done")
	p("MOVOU flipMask<>(SB), %s", mask)
	p("LEAQ k256<>(SB), AX")
	for _, l := range lanes {
		loadState(l)
	}
	fmt.Fprintf(&out, "loop:\n")
	for _, l := range lanes {
		p("MOVOU %s, %d(SP)", l.s0, l.save)
		p("MOVOU %s, %d(SP)", l.s1, l.save+16)
	}
	for r := 0; r < 16; r++ {
		p("MOVOU %d(AX), %s", 16*r, k)
		for _, l := range lanes {
			rounds(l, r)
		}
	}
	for _, l := range lanes {
		p("MOVOU %d(SP), %s", l.save, tmp)
		p("PADDD %s, %s", tmp, l.s0)
		p("MOVOU %d(SP), %s", l.save+16, tmp)
		p("PADDD %s, %s", tmp, l.s1)
		p("ADDQ $64, %s", l.ptr)
	}
	p("DECQ CX")
	p("JNE loop")
	for _, l := range lanes {
		storeState(l)
	}
	fmt.Fprintf(&out, "done:\n")
	p("RET")
}

// lanes8 emits blockLanes8: eight messages at once in the eight 32-bit lanes of AVX2
// registers, for CPUs without the SHA extensions. st is the eight states transposed
// (st[word][lane]); ptrs the eight messages.
func lanes8() {
	const wBase = 0 // W[0..63], 32 bytes each, at wBase(SP)
	fmt.Fprintf(&out, "\n// func blockLanes8(st *[8][8]uint32, ptrs *[8]*byte, blocks int)\n")
	fmt.Fprintf(&out, "// Requires: AVX, AVX2\n")
	fmt.Fprintf(&out, "TEXT ·blockLanes8(SB), 0, $2048-24\n")
	p("MOVQ st+0(FP), DI")
	p("MOVQ ptrs+8(FP), SI")
	p("MOVQ blocks+16(FP), CX")
	p("TESTQ CX, CX")
	p("JEQ done8")
	ptrs := []string{"AX", "BX", "DX", "R8", "R9", "R10", "R11", "R12"}
	for i, r := range ptrs {
		p("MOVQ %d(SI), %s", 8*i, r)
	}
	p("LEAQ k256x8<>(SB), R13")
	fmt.Fprintf(&out, "loop8:\n")
	// The message: words 0-7 and 8-15 of each lane, transposed so that a register holds
	// one word of all eight lanes, in big-endian order.
	for half := 0; half < 2; half++ {
		for i, r := range ptrs {
			p("VMOVDQU %d(%s), Y%d", 32*half, r, i)
		}
		// 8x8 transpose of 32-bit words: Y0..Y7 rows in, columns out in Y0..Y7.
		for i := 0; i < 8; i += 2 {
			p("VPUNPCKLDQ Y%d, Y%d, Y%d", i+1, i, 8+i)
			p("VPUNPCKHDQ Y%d, Y%d, Y%d", i+1, i, 9+i)
		}
		// Y8=t0 Y9=t1 Y10=t2 Y11=t3 Y12=t4 Y13=t5 Y14=t6 Y15=t7
		p("VPUNPCKLQDQ Y10, Y8, Y0")  // u0
		p("VPUNPCKHQDQ Y10, Y8, Y1")  // u1
		p("VPUNPCKLQDQ Y11, Y9, Y2")  // u2
		p("VPUNPCKHQDQ Y11, Y9, Y3")  // u3
		p("VPUNPCKLQDQ Y14, Y12, Y4") // u4
		p("VPUNPCKHQDQ Y14, Y12, Y5") // u5
		p("VPUNPCKLQDQ Y15, Y13, Y6") // u6
		p("VPUNPCKHQDQ Y15, Y13, Y7") // u7
		for i := 0; i < 4; i++ {
			p("VPERM2I128 $0x20, Y%d, Y%d, Y%d", 4+i, i, 8+i)
			p("VPERM2I128 $0x31, Y%d, Y%d, Y%d", 4+i, i, 12+i)
		}
		// Y8..Y11 = words 0..3, Y12..Y15 = words 4..7 of this half
		for i := 0; i < 8; i++ {
			p("VPSHUFB flipMask8<>(SB), Y%d, Y%d", 8+i, 8+i)
			p("VMOVDQU Y%d, %d(SP)", 8+i, wBase+32*(8*half+i))
		}
	}
	for _, r := range ptrs {
		p("ADDQ $64, %s", r)
	}
	// The state: a..h in Y0..Y7, renamed round by round instead of moved.
	for i := 0; i < 8; i++ {
		p("VMOVDQU %d(DI), Y%d", 32*i, i)
	}
	reg := []int{0, 1, 2, 3, 4, 5, 6, 7}
	const x0, x1, x2, x3, x4, x5, x6 = "Y8", "Y9", "Y10", "Y11", "Y12", "Y13", "Y14"
	y := func(i int) string { return fmt.Sprintf("Y%d", i) }
	// sigma: x(out) = ROTR(r1, in) ^ ROTR(r2, in) ^ ROTR|SHR(r3, in)
	sigma := func(in, out, t string, r1, r2, r3 int, shr bool) {
		p("VPSRLD $%d, %s, %s", r1, in, out)
		p("VPSLLD $%d, %s, %s", 32-r1, in, t)
		p("VPXOR %s, %s, %s", t, out, out)
		p("VPSRLD $%d, %s, %s", r2, in, t)
		p("VPXOR %s, %s, %s", t, out, out)
		p("VPSLLD $%d, %s, %s", 32-r2, in, t)
		p("VPXOR %s, %s, %s", t, out, out)
		p("VPSRLD $%d, %s, %s", r3, in, t)
		p("VPXOR %s, %s, %s", t, out, out)
		if !shr {
			p("VPSLLD $%d, %s, %s", 32-r3, in, t)
			p("VPXOR %s, %s, %s", t, out, out)
		}
	}
	for t := 0; t < 64; t++ {
		if t >= 16 {
			// W[t] = σ1(W[t-2]) + W[t-7] + σ0(W[t-15]) + W[t-16]
			p("VMOVDQU %d(SP), %s", wBase+32*(t-15), x3)
			sigma(x3, x4, x5, 7, 18, 3, true)
			p("VPADDD %d(SP), %s, %s", wBase+32*(t-16), x4, x4)
			p("VPADDD %d(SP), %s, %s", wBase+32*(t-7), x4, x4)
			p("VMOVDQU %d(SP), %s", wBase+32*(t-2), x3)
			sigma(x3, x6, x5, 17, 19, 10, true)
			p("VPADDD %s, %s, %s", x6, x4, x4)
			p("VMOVDQU %s, %d(SP)", x4, wBase+32*t)
		}
		a, b, c, d, e, f, g, h := y(reg[0]), y(reg[1]), y(reg[2]), y(reg[3]), y(reg[4]), y(reg[5]), y(reg[6]), y(reg[7])
		// T1 = h + Σ1(e) + Ch(e,f,g) + K[t] + W[t], in h
		sigma(e, x0, x1, 6, 11, 25, false)
		p("VPXOR %s, %s, %s", g, f, x1)
		p("VPAND %s, %s, %s", e, x1, x1)
		p("VPXOR %s, %s, %s", g, x1, x1)
		p("VPADDD %s, %s, %s", x0, h, h)
		p("VPADDD %s, %s, %s", x1, h, h)
		p("VPADDD %d(SP), %s, %s", wBase+32*t, h, h)
		p("VPADDD %d(R13), %s, %s", 32*t, h, h)
		p("VPADDD %s, %s, %s", h, d, d) // e' = d + T1
		// a' = T1 + Σ0(a) + Maj(a,b,c), in h
		sigma(a, x0, x1, 2, 13, 22, false)
		p("VPXOR %s, %s, %s", b, a, x1)
		p("VPXOR %s, %s, %s", c, b, x2)
		p("VPAND %s, %s, %s", x2, x1, x1)
		p("VPXOR %s, %s, %s", b, x1, x1)
		p("VPADDD %s, %s, %s", x0, h, h)
		p("VPADDD %s, %s, %s", x1, h, h)
		// (a..h) <- (T1+T2, a, b, c, d+T1, e, f, g)
		reg = []int{reg[7], reg[0], reg[1], reg[2], reg[3], reg[4], reg[5], reg[6]}
	}
	// After 64 renamings the names are back where they started.
	for i := 0; i < 8; i++ {
		p("VPADDD %d(DI), Y%d, Y%d", 32*i, reg[i], reg[i])
		p("VMOVDQU Y%d, %d(DI)", reg[i], 32*i)
	}
	p("DECQ CX")
	p("JNE loop8")
	p("VZEROUPPER")
	fmt.Fprintf(&out, "done8:\n")
	p("RET")
}

func main() {
	out.WriteString("// Code generated by sha256lanes_gen.go; DO NOT EDIT.\n\n//go:build amd64 && !purego\n\n#include \"textflag.h\"\n\n")
	out.WriteString("DATA flipMask<>+0(SB)/8, $0x0405060700010203\nDATA flipMask<>+8(SB)/8, $0x0c0d0e0f08090a0b\nGLOBL flipMask<>(SB), RODATA|NOPTR, $16\n\n")
	for i, v := range k256 {
		fmt.Fprintf(&out, "DATA k256<>+%d(SB)/4, $0x%08x\n", 4*i, v)
	}
	out.WriteString("GLOBL k256<>(SB), RODATA|NOPTR, $256\n\n")
	for i := 0; i < 2; i++ {
		fmt.Fprintf(&out, "DATA flipMask8<>+%d(SB)/8, $0x0405060700010203\n", 16*i)
		fmt.Fprintf(&out, "DATA flipMask8<>+%d(SB)/8, $0x0c0d0e0f08090a0b\n", 16*i+8)
	}
	out.WriteString("GLOBL flipMask8<>(SB), RODATA|NOPTR, $32\n\n")
	for i, v := range k256 { // each constant in all eight lanes
		for l := 0; l < 8; l++ {
			fmt.Fprintf(&out, "DATA k256x8<>+%d(SB)/4, $0x%08x\n", 32*i+4*l, v)
		}
	}
	out.WriteString("GLOBL k256x8<>(SB), RODATA|NOPTR, $2048\n")

	a := lane{s0: "X1", s1: "X2", m: [4]string{"X3", "X4", "X5", "X6"}, ptr: "SI", save: 0, state: "DI"}
	b := lane{s0: "X7", s1: "X8", m: [4]string{"X9", "X10", "X11", "X12"}, ptr: "R9", save: 32, state: "R8"}
	function("blockLane", []lane{a})
	function("blockLanes2", []lane{a, b})
	lanes8()
	out.WriteString(`
// func cpuidSHA() bool: the SHA extensions (CPUID leaf 7 EBX bit 29) and the SSE levels
// the code uses besides (leaf 1 ECX: SSSE3 bit 9, SSE4.1 bit 19).
TEXT ·cpuidSHA(SB), NOSPLIT, $0-1
	MOVL $0, AX
	CPUID
	CMPL AX, $7
	JLT no
	MOVL $1, AX
	CPUID
	ANDL $0x80200, CX
	CMPL CX, $0x80200
	JNE no
	MOVL $7, AX
	MOVL $0, CX
	CPUID
	SHRL $29, BX
	ANDL $1, BX
	MOVB BX, ret+0(FP)
	RET
no:
	MOVB $0, ret+0(FP)
	RET

// func cpuidAVX2() bool: AVX2 (CPUID leaf 7 EBX bit 5), AVX and OSXSAVE (leaf 1 ECX bits
// 28, 27), and the OS saving the YMM registers (XCR0 bits 1 and 2).
TEXT ·cpuidAVX2(SB), NOSPLIT, $0-1
	MOVL $0, AX
	CPUID
	CMPL AX, $7
	JLT noavx
	MOVL $1, AX
	CPUID
	ANDL $0x18000000, CX
	CMPL CX, $0x18000000
	JNE noavx
	MOVL $0, CX
	XGETBV
	ANDL $6, AX
	CMPL AX, $6
	JNE noavx
	MOVL $7, AX
	MOVL $0, CX
	CPUID
	SHRL $5, BX
	ANDL $1, BX
	MOVB BX, ret+0(FP)
	RET
noavx:
	MOVB $0, ret+0(FP)
	RET
`)
	if len(os.Args) > 1 {
		if err := os.WriteFile(os.Args[1], []byte(out.String()), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	os.Stdout.WriteString(out.String())
}
