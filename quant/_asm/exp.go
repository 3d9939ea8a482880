package main

import (
	"github.com/mmcloughlin/avo/attr"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The exp family: the AVX2 loops of ExpScores and SiLUMul, Go's
// runtime.expCore (Cephes expf) operations one for one on 8 lanes, each
// multiply and add rounded on its own (no FMA, as Go compiles it), so
// every value is bit-identical to the scalar loop's.
func expFamily(g *gen) {
	// Eight copies of each constant of expCore, as f32 bits, so the loops
	// take them as 32-byte memory operands.
	k := func(name string, bits uint32) Mem {
		return g.static32(name, bits, bits, bits, bits, bits, bits, bits, bits)
	}
	c := expConsts{
		log2e: k("explog2e", 0x3fb8aa3b), round: k("expround", 0x4b400000),
		ln2hi: k("expln2hi", 0x3f318000), ln2lo: k("expln2lo", 0xb95e8083),
		poly: [6]Mem{k("expc0", 0x39506967), k("expc1", 0x3ab743ce), k("expc2", 0x3c088908),
			k("expc3", 0x3d2aa9c1), k("expc4", 0x3e2aaaaa), k("expc5", 0x3f000000)},
		one: k("expone", 0x3f800000), low: k("explow", 0xc2ae0000), bias: k("expbias", 0x0000007f),
		sign: k("expsign", 0x80000000), hi: k("exphi", 0x42ae0000),
	}
	g.maxScaled256()
	g.expShifted256(c)
	g.siluMul256(c)
}

// expConsts are expCore's constants: log2(e), the 1.5·2^23 rounding
// constant, ln2 split in two, the polynomial, 1, −87 (low) and 87 (hi),
// the exponent bias and the sign bit.
type expConsts struct {
	log2e, round, ln2hi, ln2lo Mem
	poly                       [6]Mem
	one, low, bias, sign, hi   Mem
}

// expLow puts −87 into Y13.
func (g *gen) expLow(c expConsts) { g.VMOVUPS(c.low, Y13) }

// expRegs puts the constants both exp loops keep in registers into
// Y12..Y9 (log2e, round, ln2hi, ln2lo), Y8 (1) and Y7 (bias).
func (g *gen) expRegs(c expConsts) {
	g.VMOVUPS(c.log2e, Y12)
	g.VMOVUPS(c.round, Y11)
	g.VMOVUPS(c.ln2hi, Y10)
	g.VMOVUPS(c.ln2lo, Y9)
	g.VMOVUPS(c.one, Y8)
	g.VMOVDQU(c.bias, Y7)
}

// expCore leaves in Y4 expCore(x) for x in Y0 (Y2 = n, Y3 = r; clobbers
// Y5): n = (x·log2e + round) − round, r = x − n·ln2hi − n·ln2lo, the
// polynomial p = ((A·r)·r + r) + 1, times 2^n.
func (g *gen) expCore(c expConsts) {
	g.VMULPS(Y12, Y0, Y2)
	g.VADDPS(Y11, Y2, Y2)
	g.VSUBPS(Y11, Y2, Y2)
	g.VMULPS(Y10, Y2, Y3)
	g.VSUBPS(Y3, Y0, Y3)
	g.VMULPS(Y9, Y2, Y4)
	g.VSUBPS(Y4, Y3, Y3)
	g.VMULPS(c.poly[0], Y3, Y4)
	for i := 1; i < 6; i++ {
		g.VADDPS(c.poly[i], Y4, Y4)
		g.VMULPS(Y3, Y4, Y4)
	}
	g.VMULPS(Y3, Y4, Y4)
	g.VADDPS(Y3, Y4, Y4)
	g.VADDPS(Y8, Y4, Y4)
	g.VCVTTPS2DQ(Y2, Y5)
	g.VPADDD(Y7, Y5, Y5)
	g.VPSLLD(U8(23), Y5, Y5) // 2^n
	g.VMULPS(Y5, Y4, Y4)
}

// maxScaled256 is max(s[i]·scale) over n (a multiple of 8, ≥ 8) scores.
// The maximum is the same in any order (no NaN in scores), so this equals
// a scalar loop.
func (g *gen) maxScaled256() {
	g.text("maxScaled256", attr.NOSPLIT, 0, "func(s *float32, n int, scale float32) float32",
		"maxScaled256 is max(s[i]·scale) over n scores, n a multiple of 8, ≥ 8.")
	g.arg("s", RSI)
	g.arg("n", RCX)
	g.VBROADCASTSS(g.param("scale"), Y15)
	g.VMULPS(m(RSI, 0), Y15, Y0)
	g.ADDQ(U8(32), RSI)
	g.SUBQ(U8(8), RCX)
	g.JZ(lab("maxdone"))
	g.Label("maxloop")
	g.VMULPS(m(RSI, 0), Y15, Y1)
	g.VMAXPS(Y1, Y0, Y0)
	g.ADDQ(U8(32), RSI)
	g.SUBQ(U8(8), RCX)
	g.JNZ(lab("maxloop"))
	g.Label("maxdone")
	g.VEXTRACTF128(U8(1), Y0, X1)
	g.VMAXPS(X1, X0, X0)
	g.VPERMILPS(U8(0x4e), X0, X1)
	g.VMAXPS(X1, X0, X0)
	g.VPERMILPS(U8(0xb1), X0, X1)
	g.VMAXPS(X1, X0, X0)
	g.VMOVSS(X0, g.result())
	g.VZEROUPPER()
	g.RET()
}

// expShifted256 is ExpScores' second loop: p[i] = expCore(s[i]·scale −
// mx) where that is ≥ −87, else 0, for n (a multiple of 8) scores.
func (g *gen) expShifted256(c expConsts) {
	g.text("expShifted256", attr.NOSPLIT, 0, "func(s *float32, n int, scale, mx float32, p *float32)",
		"expShifted256 is ExpScores' second loop over n scores, n a multiple of 8.")
	g.arg("s", RSI)
	g.arg("n", RCX)
	g.VBROADCASTSS(g.param("scale"), Y15)
	g.VBROADCASTSS(g.param("mx"), Y14)
	g.arg("p", RDI)
	g.expLow(c)
	g.expRegs(c)
	g.TESTQ(RCX, RCX)
	g.JZ(lab("expdone"))
	g.Label("exploop")
	g.VMULPS(m(RSI, 0), Y15, Y0)
	g.VSUBPS(Y14, Y0, Y0)           // x = s·scale − mx
	g.VCMPPS(U8(0x1d), Y13, Y0, Y1) // x ≥ −87 (ordered)
	g.expCore(c)
	g.VANDPS(Y1, Y4, Y4)
	g.VMOVUPS(Y4, m(RDI, 0))
	g.ADDQ(U8(32), RSI)
	g.ADDQ(U8(32), RDI)
	g.SUBQ(U8(8), RCX)
	g.JNZ(lab("exploop"))
	g.Label("expdone")
	g.VZEROUPPER()
	g.RET()
}

// siluMul256 is SiLUMul's loop: g[i] = g[i]/(1 + expCore(−g[i]))·u[i]
// for the leading chunks of 8 (n a multiple of 8) whose every g lies in
// (−87, 87); it stops before the first chunk with a g outside and returns
// how many it did (the caller runs that chunk's edges in Go). The divide
// is correctly rounded in both.
func (g *gen) siluMul256(c expConsts) {
	g.text("siluMul256", attr.NOSPLIT, 0, "func(gate, up *float32, n int) int",
		"siluMul256 is SiLUMul's loop over the leading chunks of 8 of n (a",
		"multiple of 8) whose inputs lie in (−87, 87); it returns how many it did.")
	g.arg("gate", RDI)
	g.arg("up", RSI)
	g.arg("n", RCX)
	g.XORQ(RAX, RAX)
	g.expLow(c)
	g.VMOVUPS(c.hi, Y14)
	g.expRegs(c)
	g.VMOVUPS(c.sign, Y15)
	g.CMPQ(RAX, RCX)
	g.JGE(lab("silu_done"))
	g.Label("siluloop")
	g.VMOVUPS(mi(RDI, 0, RAX, 4), Y6) // x
	g.VCMPPS(U8(0x1e), Y13, Y6, Y1)   // x > −87 (ordered)
	g.VCMPPS(U8(0x11), Y14, Y6, Y2)   // x < 87 (ordered)
	g.VANDPS(Y2, Y1, Y1)
	g.VMOVMSKPS(Y1, EBX)
	g.CMPQ(RBX, U32(0xff))
	g.JNE(lab("silu_done"))
	g.VXORPS(Y15, Y6, Y0) // −x
	g.expCore(c)          // e^−x
	g.VADDPS(Y8, Y4, Y4)  // 1 + e^−x
	g.VDIVPS(Y4, Y6, Y6)  // x / (1 + e^−x)
	g.VMULPS(mi(RSI, 0, RAX, 4), Y6, Y6)
	g.VMOVUPS(Y6, mi(RDI, 0, RAX, 4))
	g.ADDQ(U8(8), RAX)
	g.CMPQ(RAX, RCX)
	g.JLT(lab("siluloop"))
	g.Label("silu_done")
	g.MOVQ(RAX, g.result())
	g.VZEROUPPER()
	g.RET()
}
