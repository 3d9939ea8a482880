package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The Q4_0 int8 kernels with the rows as lanes (the avx2i8 family's q4
// kernels, every column count): four rows at a time, each block's group
// pair p (64 nibble bytes of each row) mixed so that vector k of a
// Latin square holds, in dword lane j, row (j+k) mod 4's bytes of lane
// j's group. Against the column's activations permuted the same way
// (column block, written once per call), VPMADDUBSW/VPMADDWD sums leave
// row j's exact int32 group sums (bias c4 included) in lane j, lanes 0–3
// for group 2p and 4–7 for 2p+1. Those sums are scaled by a table (row
// scale × activation scale) and accumulated, one float step per four
// rows. No float is rounded before the scale multiply, and the float
// order per row is fixed: ((…(s0·t0 + s1·t1) + …) in pair order per half,
// then low half + high half, then + y.
//
// Registers: Y0..Y3 accumulators; Y4..Y11 the nibbles (C0: Y4/Y5, C1:
// Y8/Y9, C2: Y10/Y11, C3: Y6/Y7, low/high); Y12..Y14 scratch; Y15 the
// 0x0f byte mask. The row cursor is DI (R10 = one row's bytes, R11 =
// three rows'), the scales SI, rows left CX, groups R8.

// Column block layout: permutation k of activation pair p, low (h = 0) or
// high (h = 1) nibbles' bytes, at q4xr; the bias pair (int32, group 2p's
// sum in the low four lanes, 2p+1's in the high four) at q4bp; the
// activation scales (same layout) at q4dxp; q4ColBytes in all.
func q4xr(col, p, k, h int) int { return col + ((p*4+k)*2+h)*32 }
func q4bp(col, p int) int       { return col + 1024 + p*32 }
func q4dxp(col, p int) int      { return col + 1152 + p*32 }

const q4ColBytes = 1280

// nibbles are the registers group pair p's four rows load into: ymm for a
// full pair, xmm for a lone last group (upper halves then zero).
var (
	fullPair = [4]VecPhysical{Y4, Y6, Y8, Y10}
	lonePair = [4]VecPhysical{X4, X6, X8, X10}
)

// q4Build loads group pair p of the block's rows into w and leaves C0..C3's
// nibbles split.
func (g *gen) q4Build(p int, w [4]VecPhysical) {
	g.VMOVDQU(m(RDI, 32*p), w[0])
	g.VMOVDQU(mi(RDI, 32*p, R10, 1), w[1])
	g.VMOVDQU(mi(RDI, 32*p, R10, 2), w[2])
	g.VMOVDQU(mi(RDI, 32*p, R11, 1), w[3])
	g.VPBLENDD(U8(0xaa), Y6, Y4, Y12)
	g.VPBLENDD(U8(0x55), Y6, Y4, Y13)
	g.VPBLENDD(U8(0xaa), Y10, Y8, Y14)
	g.VPBLENDD(U8(0x55), Y10, Y8, Y6)
	g.VPBLENDD(U8(0xcc), Y14, Y12, Y4)
	g.VSHUFPS(U8(0x4e), Y14, Y12, Y8)
	g.VSHUFPS(U8(0xb1), Y6, Y13, Y10)
	g.VSHUFPS(U8(0x1b), Y6, Y13, Y6)
	g.VPSRLW(U8(4), Y4, Y5)
	g.VPSRLW(U8(4), Y8, Y9)
	g.VPSRLW(U8(4), Y10, Y11)
	g.VPSRLW(U8(4), Y6, Y7)
	for _, r := range []VecPhysical{Y4, Y5, Y8, Y9, Y10, Y11, Y6, Y7} {
		g.VPAND(Y15, r, r)
	}
}

// q4Sum leaves in Y12 the four rows' exact int32 sums (bias included) of
// group pair p against the column block at col, as floats.
func (g *gen) q4Sum(col, p int, ones Mem) {
	g.VPMADDUBSW(sp(q4xr(col, p, 0, 0)), Y4, Y12)
	g.VPMADDUBSW(sp(q4xr(col, p, 0, 1)), Y5, Y13)
	g.VPADDW(Y13, Y12, Y12)
	g.VPMADDUBSW(sp(q4xr(col, p, 1, 0)), Y8, Y13)
	g.VPMADDUBSW(sp(q4xr(col, p, 1, 1)), Y9, Y14)
	g.VPADDW(Y14, Y13, Y13)
	g.VPADDW(Y13, Y12, Y12)
	g.VPMADDUBSW(sp(q4xr(col, p, 2, 0)), Y10, Y13)
	g.VPMADDUBSW(sp(q4xr(col, p, 2, 1)), Y11, Y14)
	g.VPADDW(Y14, Y13, Y13)
	g.VPMADDUBSW(sp(q4xr(col, p, 3, 0)), Y6, Y14)
	g.VPADDW(Y14, Y13, Y13)
	g.VPMADDUBSW(sp(q4xr(col, p, 3, 1)), Y7, Y14)
	g.VPADDW(Y14, Y13, Y13)
	g.VPADDW(Y13, Y12, Y12)
	g.VPMADDWD(ones, Y12, Y12)
	g.VPADDD(sp(q4bp(col, p)), Y12, Y12)
	g.VCVTDQ2PS(Y12, Y12)
}

// q4Acc starts (first) or continues accumulator acc with the sums in Y12
// times the table at t(SP).
func (g *gen) q4Acc(first bool, t int, acc VecPhysical) {
	if first {
		g.VMULPS(sp(t), Y12, acc)
	} else {
		g.VFMADD231PS(sp(t), Y12, acc)
	}
}

// q4ColPerms writes the four permutations of one nibble view (h) of the
// column's pair p, read at src, into column block col. Clobbers Y12, Y13.
func (g *gen) q4ColPerms(col, p int, src Register, h int) {
	g.VMOVDQU(m(src, 32*p), Y12)
	g.VMOVDQU(Y12, sp(q4xr(col, p, 0, h)))
	for k, imm := range []uint8{0x4e, 0xb1, 0x1b} {
		g.VPSHUFD(U8(imm), Y12, Y13)
		g.VMOVDQU(Y13, sp(q4xr(col, p, k+1, h)))
	}
}

// q4ColPrep writes column block col from the column's xl, xh, c4 and dx
// (pointers in those registers): per pair the four permutations of both
// nibble views, the group sums of c4's lanes (VPSHUFD and VPADDD within
// each half), and dx[2p], dx[2p+1] spread over the halves. Clobbers
// Y12..Y14.
func (g *gen) q4ColPrep(col int, xl, xh, c4, dx Register) {
	for p := 0; p < 4; p++ {
		g.q4ColPerms(col, p, xl, 0)
		g.q4ColPerms(col, p, xh, 1)
		g.VMOVDQU(m(c4, 32*p), Y12)
		g.VPSHUFD(U8(0x4e), Y12, Y13)
		g.VPADDD(Y13, Y12, Y12)
		g.VPSHUFD(U8(0xb1), Y12, Y13)
		g.VPADDD(Y13, Y12, Y12)
		g.VMOVDQU(Y12, sp(q4bp(col, p)))
		g.VBROADCASTSS(m(dx, 8*p), X12)
		g.VBROADCASTSS(m(dx, 8*p+4), X13)
		g.VINSERTF128(U8(1), X13, Y12, Y12)
		g.VMOVUPS(Y12, sp(q4dxp(col, p)))
	}
}

// q4Scales puts the block's row scales, as floats, into Y4..Y7 (Y4+p:
// lanes 0–3 rows 0–3 of group 2p, lanes 4–7 of group 2p+1): the rows'
// eight f16 scales at s (16 bytes each, ANDed with the mask at (R15) that
// zeroes lanes past the row's groups) transposed by word and dword
// unpacks. Clobbers Y12..Y14.
func (g *gen) q4Scales(s [4]Mem) {
	mask := m(R15, 0)
	g.VMOVDQU(s[0], X12)
	g.VPAND(mask, X12, X12)
	g.VMOVDQU(s[1], X13)
	g.VPAND(mask, X13, X13)
	g.VPUNPCKLWD(X13, X12, X14)
	g.VPUNPCKHWD(X13, X12, X12)
	g.VMOVDQU(s[2], X13)
	g.VPAND(mask, X13, X13)
	g.VMOVDQU(s[3], X4)
	g.VPAND(mask, X4, X4)
	g.VPUNPCKLWD(X4, X13, X5)
	g.VPUNPCKHWD(X4, X13, X13)
	g.VPUNPCKLDQ(X5, X14, X4)
	g.VPUNPCKHDQ(X5, X14, X5)
	g.VPUNPCKLDQ(X13, X12, X6)
	g.VPUNPCKHDQ(X13, X12, X7)
	g.VCVTPH2PS(X4, Y4)
	g.VCVTPH2PS(X5, Y5)
	g.VCVTPH2PS(X6, Y6)
	g.VCVTPH2PS(X7, Y7)
}

// fullScales are a full block's four rows of scales, 16 bytes apart at SI.
var fullScales = [4]Mem{m(RSI, 0), m(RSI, 16), m(RSI, 32), m(RSI, 48)}

// q4Tab writes column block col's tables for this block, T(p) = Y(4+p) ·
// its activation scales, at t(SP) + p·32. Clobbers Y12.
func (g *gen) q4Tab(col, t int) {
	for p := 0; p < 4; p++ {
		g.VMULPS(sp(q4dxp(col, p)), []VecPhysical{Y4, Y5, Y6, Y7}[p], Y12)
		g.VMOVUPS(Y12, sp(t+32*p))
	}
}

// q4Halves leaves row j's sum in lane j of x (acc's low half): low half +
// high half. Clobbers X12.
func (g *gen) q4Halves(acc, x VecPhysical) {
	g.VEXTRACTF128(U8(1), acc, X12)
	g.VADDPS(X12, x, x)
}

// q4ScCopy copies n rows' G (R8) f16 scales from SI (R13 = 2G bytes
// apart) to the frame's 16-byte slots at slot(SP), one scale at a time, so
// nothing past the scale array is read; a slot's lanes past G keep the
// zeros stored at entry. Clobbers AX, DX, R10, R11, R14.
func (g *gen) q4ScCopy(n, slot int, lrow, lel string) {
	g.MOVQ(RSI, RAX)
	g.LEAQ(sp(slot), RDX)
	g.MOVQ(U32(n), R10)
	g.Label(lrow)
	g.XORQ(R14, R14)
	g.Label(lel)
	g.MOVWLZX(mi(RAX, 0, R14, 2), R11L)
	g.MOVW(R11W, mi(RDX, 0, R14, 2))
	g.INCQ(R14)
	g.CMPQ(R14, R8)
	g.JLT(lab(lel))
	g.ADDQ(R13, RAX)
	g.ADDQ(U8(16), RDX)
	g.DECQ(R10)
	g.JNZ(lab(lrow))
}

// q4ScRows puts the scales of the general loop's next block (CX rows
// left, 2G = R13 bytes apart at SI) into Y4..Y7 through q4Scales, then
// jumps to (or, the last way, falls through to) tab: four rows in place
// while a 16-byte load from the block's last row cannot pass the scale
// array's end (rows left · 2G ≥ 6G + 16), masked to their G lanes; the
// last blocks copy them one at a time into the frame's 16-byte slots at
// slot(SP); fewer than four rows left run as one row repeated (R10 = R11
// = 0, so the block reads row 0 four times). Every Q4 kernel expands it,
// so their short rows read the same scales the same way. Clobbers AX, DX,
// R10, R11, R14 and what q4Scales does.
func (g *gen) q4ScRows(slot int, l func(string) string, tab string) {
	g.CMPQ(RCX, U8(4))
	g.JLT(lab(l("g1")))
	g.MOVQ(RCX, RAX)
	g.IMULQ(R13, RAX)
	g.LEAQ(mi(R13, 16, R13, 2), RDX)
	g.CMPQ(RAX, RDX)
	g.JLT(lab(l("g4slow")))
	g.LEAQ(mi(R13, 0, R13, 2), RDX)
	g.q4Scales([4]Mem{m(RSI, 0), mi(RSI, 0, R13, 1), mi(RSI, 0, R13, 2), mi(RSI, 0, RDX, 1)})
	g.JMP(lab(tab))
	g.Label(l("g4slow"))
	g.q4ScCopy(4, slot, l("g4r"), l("g4e"))
	g.MOVQ(R12, R10)
	g.LEAQ(mi(R12, 0, R12, 2), R11)
	g.q4Scales([4]Mem{sp(slot), sp(slot + 16), sp(slot + 32), sp(slot + 48)})
	g.JMP(lab(tab))
	g.Label(l("g1"))
	g.q4ScCopy(1, slot, l("g1r"), l("g1e"))
	g.XORQ(R10, R10)
	g.XORQ(R11, R11)
	g.q4Scales([4]Mem{sp(slot), sp(slot), sp(slot), sp(slot)})
}

// q4Entry is every Q4 kernel's common entry once its columns are
// prepared: the nibble mask in Y15, the frame's 64 scale-slot bytes at
// slot(SP) zeroed (lanes past a short row's groups stay 0), R12 = a row's
// nibble bytes (16G), R13 = its scale bytes (2G), R15 = the mask keeping G
// scales (from sc16mask), R10/R11 = the block's row offsets 1·16G and
// 3·16G; tiles that are not full-width (G ≠ 8) or have fewer than four
// rows go to gen, the rest fall through to the full-row loop. Clobbers
// AX, Y12.
func (g *gen) q4Entry(slot int, sc16mask Mem, gen string) {
	g.MOVL(U32(0x0f0f0f0f), EAX)
	g.VMOVD(EAX, X15)
	g.VPBROADCASTD(X15, Y15)
	g.VPXOR(Y12, Y12, Y12)
	g.VMOVDQU(Y12, sp(slot))
	g.VMOVDQU(Y12, sp(slot+32))
	g.MOVQ(R8, R12)
	g.SHLQ(U8(4), R12)
	g.LEAQ(mi(R8, 0, R8, 1), R13)
	g.LEAQ(off(sc16mask, 16), R15)
	g.SUBQ(R13, R15)
	g.MOVQ(R12, R10)
	g.LEAQ(mi(R12, 0, R12, 2), R11)
	g.CMPQ(R8, U8(8))
	g.JNE(lab(gen))
	g.CMPQ(RCX, U8(4))
	g.JLT(lab(gen))
}

// q4Prefetch issues op (a prefetch instruction) for the block d bytes
// ahead of DI, its first lines 64-byte lines (7 or all 8 of a full
// 512-byte block), then for the scale line d/8 ahead of SI: the Q4 loops'
// per-block prefetches. The decode kernel passes PREFETCHNTA, the
// multi-column kernels PREFETCHT0 (docs/PERFORMANCE.md, log at 0382674, "Session 6: the
// stream").
func (g *gen) q4Prefetch(op func(Op), d, lines int) {
	for i := 0; i < lines; i++ {
		op(m(RDI, d+64*i))
	}
	op(m(RSI, d/8))
}

// q4PairFunc runs group pair p of a block for a kernel: nibbles into w,
// then each column's sums into its accumulator (started when first).
type q4PairFunc func(p int, w [4]VecPhysical, first bool)

// q4GenPairs runs a general-loop block's group pairs for G = R8 groups:
// the full pairs on ymm, a lone last group on xmm (upper halves zero),
// then falls through to gend. Every Q4 kernel expands it, so their short
// rows take the same pairs the same way.
func (g *gen) q4GenPairs(pair q4PairFunc, l func(string) string, gend string) {
	gh := func(p int) string { return l(fmt.Sprintf("gh%d", p)) }
	for p := 0; p < 4; p++ {
		g.CMPQ(R8, U8(2*p+2))
		g.JLT(lab(gh(p)))
		pair(p, fullPair, p == 0)
	}
	g.JMP(lab(gend))
	g.Label(gh(0))
	pair(0, lonePair, true)
	for p := 1; p < 4; p++ {
		g.JMP(lab(gend))
		g.Label(gh(p))
		g.TESTQ(U32(1), R8)
		g.JZ(lab(gend))
		pair(p, lonePair, false)
	}
}

// q4FullPairs runs a full-row block's four group pairs, the first
// starting the accumulators.
func q4FullPairs(pair q4PairFunc) {
	for p := 0; p < 4; p++ {
		pair(p, fullPair, p == 0)
	}
}

// q4NextFull steps the full-row loop to its next block of four rows (512
// nibble bytes at DI, 64 scale bytes at SI, 16 output bytes at R9) and
// loops back to full while four rows are left.
func (g *gen) q4NextFull(full string) {
	g.ADDQ(U32(512), RDI)
	g.ADDQ(U8(64), RSI)
	g.ADDQ(U8(16), R9)
	g.SUBQ(U8(4), RCX)
	g.CMPQ(RCX, U8(4))
	g.JGE(lab(full))
}

// q4NextGen steps the general loop past a block of four rows (G groups:
// R12 nibble and R13 scale bytes a row) and goes back to gen.
func (g *gen) q4NextGen(gen string) {
	g.LEAQ(mi(RDI, 0, R12, 4), RDI)
	g.LEAQ(mi(RSI, 0, R13, 4), RSI)
	g.ADDQ(U8(16), R9)
	g.SUBQ(U8(4), RCX)
	g.JMP(lab(gen))
}

// frameShifts are the displacements k of a kernel's copies of its body,
// one per SP mod 32 (Go aligns SP to 8 only): copy k reads the frame at
// SP+k, 32-byte aligned, so no 32-byte frame load crosses a cache line
// (docs/PERFORMANCE.md, log at 0382674, "Session 7"). Reading the frame through another
// base register (SP rounded up) was slower from DRAM on Zen 3 ("Session
// 6: the schedule").
var frameShifts = []int{0, 8, 16, 24}

// alignJump puts (−SP) mod 32 in r and jumps to the body copy for it
// (label copy(k)), falling through to k = 0's.
func (g *gen) alignJump(r Register, copyLabel func(k int) string) {
	g.MOVQ(RSP, r)
	g.NEGQ(r)
	g.ANDQ(U8(31), r)
	for _, k := range frameShifts[1:] {
		g.CMPQ(r, U8(k))
		g.JEQ(lab(copyLabel(k)))
	}
}
