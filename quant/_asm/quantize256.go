package main

import (
	"github.com/mmcloughlin/avo/attr"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// quantize256 is Vec.quantizeGo's arithmetic on AVX2, one group (32
// values) per step: max|x| through the bit patterns, d = max/127, q =
// round-to-even(x/d) (VCVTPS2DQ under the default rounding mode) clamped
// to ±127 (the packs saturate, VPMAXSB lifts −128), and the c4/c8 bias
// lanes from VPMADDUBSW/VPMADDWD against ones (each dword sums four q).
func (g *gen) quantize256() {
	// qorder: VPERMD indices that undo the lane interleaving of VPACKSSDW
	// and VPACKSSWB on four vectors of 8 int32.
	qorder := g.static32("qorder", 0, 4, 1, 5, 2, 6, 3, 7)
	g.text("quantize256", attr.NOSPLIT, 0, "func(x *float32, groups int, q8, xl, xh *int8, dx *float32, c4, c8 *int32)",
		"quantize256 fills the Vec's int8 views (q8, the nibble-order halves xl",
		"and xh), scales dx and bias lanes c4, c8 from x, groups groups of 32",
		"(the avx2i8 path's Vec.quantize, bit for bit quantizeGo).")
	g.arg("x", RSI)
	g.arg("groups", RCX)
	g.arg("q8", RDI)
	g.arg("xl", R8)
	g.arg("xh", R9)
	g.arg("dx", R10)
	g.arg("c4", R11)
	g.arg("c8", R12)
	broadcast := func(v uint32, x, y VecPhysical) {
		g.MOVL(U32(v), EAX)
		g.VMOVD(EAX, x)
		g.VPBROADCASTD(x, y)
	}
	broadcast(0x7fffffff, X15, Y15) // |·| mask
	broadcast(0x01010101, X14, Y14) // unsigned byte ones
	broadcast(0x00010001, X13, Y13) // int16 ones
	broadcast(0x81818181, X12, Y12) // int8 −127
	g.VMOVDQU(qorder, Y11)
	g.MOVL(U32(127), EAX)
	g.VCVTSI2SSL(EAX, X10, X10) // 127.0
	g.TESTQ(RCX, RCX)
	g.JZ(lab("q256done"))

	g.Label("q256loop")
	for i, r := range []VecPhysical{Y0, Y1, Y2, Y3} {
		g.VMOVUPS(m(RSI, 32*i), r)
	}
	g.VPAND(Y15, Y0, Y4)
	g.VPAND(Y15, Y1, Y5)
	g.VPAND(Y15, Y2, Y6)
	g.VPAND(Y15, Y3, Y7)
	g.VPMAXUD(Y5, Y4, Y4)
	g.VPMAXUD(Y7, Y6, Y6)
	g.VPMAXUD(Y6, Y4, Y4)
	g.VEXTRACTI128(U8(1), Y4, X5)
	g.VPMAXUD(X5, X4, X4)
	g.VPSHUFD(U8(0x4e), X4, X5)
	g.VPMAXUD(X5, X4, X4)
	g.VPSHUFD(U8(0xb1), X4, X5)
	g.VPMAXUD(X5, X4, X4) // X4 = max|x| (as bits)
	g.VDIVSS(X10, X4, X4) // d = max/127
	g.VMOVSS(X4, m(R10, 0))
	g.VXORPS(X5, X5, X5)
	g.VUCOMISS(X5, X4)
	g.JEQ(lab("q256zero"))
	g.VBROADCASTSS(X4, Y4)
	for _, r := range []VecPhysical{Y0, Y1, Y2, Y3} {
		g.VDIVPS(Y4, r, r)
	}
	for _, r := range []VecPhysical{Y0, Y1, Y2, Y3} {
		g.VCVTPS2DQ(r, r)
	}
	g.VPACKSSDW(Y1, Y0, Y0)
	g.VPACKSSDW(Y3, Y2, Y2)
	g.VPACKSSWB(Y2, Y0, Y0)
	g.VPERMD(Y0, Y11, Y0)
	g.VPMAXSB(Y12, Y0, Y0)
	g.JMP(lab("q256store"))

	g.Label("q256zero")
	g.VPXOR(Y0, Y0, Y0)

	g.Label("q256store")
	g.VMOVDQU(Y0, m(RDI, 0))
	g.VMOVDQU(X0, m(R8, 0))
	g.VEXTRACTI128(U8(1), Y0, X1)
	g.VMOVDQU(X1, m(R9, 0))
	g.VPMADDUBSW(Y0, Y14, Y2)
	g.VPMADDWD(Y13, Y2, Y2) // Y2[l] = Σ q[4l..4l+3]
	g.VPXOR(Y5, Y5, Y5)
	g.VPSLLD(U8(7), Y2, Y3)
	g.VPSUBD(Y3, Y5, Y3) // −128·Σ
	g.VMOVDQU(Y3, m(R12, 0))
	g.VEXTRACTI128(U8(1), Y2, X3)
	g.VPADDD(X3, X2, X2) // Σ over lane l of both halves
	g.VPSLLD(U8(3), X2, X2)
	g.VPSUBD(X2, X5, X2) // −8·Σ
	g.VMOVDQU(X2, m(R11, 0))
	g.SUBQ(I8(-128), RSI)
	g.ADDQ(U8(32), RDI)
	g.ADDQ(U8(16), R8)
	g.ADDQ(U8(16), R9)
	g.ADDQ(U8(4), R10)
	g.ADDQ(U8(16), R11)
	g.ADDQ(U8(32), R12)
	g.DECQ(RCX)
	g.JNZ(lab("q256loop"))

	g.Label("q256done")
	g.VZEROUPPER()
	g.RET()
}
