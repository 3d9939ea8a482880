package main

import (
	"fmt"

	"github.com/mmcloughlin/avo/attr"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The kv family: attention's products over the 16-bit and 8-bit KV
// caches, read from their stored form. f16rows is DotF16Rows (keys by
// position, values transposed), widening eight (sixteen) halves per
// VCVTPH2PS into FMAs against float32 vectors; q8acc is AccumQ8Rows (q8_0
// values by position), each row's 32-value group widened through
// VPMOVSXBD/VCVTDQ2PS and added times x·scale. Widths 256 (AVX2, FMA,
// F16C) and 512 (AVX-512F). Registered here, in its own file, so other
// families' generators do not touch it.
func init() { families["kv"] = kvFamily }

func kvFamily(g *gen) {
	for _, w := range []int{256, 512} {
		g.f16rows(w)
		g.q8acc(w)
	}
}

// f16rows adds, per vector and row, the row's dot product with the vector:
// two accumulators (even chunks and odd ones), summed and reduced by hsum,
// added to y. cols is a multiple of the width's lanes (checked by the
// caller). Strides in bytes.
func (g *gen) f16rows(width int) {
	name := fmt.Sprintf("f16rows%d", width)
	g.text(name, attr.NOSPLIT, 0, "func(w *uint16, rows, cols, wstride int, x *float32, xstride, nx int, y *float32, ystride int)",
		fmt.Sprintf("%s is DotF16Rows on %s: cols a multiple of %d, strides in bytes.", name, isaName(width), width/32))
	lanes := width / 32
	hb, fb := lanes*2, lanes*4
	l := func(s string) string { return name + s }
	v1, v2, acc0, acc1 := vec(width, 1), vec(width, 2), vec(width, 6), vec(width, 7)
	half := func(d int) Mem { return m(RAX, d) }
	g.arg("x", RSI)
	g.arg("y", R13)
	g.arg("nx", R15)
	g.arg("cols", R10)
	if lanes == 8 {
		g.SHRQ(U8(3), R10)
	} else {
		g.SHRQ(U8(4), R10)
	}
	g.Label(l("vec"))
	g.arg("w", RDI)
	g.arg("rows", RBX)
	g.MOVQ(R13, R9)
	g.Label(l("row"))
	g.VXORPS(acc0, acc0, acc0)
	g.VXORPS(acc1, acc1, acc1)
	g.MOVQ(RDI, RAX)
	g.MOVQ(RSI, R12)
	g.MOVQ(R10, R11)
	g.CMPQ(R11, U8(2))
	g.JLT(lab(l("one")))
	g.Label(l("two"))
	g.VCVTPH2PS(half(0), v1)
	g.VCVTPH2PS(half(hb), v2)
	g.VFMADD231PS(m(R12, 0), v1, acc0)
	g.VFMADD231PS(m(R12, fb), v2, acc1)
	g.ADDQ(U8(2*hb), RAX)
	g.ADDQ(U8(2*fb), R12)
	g.SUBQ(U8(2), R11)
	g.CMPQ(R11, U8(2))
	g.JGE(lab(l("two")))
	g.Label(l("one"))
	g.TESTQ(R11, R11)
	g.JZ(lab(l("sum")))
	g.VCVTPH2PS(half(0), v1)
	g.VFMADD231PS(m(R12, 0), v1, acc0)
	g.Label(l("sum"))
	g.VADDPS(acc1, acc0, acc0)
	g.hsum(width, 6, 7)
	g.VADDSS(m(R9, 0), X6, X6)
	g.VMOVSS(X6, m(R9, 0))
	g.ADDQ(U8(4), R9)
	g.ADDQ(g.param("wstride"), RDI)
	g.DECQ(RBX)
	g.JNZ(lab(l("row")))
	g.ADDQ(g.param("xstride"), RSI)
	g.ADDQ(g.param("ystride"), R13)
	g.DECQ(R15)
	g.JNZ(lab(l("vec")))
	g.VZEROUPPER()
	g.RET()
}

// q8acc adds, per vector and 32-value group, Σ_r (x[r]·scale_r)·q_r into
// the group's 32 outputs, held in accumulators across the rows: the scale
// widened by VCVTPH2PS, multiplied by x[r] and broadcast; the int8 values
// widened by VPMOVSXBD and VCVTDQ2PS. Strides of x and y in bytes.
func (g *gen) q8acc(width int) {
	name := fmt.Sprintf("q8acc%d", width)
	g.text(name, attr.NOSPLIT, 0, "func(scales, data *byte, rows, groups int, x *float32, xstride, nx int, y *float32, ystride int)",
		fmt.Sprintf("%s is AccumQ8Rows on %s: cols a multiple of 32, strides of x and y in bytes.", name, isaName(width)))
	l := func(s string) string { return name + s }
	lanes := width / 32
	n := 32 / lanes // accumulators per group
	acc := func(i int) VecPhysical { return vec(width, i) }
	bc, wv := vec(width, 8), func(i int) VecPhysical { return vec(width, 9+i) }
	g.arg("groups", R14)
	g.MOVQ(R14, RCX)
	g.SHLQ(U8(5), R14) // data bytes per row
	g.SHLQ(U8(1), RCX) // scale bytes per row
	g.arg("x", RSI)
	g.arg("y", R13)
	g.arg("nx", R15)
	g.Label(l("vec"))
	g.arg("data", R9)
	g.arg("scales", RDX)
	g.MOVQ(R13, R10)
	g.arg("groups", R11)
	g.Label(l("grp"))
	for i := range n {
		g.VMOVUPS(m(R10, i*lanes*4), acc(i))
	}
	g.MOVQ(R9, RAX)
	g.MOVQ(RDX, RDI)
	g.MOVQ(RSI, R12)
	g.arg("rows", RBX)
	g.Label(l("row"))
	g.MOVWLZX(m(RDI, 0), R8L)
	g.VMOVD(R8L, X8)
	g.VCVTPH2PS(X8, X8)
	g.VMULSS(m(R12, 0), X8, X8)
	g.VBROADCASTSS(X8, bc)
	for i := range n {
		g.VPMOVSXBD(m(RAX, i*lanes), wv(i))
		g.VCVTDQ2PS(wv(i), wv(i))
		g.VFMADD231PS(wv(i), bc, acc(i))
	}
	g.ADDQ(R14, RAX)
	g.ADDQ(RCX, RDI)
	g.ADDQ(U8(4), R12)
	g.DECQ(RBX)
	g.JNZ(lab(l("row")))
	for i := range n {
		g.VMOVUPS(acc(i), m(R10, i*lanes*4))
	}
	g.ADDQ(U8(128), R10)
	g.ADDQ(U8(32), R9)
	g.ADDQ(U8(2), RDX)
	g.DECQ(R11)
	g.JNZ(lab(l("grp")))
	g.ADDQ(g.param("xstride"), RSI)
	g.ADDQ(g.param("ystride"), R13)
	g.DECQ(R15)
	g.JNZ(lab(l("vec")))
	g.VZEROUPPER()
	g.RET()
}

// isaName names a width's instruction set for the stubs' comments.
func isaName(width int) string {
	if width == 512 {
		return "AVX-512"
	}
	return "AVX2"
}
