package main

import (
	"fmt"

	"github.com/mmcloughlin/avo/attr"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The encode family: AVX2 + F16C group quantizers for the fast encoders
// (encode_fast.go), one row of 32-weight groups per call, a parameter set
// of codec (Q4_0, Q8_0) and source (f32, f16). The arithmetic is
// encodeRef's (s = max|w| / k in f32, q = round-half-away(w / s) from an
// exact f32 division, clamp); rounding is exact: t = trunc(|x|), +1 when
// |x| − t ≥ 0.5, sign restored. Scales are written as f16 (VCVTPS2PH,
// round to nearest even like float16.Fromfloat32). A call returns how many
// groups it did: fewer than n means group `done` holds NaN or ±Inf and
// the caller takes it to the reference path. One call per row lets
// consecutive groups overlap in the pipeline.
func encodeFamily(g *gen) {
	w := func(name string, v uint32) Mem { return g.static32(name, v) }
	t := encodeTables{
		abs: w("absmask", 0x7fffffff), sign: w("signmask", 0x80000000), half: w("half", 0x3f000000),
		one: w("one", 0x3f800000), maxfin: w("maxfin", 0x7f7fffff),
		k:  map[codec]Mem{q4_0: w("seven", 0x40e00000), q8_0: w("f127", 0x42fe0000)},
		i8: w("i8", 8), i15: w("i15", 15), i127: w("i127", 127), im127: w("im127", 0xffffff81),
		perm: g.static32("perm", 0, 4, 1, 5, 2, 6, 3, 7),
	}
	for _, c := range []codec{q4_0, q8_0} {
		for _, f16 := range []bool{true, false} {
			g.encodeRow(t, c, f16)
		}
	}
}

// encodeTables are the family's constants: one 4-byte word each
// (broadcast at use) but perm, VPERMD indices that undo VPACKSSDW's and
// VPACKSSWB's lane interleaving.
type encodeTables struct {
	abs, sign, half, one, maxfin, i8, i15, i127, im127, perm Mem
	k                                                        map[codec]Mem
}

// encodeRow is q4RowF16, q4RowF32, q8RowF16 or q8RowF32.
func (g *gen) encodeRow(t encodeTables, c codec, f16 bool) {
	src, srcName, srcBytes := "*float32", "F32", 128
	if f16 {
		src, srcName, srcBytes = "*uint16", "F16", 64
	}
	name := fmt.Sprintf("%sRow%s", c, srcName)
	pre := fmt.Sprintf("%sr%s", c, srcName[1:])
	l := func(s string) string { return pre + s }
	g.text(name, attr.NOSPLIT, 0, fmt.Sprintf("func(src %s, n int, sc *uint16, out *byte) (done int)", src),
		fmt.Sprintf("%s quantizes n consecutive full 32-weight groups of one %s row to", name, srcName),
		fmt.Sprintf("%s (%d data bytes per group), writing f16 scales to sc, and returns how",
			map[codec]string{q4_0: "Q4_0", q8_0: "Q8_0"}[c], c.groupBytes()),
		"many it did: done < n means group `done` holds NaN or ±Inf and is left",
		"to the reference encoder.")
	g.arg("src", RSI)
	g.arg("n", RCX)
	g.arg("sc", RDX)
	g.arg("out", RDI)
	g.XORQ(RBX, RBX)
	g.VPBROADCASTD(t.abs, Y15)
	g.VPBROADCASTD(t.half, Y14)
	g.VPBROADCASTD(t.one, Y13)
	g.VPBROADCASTD(t.sign, Y12)
	g.VPBROADCASTD(t.maxfin, Y11)
	g.Label(l("loop"))
	g.CMPQ(RBX, RCX)
	g.JGE(lab(l("done")))
	for i, r := range []VecPhysical{Y0, Y1, Y2, Y3} {
		if f16 {
			g.VCVTPH2PS(m(RSI, 16*i), r)
		} else {
			g.VMOVUPS(m(RSI, 32*i), r)
		}
	}
	g.encodeScale(t.k[c], l("done"), l("zero"))
	for _, r := range []VecPhysical{Y0, Y1, Y2, Y3} {
		g.encodeRound(r)
	}
	if c == q4_0 {
		g.q4Store(t)
	} else {
		g.q8Store(t)
	}
	g.Label(l("next"))
	g.ADDQ(U32(srcBytes), RSI)
	g.ADDQ(U8(2), RDX)
	g.ADDQ(U8(c.groupBytes()), RDI)
	g.INCQ(RBX)
	g.JMP(lab(l("loop")))
	// A zero scale: every q is 0 (Q4: the nibble 8).
	g.Label(l("zero"))
	if c == q4_0 {
		g.MOVQ(U64(0x8888888888888888), RAX)
		g.MOVQ(RAX, m(RDI, 0))
		g.MOVQ(RAX, m(RDI, 8))
	} else {
		g.VPXOR(Y0, Y0, Y0)
		g.VMOVDQU(Y0, m(RDI, 0))
	}
	g.JMP(lab(l("next")))
	g.Label(l("done"))
	g.MOVQ(RBX, g.result())
	g.VZEROUPPER()
	g.RET()
}

// encodeScale leaves in X8 max|w| of Y0..Y3 (their abs in Y4..Y7; a
// non-finite weight jumps to bad) and in X10 (and broadcast in Y10) the
// scale X8 / k, its f16 stored at (DX); a zero scale jumps to zero.
func (g *gen) encodeScale(k Mem, bad, zero string) {
	for i, r := range []VecPhysical{Y0, Y1, Y2, Y3} {
		g.VANDPS(Y15, r, ys[4+i])
	}
	g.VPCMPGTD(Y11, Y4, Y8)
	g.VPCMPGTD(Y11, Y5, Y9)
	g.VPOR(Y9, Y8, Y8)
	g.VPCMPGTD(Y11, Y6, Y9)
	g.VPOR(Y9, Y8, Y8)
	g.VPCMPGTD(Y11, Y7, Y9)
	g.VPOR(Y9, Y8, Y8)
	g.VPTEST(Y8, Y8)
	g.JNZ(lab(bad))
	g.VMAXPS(Y5, Y4, Y8)
	g.VMAXPS(Y7, Y6, Y9)
	g.VMAXPS(Y9, Y8, Y8)
	g.VEXTRACTF128(U8(1), Y8, X9)
	g.VMAXPS(X9, X8, X8)
	g.VPERMILPS(U8(0x4e), X8, X9)
	g.VMAXPS(X9, X8, X8)
	g.VPERMILPS(U8(0xb1), X8, X9)
	g.VMAXPS(X9, X8, X8)
	g.VDIVSS(k, X8, X10)
	g.VCVTPS2PH(U8(0), X10, X9)
	g.VPEXTRW(U8(0), X9, EAX)
	g.MOVW(AX, m(RDX, 0))
	g.VMOVD(X10, EAX)
	g.TESTL(EAX, EAX)
	g.JZ(lab(zero))
	g.VBROADCASTSS(X10, Y10)
}

// encodeRound replaces y by int32(round-half-away(y / s)), exactly.
func (g *gen) encodeRound(y VecPhysical) {
	g.VDIVPS(Y10, y, y)
	g.VANDPS(Y15, y, Y4)
	g.VROUNDPS(U8(3), Y4, Y5)
	g.VSUBPS(Y5, Y4, Y6)
	g.VCMPPS(U8(13), Y14, Y6, Y7)
	g.VANDPS(Y13, Y7, Y7)
	g.VADDPS(Y7, Y5, Y5)
	g.VANDPS(Y12, y, Y6)
	g.VORPS(Y6, Y5, Y5)
	g.VCVTTPS2DQ(Y5, y)
}

// q4Store packs Y0..Y3's q + 8, clamped to 0..15, as nibbles (weight i
// low, i+16 high) into 16 bytes at DI.
func (g *gen) q4Store(t encodeTables) {
	g.VPBROADCASTD(t.i8, Y9)
	g.VPBROADCASTD(t.i15, Y8)
	g.VPXOR(Y7, Y7, Y7)
	qs := []VecPhysical{Y0, Y1, Y2, Y3}
	for _, r := range qs {
		g.VPADDD(Y9, r, r)
	}
	for _, r := range qs {
		g.VPMAXSD(Y7, r, r)
	}
	for _, r := range qs {
		g.VPMINSD(Y8, r, r)
	}
	g.VPSLLD(U8(4), Y2, Y2)
	g.VPSLLD(U8(4), Y3, Y3)
	g.VPOR(Y2, Y0, Y0)
	g.VPOR(Y3, Y1, Y1)
	g.VPACKSSDW(Y1, Y0, Y0)
	g.VPERMQ(U8(0xd8), Y0, Y0)
	g.VPACKUSWB(Y0, Y0, Y0)
	g.VPERMQ(U8(0x08), Y0, Y0)
	g.VMOVDQU(X0, m(RDI, 0))
}

// q8Store packs Y0..Y3's q, clamped to ±127, as 32 bytes at DI.
func (g *gen) q8Store(t encodeTables) {
	g.VPBROADCASTD(t.i127, Y9)
	g.VPBROADCASTD(t.im127, Y8)
	qs := []VecPhysical{Y0, Y1, Y2, Y3}
	for _, r := range qs {
		g.VPMINSD(Y9, r, r)
	}
	for _, r := range qs {
		g.VPMAXSD(Y8, r, r)
	}
	g.VPACKSSDW(Y1, Y0, Y0)
	g.VPACKSSDW(Y3, Y2, Y2)
	g.VPACKSSWB(Y2, Y0, Y0)
	g.VMOVDQU(t.perm, Y9)
	g.VPERMD(Y0, Y9, Y0)
	g.VMOVDQU(Y0, m(RDI, 0))
}
