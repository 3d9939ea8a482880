package main

import (
	"github.com/mmcloughlin/avo/attr"
	"github.com/mmcloughlin/avo/ir"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The vnni family's single-column kernels: AVX-512 VNNI, int8 activations
// (prepared once per product by Vec.Set) times unsigned weight bytes with
// VPDPBUSD. Accumulator lane k of a four-group block holds group k/4's
// partial dot; the row's scales times the activation scales are expanded
// to those lanes by VPERMPS. See docs/PERFORMANCE.md ("Kernels").
func vnniFamily(g *gen) {
	t := vnniTables{
		// Lane → group maps for expanding per-group scales across
		// accumulator lanes: idx4a/idx4b four lanes per group (groups 0–3,
		// 4–7), idx8{0..3} eight lanes per group (groups 2b, 2b+1).
		idx4a: g.idx4("idx4a", 0, 1, 2, 3), idx4b: g.idx4("idx4b", 4, 5, 6, 7),
		idx8: [4]Mem{g.idx4("idx80", 0, 0, 1, 1), g.idx4("idx81", 2, 2, 3, 3),
			g.idx4("idx82", 4, 4, 5, 5), g.idx4("idx83", 6, 6, 7, 7)},
		// rowperm puts row r of the sixteen-row reduction (lane 4j+k holds
		// row j+4k) in lane r.
		rowperm: g.static32("rowperm", 0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15),
	}
	g.q4vnni512(t)
	g.q4vnni512pair(t)
	g.q8vnni512(t)
	g.quantize512()
	g.vnniBatch(t)
}

// vnniTables are the family's file-static constants.
type vnniTables struct {
	idx4a, idx4b, rowperm Mem
	idx8                  [4]Mem
}

// idx4 is a 64-byte lane → group map: four lanes each for groups a, b, c, d.
func (g *gen) idx4(name string, a, b, c, d uint32) Mem {
	var ws []uint32
	for _, v := range []uint32{a, b, c, d} {
		ws = append(ws, v, v, v, v)
	}
	return g.static32(name, ws...)
}

// vpdpbusd is VPDPBUSD src, u, acc (acc += Σ4 u·src, unsigned × signed
// bytes), which avo v0.5.0's instruction table lacks; the Go assembler
// encodes its EVEX form, so it goes into the file as a plain instruction
// with its operands' data flow spelled out for avo's liveness pass.
func (g *gen) vpdpbusd(src, u, acc Op) {
	g.Instruction(&ir.Instruction{
		Opcode:   "VPDPBUSD",
		Operands: []Op{src, u, acc},
		Inputs:   []Op{src, u, acc},
		Outputs:  []Op{acc},
		ISA:      []string{"AVX512_VNNI"},
	})
}

// sixteenRows runs row(acc) for sixteen rows, reducing as it goes, and
// adds the sums into y[0:16] at y, advancing y. Accumulators Z7–Z11; a
// row costs about 3 shuffle/add instructions of the reduction instead of
// 8 for its own horizontal sum, and y is updated with one 16-float add.
// The tree pairs accumulators (rows a|b → 8+8 lanes, then 4 rows × 4
// lanes, 8 rows × 2, 16 rows × 1); lane 4j+k of the result holds row
// j+4k, rowperm (Z14) puts row r in lane r. Scratch: Z12, Z13.
func (g *gen) sixteenRows(row func(acc VecPhysical), y Register) {
	zs := []VecPhysical{Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8, Z9, Z10, Z11}
	red := func(level int, a, b VecPhysical) {
		imm := [][2]uint8{{0x44, 0xee}, {0x88, 0xdd}, {0x44, 0xee}, {0x88, 0xdd}}[level]
		if level < 2 {
			g.VSHUFF64X2(U8(imm[0]), b, a, Z12)
			g.VSHUFF64X2(U8(imm[1]), b, a, Z13)
		} else {
			g.VSHUFPS(U8(imm[0]), b, a, Z12)
			g.VSHUFPS(U8(imm[1]), b, a, Z13)
		}
		g.VADDPS(Z13, Z12, a)
	}
	// tree reduces n rows into accumulator r (r+1.. as scratch).
	var tree func(n, r int)
	tree = func(n, r int) {
		if n == 1 {
			row(zs[r])
			return
		}
		tree(n/2, r)
		tree(n/2, r+1)
		red(map[int]int{2: 0, 4: 1, 8: 2, 16: 3}[n], zs[r], zs[r+1])
	}
	tree(16, 7)
	g.VPERMPS(Z7, Z14, Z7)
	g.VADDPS(m(y, 0), Z7, Z7)
	g.VMOVUPS(Z7, m(y, 0))
	g.ADDQ(U8(64), y)
}

// q4Block handles four Q4_0 groups (64 data bytes) at off(d): nibbles q
// (0..15) as unsigned bytes against the int8 activation halves xl/xh,
// seeded with the −8·Σx bias, then converted and scaled per lane by sv.
func (g *gen) q4Block(d Register, off int, k OpmaskPhysical, xl, xh, bias, sv, acc VecPhysical) {
	g.VMOVDQU32_Z(m(d, off), k, Z3)
	g.VPSRLW(U8(4), Z3, Z4)
	g.VPANDD(Z31, Z3, Z3)
	g.VPANDD(Z31, Z4, Z4)
	g.VMOVDQA32(bias, Z5)
	g.vpdpbusd(xl, Z3, Z5)
	g.vpdpbusd(xh, Z4, Z5)
	g.VCVTDQ2PS(Z5, Z5)
	g.VFMADD231PS(sv, Z5, acc)
}

// q4vnniRow computes one Q4_0 row (groups > 4) of the tile at s (scales)
// and d (data) into acc and advances s, d. The prefetches run ahead in
// the tile stream (tiles of a stripe are contiguous, so near a tile's end
// they fetch the next tile's scales and data): into L1 2 KiB ahead, and
// into L2 8 KiB ahead, which keeps more DRAM lines in flight than the L1
// miss buffers allow; docs/PERFORMANCE.md ("Decode stream") has the A/B
// (Sapphire Rapids: 8.9 → 11.0 GB/s from DRAM on one core, the plain read
// probe 9.6).
func (g *gen) q4vnniRow(s, d Register) func(VecPhysical) {
	return func(acc VecPhysical) {
		g.PREFETCHT0(m(d, 2048))
		g.PREFETCHT0(m(d, 2112))
		g.PREFETCHT1(m(d, 8192))
		g.PREFETCHT1(m(d, 8256))
		g.VCVTPH2PS_Z(m(s, 0), K3, Y0)
		g.VMULPS(Y26, Y0, Y0)
		g.VPERMPS(Z0, Z27, Z1)
		g.VPERMPS(Z0, Z28, Z2)
		g.VXORPS(acc, acc, acc)
		g.q4Block(d, 0, K1, Z20, Z21, Z22, Z1, acc)
		g.q4Block(d, 64, K2, Z23, Z24, Z25, Z2, acc)
		g.ADDQ(R10, s)
		g.ADDQ(R11, d)
	}
}

// kmask loads argument name into mask register k (through AX).
func (g *gen) kmask(name string, k OpmaskPhysical) {
	g.arg(name, RAX)
	g.KMOVW(EAX, k)
}

// q4vnniActs loads the activation: xl, xh, c4 as two 64-byte blocks
// (Z20/Z23, Z21/Z24, Z22/Z25), masked by K1/K2 when masked, and dx into
// Y26 (masked by K3).
func (g *gen) q4vnniActs(masked bool) {
	for i, name := range []string{"xl", "xh", "c4"} {
		g.arg(name, RAX)
		lo, hi := []VecPhysical{Z20, Z21, Z22}[i], []VecPhysical{Z23, Z24, Z25}[i]
		if masked {
			g.VMOVDQU32_Z(m(RAX, 0), K1, lo)
			g.VMOVDQU32_Z(m(RAX, 64), K2, hi)
		} else {
			g.VMOVDQU32(m(RAX, 0), lo)
			g.VMOVDQU32(m(RAX, 64), hi)
		}
	}
	g.arg("dx", RAX)
	if masked {
		g.VMOVUPS_Z(m(RAX, 0), K3, Y26)
	} else {
		g.VMOVUPS(m(RAX, 0), Y26)
	}
}

// vnniRowOut reduces Z6 and adds it into y at R9, advancing SI, DI, R9
// one row, and loops to l while rows are left.
func (g *gen) vnniRowOut(l string) {
	g.hsum(512, 6, 7)
	g.VADDSS(m(R9, 0), X6, X6)
	g.VMOVSS(X6, m(R9, 0))
	g.ADDQ(R10, RSI)
	g.ADDQ(R11, RDI)
	g.ADDQ(U8(4), R9)
	g.DECQ(RCX)
	g.JNZ(lab(l))
}

func (g *gen) q4vnni512(t vnniTables) {
	g.text("q4vnni512", attr.NOSPLIT, 0, "func(sc, data *byte, rows, groups int, xl, xh *int8, c4 *int32, dx, y *float32, k0, k1, kg int)",
		"q4vnni512 adds one Q4_0 tile's rows times one int8 activation column",
		"into y (the vnni path's Dot); k0, k1 mask the row's two 64-byte blocks",
		"and kg its groups (vnniBlockMasks).")
	g.arg("sc", RSI)
	g.arg("data", RDI)
	g.arg("rows", RCX)
	g.arg("groups", R8)
	g.arg("y", R9)
	g.kmask("k0", K1)
	g.kmask("k1", K2)
	g.kmask("kg", K3)
	g.MOVL(U32(0x0f0f0f0f), EAX)
	g.VPBROADCASTD(EAX, Z31)
	g.q4vnniActs(true)
	g.VMOVDQU32(t.idx4a, Z27)
	g.VMOVDQU32(t.idx4b, Z28)
	g.VMOVDQU32(t.rowperm, Z14)
	g.LEAQ(mi(R8, 0, R8, 1), R10)
	g.MOVQ(R8, R11)
	g.SHLQ(U8(4), R11)
	g.CMPQ(R8, U8(4))
	g.JGT(lab("q4vnni8"))
	// Up to four groups: one block a row.
	g.Label("q4vnni4")
	g.VCVTPH2PS_Z(m(RSI, 0), K3, Y0)
	g.VMULPS(Y26, Y0, Y0)
	g.VPERMPS(Z0, Z27, Z1)
	g.VXORPS(Z6, Z6, Z6)
	g.q4Block(RDI, 0, K1, Z20, Z21, Z22, Z1, Z6)
	g.vnniRowOut("q4vnni4")
	g.VZEROUPPER()
	g.RET()
	g.Label("q4vnni8")
	g.CMPQ(RCX, U8(16))
	g.JLT(lab("q4vnni8one"))
	g.Label("q4vnni16")
	g.sixteenRows(g.q4vnniRow(RSI, RDI), R9)
	g.SUBQ(U8(16), RCX)
	g.CMPQ(RCX, U8(16))
	g.JGE(lab("q4vnni16"))
	g.TESTQ(RCX, RCX)
	g.JZ(lab("q4vnnidone"))
	g.Label("q4vnni8one")
	g.VCVTPH2PS_Z(m(RSI, 0), K3, Y0)
	g.VMULPS(Y26, Y0, Y0)
	g.VPERMPS(Z0, Z27, Z1)
	g.VPERMPS(Z0, Z28, Z2)
	g.VXORPS(Z6, Z6, Z6)
	g.q4Block(RDI, 0, K1, Z20, Z21, Z22, Z1, Z6)
	g.q4Block(RDI, 64, K2, Z23, Z24, Z25, Z2, Z6)
	g.vnniRowOut("q4vnni8one")
	g.Label("q4vnnidone")
	g.VZEROUPPER()
	g.RET()
}

// q4vnni512pair is q4vnni512 for two full-width tiles (eight groups, rows
// a positive multiple of 16) over the same columns, walked sixteen rows of
// one, then sixteen of the other: two DRAM streams in flight instead of
// one, each with its own look-ahead (the avx2i8 path's q4avx2i8pair,
// which measured faster on Zen 3; docs/PERFORMANCE.md). Every row goes
// through the same row and reduction as in q4vnni512, so each tile's sums
// keep Dot's bits.
func (g *gen) q4vnni512pair(t vnniTables) {
	g.text("q4vnni512pair", attr.NOSPLIT, 0, "func(sc, data, scB, dataB *byte, rows int, xl, xh *int8, c4 *int32, dx, y, yB *float32)",
		"q4vnni512pair is q4vnni512 over two full-width tiles (rows a positive",
		"multiple of 16) against the same column, sixteen rows of each in turn.")
	g.arg("sc", RSI)
	g.arg("data", RDI)
	g.arg("scB", R12)
	g.arg("dataB", R13)
	g.arg("rows", RCX)
	g.arg("y", R9)
	g.arg("yB", R14)
	g.MOVL(U32(0xffff), EAX)
	g.KMOVW(EAX, K1)
	g.KMOVW(EAX, K2)
	g.MOVL(U32(0xff), EAX)
	g.KMOVW(EAX, K3)
	g.MOVL(U32(0x0f0f0f0f), EAX)
	g.VPBROADCASTD(EAX, Z31)
	g.q4vnniActs(false)
	g.VMOVDQU32(t.idx4a, Z27)
	g.VMOVDQU32(t.idx4b, Z28)
	g.VMOVDQU32(t.rowperm, Z14)
	g.MOVQ(U32(16), R10)
	g.MOVQ(U32(128), R11)
	g.Label("q4vnnipair")
	g.sixteenRows(g.q4vnniRow(RSI, RDI), R9)
	g.sixteenRows(g.q4vnniRow(R12, R13), R14)
	g.SUBQ(U8(16), RCX)
	g.JNZ(lab("q4vnnipair"))
	g.VZEROUPPER()
	g.RET()
}

// q8Block handles two Q8_0 groups (64 data bytes) at off(DI): weights w
// stored as int8 become unsigned w+128 by flipping the sign bit; the bias
// lanes hold −128·Σx to undo it.
func (g *gen) q8Block(off int, k OpmaskPhysical, x8, bias, idx, acc VecPhysical) {
	g.VMOVDQU32_Z(m(RDI, off), k, Z3)
	g.VPXORD(Z31, Z3, Z3)
	g.VMOVDQA32(bias, Z5)
	g.vpdpbusd(x8, Z3, Z5)
	g.VCVTDQ2PS(Z5, Z5)
	g.VPERMPS(Z0, idx, Z1)
	g.VFMADD231PS(Z1, Z5, acc)
}

// q8blocks are the four blocks' masks, activations, biases and maps.
var q8blocks = []struct {
	k             OpmaskPhysical
	x8, bias, idx VecPhysical
}{{K1, Z16, Z20, Z27}, {K2, Z17, Z21, Z28}, {K4, Z18, Z22, Z29}, {K5, Z19, Z23, Z30}}

func (g *gen) q8vnni512(t vnniTables) {
	g.text("q8vnni512", attr.NOSPLIT, 0, "func(sc, data *byte, rows, groups int, x8 *int8, c8 *int32, dx, y *float32, k0, k1, k2, k3, kg int)",
		"q8vnni512 adds one Q8_0 tile's rows times one int8 activation column",
		"into y (the vnni path's Dot); k0..k3 mask the row's four 64-byte blocks",
		"and kg its groups (q8Masks).")
	g.arg("sc", RSI)
	g.arg("data", RDI)
	g.arg("rows", RCX)
	g.arg("groups", R8)
	g.arg("y", R9)
	for i, name := range []string{"k0", "k1", "k2", "k3"} {
		g.kmask(name, q8blocks[i].k)
	}
	g.kmask("kg", K3)
	g.MOVL(U32(0x80808080), EAX)
	g.VPBROADCASTD(EAX, Z31)
	g.arg("x8", RAX)
	for i, b := range q8blocks {
		g.VMOVDQU32_Z(m(RAX, 64*i), b.k, b.x8)
	}
	g.arg("c8", RAX)
	for i, b := range q8blocks {
		g.VMOVDQU32_Z(m(RAX, 64*i), b.k, b.bias)
	}
	g.arg("dx", RAX)
	g.VMOVUPS_Z(m(RAX, 0), K3, Y26)
	for i, b := range q8blocks {
		g.VMOVDQU32(t.idx8[i], b.idx)
	}
	g.VMOVDQU32(t.rowperm, Z14)
	g.LEAQ(mi(R8, 0, R8, 1), R10)
	g.MOVQ(R8, R11)
	g.SHLQ(U8(5), R11)
	g.CMPQ(R8, U8(8))
	g.JNE(lab("q8vnnirow"))
	// Full-width rows sixteen at a time, prefetching into L1 like the Q4
	// row (the L2 prefetch 8 KiB ahead measured no gain here: Q8's stream
	// already reads faster than the probe).
	g.Label("q8vnni16")
	g.CMPQ(RCX, U8(16))
	g.JLT(lab("q8vnnirest"))
	g.sixteenRows(func(acc VecPhysical) {
		for i := 0; i < 4; i++ {
			g.PREFETCHT0(m(RDI, 2048+64*i))
		}
		g.VCVTPH2PS_Z(m(RSI, 0), K3, Y0)
		g.VMULPS(Y26, Y0, Y0)
		g.VXORPS(acc, acc, acc)
		for i, b := range q8blocks {
			g.q8Block(64*i, b.k, b.x8, b.bias, b.idx, acc)
		}
		g.ADDQ(R10, RSI)
		g.ADDQ(R11, RDI)
	}, R9)
	g.SUBQ(U8(16), RCX)
	g.JMP(lab("q8vnni16"))
	g.Label("q8vnnirest")
	g.TESTQ(RCX, RCX)
	g.JZ(lab("q8vnnidone"))
	// Other rows one at a time, as many blocks as the groups need.
	g.Label("q8vnnirow")
	g.VCVTPH2PS_Z(m(RSI, 0), K3, Y0)
	g.VMULPS(Y26, Y0, Y0)
	g.VXORPS(Z6, Z6, Z6)
	for i, b := range q8blocks {
		if i > 0 {
			g.CMPQ(R8, U8(2*i))
			g.JLE(lab("q8vnnisum"))
		}
		g.q8Block(64*i, b.k, b.x8, b.bias, b.idx, Z6)
	}
	g.Label("q8vnnisum")
	g.vnniRowOut("q8vnnirow")
	g.Label("q8vnnidone")
	g.VZEROUPPER()
	g.RET()
}

// quantize512 is Vec.quantizeGo's arithmetic, 32 values at a time: d =
// max|x|/127, q = round-to-even(x/d) (VCVTPS2DQ under the default rounding
// mode), and the c4/c8 bias lanes from VPDPBUSD against a vector of ones
// (each lane sums four q).
func (g *gen) quantize512() {
	g.text("quantize512", attr.NOSPLIT, 0, "func(x *float32, groups int, q8, xl, xh *int8, dx *float32, c4, c8 *int32)",
		"quantize512 is quantize256 on AVX-512 (the vnni path's Vec.quantize).")
	for i, name := range []string{"x", "groups", "q8", "xl", "xh", "dx", "c4", "c8"} {
		g.arg(name, []Register{RSI, RCX, RDI, R8, R9, R10, R11, R12}[i])
	}
	g.MOVL(U32(0x7fffffff), EAX)
	g.VPBROADCASTD(EAX, Z31) // |·| mask
	g.MOVL(U32(0x01010101), EAX)
	g.VPBROADCASTD(EAX, Y30) // unsigned ones
	g.MOVL(U32(127), EAX)
	g.VCVTSI2SSL(EAX, X29, X29) // 127.0
	g.TESTQ(RCX, RCX)
	g.JZ(lab("qdone"))
	g.Label("qloop")
	g.VMOVUPS(m(RSI, 0), Z0)
	g.VMOVUPS(m(RSI, 64), Z1)
	g.VPANDD(Z31, Z0, Z2)
	g.VPANDD(Z31, Z1, Z3)
	g.VMAXPS(Z3, Z2, Z2)
	g.VEXTRACTF64X4(U8(1), Z2, Y3)
	g.VMAXPS(Y3, Y2, Y2)
	g.VEXTRACTF128(U8(1), Y2, X3)
	g.VMAXPS(X3, X2, X2)
	g.VPERMILPS(U8(0x4e), X2, X3)
	g.VMAXPS(X3, X2, X2)
	g.VPERMILPS(U8(0xb1), X2, X3)
	g.VMAXSS(X3, X2, X2)  // X2 = max|x|
	g.VDIVSS(X29, X2, X4) // d = max/127
	g.VMOVSS(X4, m(R10, 0))
	g.VXORPS(X5, X5, X5)
	g.VUCOMISS(X5, X4)
	g.JEQ(lab("qzero"))
	g.VBROADCASTSS(X4, Z5)
	g.VDIVPS(Z5, Z0, Z0)
	g.VDIVPS(Z5, Z1, Z1)
	g.VCVTPS2DQ(Z0, Z0)
	g.VCVTPS2DQ(Z1, Z1)
	g.VPMOVSDB(Z0, X6)
	g.VPMOVSDB(Z1, X7)
	g.JMP(lab("qstore"))
	g.Label("qzero")
	g.VPXOR(X6, X6, X6)
	g.VPXOR(X7, X7, X7)
	g.Label("qstore")
	g.VMOVDQU(X6, m(RDI, 0))
	g.VMOVDQU(X7, m(RDI, 16))
	g.VMOVDQU(X6, m(R8, 0))
	g.VMOVDQU(X7, m(R9, 0))
	g.VINSERTI128(U8(1), X7, Y6, Y6) // the group's 32 q
	g.VPXOR(Y8, Y8, Y8)
	g.vpdpbusd(Y6, Y30, Y8) // Y8[l] = Σ q[4l..4l+3]
	g.VPSLLD(U8(7), Y8, Y9)
	g.VPXOR(Y10, Y10, Y10)
	g.VPSUBD(Y9, Y10, Y9) // −128·Σ
	g.VMOVDQU(Y9, m(R12, 0))
	g.VEXTRACTI128(U8(1), Y8, X9)
	g.VPADDD(X9, X8, X8) // Σ over lane l of both halves
	g.VPSLLD(U8(3), X8, X8)
	g.VPSUBD(X8, X10, X8) // −8·Σ
	g.VMOVDQU(X8, m(R11, 0))
	g.SUBQ(I8(-128), RSI)
	g.ADDQ(U8(32), RDI)
	g.ADDQ(U8(16), R8)
	g.ADDQ(U8(16), R9)
	g.ADDQ(U8(4), R10)
	g.ADDQ(U8(16), R11)
	g.ADDQ(U8(32), R12)
	g.DECQ(RCX)
	g.JNZ(lab("qloop"))
	g.Label("qdone")
	g.VZEROUPPER()
	g.RET()
}
