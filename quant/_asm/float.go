package main

import (
	"fmt"

	"github.com/mmcloughlin/avo/attr"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The float family: tile kernels with float activations (the avx2 and
// avx512 paths), FMA into float accumulators. Q4_0 and Q8_0 weights are
// widened to floats per group, multiplied with the activation and scaled
// by the group's f16 scale; F32 tiles are a plain dot product. Register
// width is 256 (AVX2+FMA+F16C) or 512 (AVX-512F, the tail and the short
// scale rows through mask registers). See docs/PERFORMANCE.md ("Kernels").
func floatFamily(g *gen) {
	t := floatTables{
		// tailmask: the 8 dwords at tailmask+4·(8−t) have their first t
		// lanes set.
		tailmask: g.static("tailmask", ^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0), 0, 0, 0, 0),
		// q4tab maps a nibble q to the float q−8 through VPERMPS, which
		// reads only the low four bits of each index lane: one instruction
		// per 16 weights.
		q4tab: g.staticFloats("q4tab", -8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7),
	}
	for _, w := range []int{256, 512} {
		g.f32Kernel(t, w)
		for _, c := range []codec{q4_0, q8_0} {
			g.groupKernel(t, w, c, 1)
		}
	}
	for _, w := range []int{256, 512} {
		for _, c := range []codec{q4_0, q8_0} {
			g.groupKernel(t, w, c, 4)
		}
	}
	g.f32rows256(t)
}

// floatTables are the family's file-static constants.
type floatTables struct{ tailmask, q4tab Mem }

// codec is a tile's weight encoding.
type codec int

const (
	q4_0 codec = iota
	q8_0
)

func (c codec) String() string { return [...]string{"q4", "q8"}[c] }

// groupBytes is one 32-weight group's data bytes.
func (c codec) groupBytes() int { return [...]int{16, 32}[c] }

// vec is the width's vector register i (Y or Z).
func vec(width, i int) VecPhysical {
	if width == 512 {
		return []VecPhysical{Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15}[i]
	}
	return []VecPhysical{Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7, Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15}[i]
}

var (
	ys = []VecPhysical{Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7, Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15}
	xs = []VecPhysical{X0, X1, X2, X3, X4, X5, X6, X7, X8, X9, X10, X11, X12, X13, X14, X15}
)

// hsum reduces register i's floats (width bits) into the low lane of its
// xmm, with register j's as scratch: ((0+4)+(2+6))+((1+5)+(3+7)) on 256
// bits, the upper 256 added first on 512. Every AVX2 float reduction of a
// row's sum uses it, so kernels that must agree to the bit (a tile's F32
// product in Dot and in DotF32Rows, the four-column kernels and their
// single-column twins) add in the same order by construction.
func (g *gen) hsum(width, i, j int) {
	if width == 512 {
		g.VEXTRACTF64X4(U8(1), vec(512, i), ys[j])
		g.VADDPS(ys[j], ys[i], ys[i])
	}
	g.VEXTRACTF128(U8(1), ys[i], xs[j])
	g.VADDPS(xs[j], xs[i], xs[i])
	g.VPERMILPS(U8(0x4e), xs[i], xs[j])
	g.VADDPS(xs[j], xs[i], xs[i])
	g.VPERMILPS(U8(0xb1), xs[i], xs[j])
	g.VADDSS(xs[j], xs[i], xs[i])
}

// f32Kernel is f32f256/f32f512: y[r] += row r · x for an F32 tile, two
// accumulators (even chunks, then odd ones and the masked tail), summed
// and reduced at the row's end.
func (g *gen) f32Kernel(t floatTables, width int) {
	name := fmt.Sprintf("f32f%d", width)
	sig := "func(w *byte, rows, cols int, x, y *float32)"
	doc := []string{name + " adds an F32 tile's rows times x into y (the avx2 path's Dot)."}
	if width == 512 {
		sig = "func(w *byte, rows, cols int, x, y *float32, ktail int)"
		doc = []string{name + " adds an F32 tile's rows times x into y (the avx512 path's Dot);",
			"ktail masks the last cols mod 16 lanes."}
	}
	g.text(name, attr.NOSPLIT, 0, sig, doc...)
	lanes, chunk := width/32, width/8
	l := func(s string) string { return name + s }
	g.arg("w", RDI)
	g.arg("rows", RCX)
	g.arg("cols", R8)
	g.arg("x", R14)
	g.arg("y", R9)
	if width == 512 {
		g.arg("ktail", RAX)
		g.KMOVW(EAX, K1)
	}
	g.MOVQ(R8, R10)
	g.SHRQ(U8(map[int]uint8{8: 3, 16: 4}[lanes]), R10) // full chunks per row
	g.MOVQ(R8, R11)
	g.ANDQ(U8(lanes-1), R11)
	g.SHLQ(U8(2), R11) // tail bytes
	if width == 256 {
		g.LEAQ(off(t.tailmask, 32), RAX)
		g.SUBQ(R11, RAX)
		g.VMOVDQU(m(RAX, 0), Y13) // lanes < tail set
	}
	a0, a1 := vec(width, 6), vec(width, 7)
	v1, v2 := vec(width, 1), vec(width, 2)
	g.Label(l("row"))
	g.VXORPS(a0, a0, a0)
	g.VXORPS(a1, a1, a1)
	g.MOVQ(R14, R12)
	g.MOVQ(R10, RBX)
	g.CMPQ(RBX, U8(2))
	g.JLT(lab(l("one")))
	g.Label(l("two"))
	g.VMOVUPS(m(R12, 0), v1)
	g.VMOVUPS(m(R12, chunk), v2)
	g.VFMADD231PS(m(RDI, 0), v1, a0)
	g.VFMADD231PS(m(RDI, chunk), v2, a1)
	g.ADDQ(U32(2*chunk), RDI)
	g.ADDQ(U32(2*chunk), R12)
	g.SUBQ(U8(2), RBX)
	g.CMPQ(RBX, U8(2))
	g.JGE(lab(l("two")))
	g.Label(l("one"))
	g.TESTQ(RBX, RBX)
	g.JZ(lab(l("tail")))
	g.VMOVUPS(m(R12, 0), v1)
	g.VFMADD231PS(m(RDI, 0), v1, a0)
	g.ADDQ(U8(chunk), RDI)
	g.ADDQ(U8(chunk), R12)
	g.Label(l("tail"))
	g.TESTQ(R11, R11)
	g.JZ(lab(l("sum")))
	if width == 256 {
		g.VMASKMOVPS(m(RDI, 0), Y13, Y2)
		g.VMASKMOVPS(m(R12, 0), Y13, Y1)
	} else {
		g.VMOVUPS_Z(m(R12, 0), K1, Z1)
		g.VMOVUPS_Z(m(RDI, 0), K1, Z2)
	}
	g.VFMADD231PS(v2, v1, a1)
	g.ADDQ(R11, RDI)
	g.Label(l("sum"))
	g.VADDPS(a1, a0, a0)
	g.hsum(width, 6, 7)
	g.VADDSS(m(R9, 0), X6, X6)
	g.VMOVSS(X6, m(R9, 0))
	g.ADDQ(U8(4), R9)
	g.DECQ(RCX)
	g.JNZ(lab(l("row")))
	g.VZEROUPPER()
	g.RET()
}

// groupKernel is the Q4_0/Q8_0 kernel of one width for cols columns (1:
// Dot, 4: DotBatch's four-column step): per row its scales into the
// frame, then per group the weights widened to floats once (Q4 at 256
// bits: nibbles minus 8 in the integers, then converted — multiplying raw
// nibbles and subtracting 8·Σx per group saves four instructions but
// cancels badly when x is large next to the product; at 512 bits through
// the q4tab permutation), each column's four (two) FMAs against its
// activations and one by the group's scale, the row's sums reduced into
// y. Columns' instructions are the same at every count.
func (g *gen) groupKernel(t floatTables, width int, c codec, cols int) {
	name := fmt.Sprintf("%sf%d", c, width)
	sig := "func(sc, data *byte, rows, groups int, x, y *float32"
	path := map[int]string{256: "avx2", 512: "avx512"}[width]
	doc := []string{fmt.Sprintf("%s adds a %s tile's rows times x into y (the %s path's Dot).", name, map[codec]string{q4_0: "Q4_0", q8_0: "Q8_0"}[c], path)}
	if cols > 1 {
		name += fmt.Sprintf("x%d", cols)
		sig = fmt.Sprintf("func(sc, data *byte, rows, groups int, xs, ys *[%d]*float32", cols)
		doc = []string{fmt.Sprintf("%s is %sf%d for %d columns (the %s path's DotBatch): xs[j] points at", name, c, width, cols, path),
			"column j's activation from the tile's first column, ys[j] at its",
			"output from the tile's first row."}
	}
	if width == 512 {
		sig += ", kg int"
		doc = append(doc, "kg masks the row's groups (scales).")
	}
	sig += ")"
	g.text(name, attr.NOSPLIT, 32, sig, doc...)
	l := func(s string) string { return name + s }
	// Column pointers: x (R14) for one column; xs[0..3] in AX, DX, R11,
	// R14 for four, with R12 then the offset into all of them and the
	// scratch register for the scale loop.
	colRegs := []Register{RAX, RDX, R11, R14}
	scratch, scratch64 := EAX, RAX
	g.arg("sc", RSI)
	g.arg("data", RDI)
	g.arg("rows", RCX)
	g.arg("groups", R8)
	if cols == 1 {
		g.arg("x", R14)
		g.arg("y", R9)
	} else {
		scratch, scratch64 = R12L, R12
		g.arg("xs", RBX)
		for i := 0; i < cols; i++ {
			g.MOVQ(m(RBX, 8*i), colRegs[i])
		}
	}
	if width == 512 {
		g.arg("kg", scratch64)
		g.KMOVW(scratch, K3)
		if c == q4_0 {
			g.VMOVUPS(t.q4tab, Z31)
		}
	} else {
		if c == q4_0 {
			g.MOVL(U32(15), scratch)
			g.VMOVD(scratch, X15)
			g.VPBROADCASTD(X15, Y15)
			g.MOVL(U32(8), scratch)
			g.VMOVD(scratch, X14)
			g.VPBROADCASTD(X14, Y14)
		}
		g.VXORPS(Y0, Y0, Y0)
		g.VMOVUPS(Y0, sp(0))
	}
	g.LEAQ(mi(R8, 0, R8, 1), R10)
	if cols > 1 {
		g.XORQ(R9, R9)
	}
	g.Label(l("row"))
	// The row's G (R8) f16 scales to f32 at (SP): at 512 bits one masked
	// conversion; at 256 one 16-byte VCVTPH2PS when the row is full, else
	// one at a time so nothing past the scale array is read, lanes ≥ G
	// keeping the zeros stored at entry.
	if width == 512 {
		g.VCVTPH2PS_Z(m(RSI, 0), K3, Y0)
		g.VMOVUPS(Y0, sp(0))
	} else {
		g.CMPQ(R8, U8(8))
		g.JNE(lab(l("scpart")))
		g.VCVTPH2PS(m(RSI, 0), Y0)
		g.VMOVUPS(Y0, sp(0))
		g.JMP(lab(l("scdone")))
		g.Label(l("scpart"))
		g.XORQ(RBX, RBX)
		g.Label(l("scloop"))
		g.MOVWLZX(mi(RSI, 0, RBX, 2), scratch)
		g.VMOVD(scratch, X0)
		g.VCVTPH2PS(X0, X0)
		g.VMOVSS(X0, spi(0, RBX, 4))
		g.INCQ(RBX)
		g.CMPQ(RBX, R8)
		g.JLT(lab(l("scloop")))
		g.Label(l("scdone"))
	}
	// Accumulators: register 7 (256) or 6 (512) upward, one per column.
	acc0 := map[int]int{256: 7, 512: 6}[width]
	for i := 0; i < cols; i++ {
		a := vec(width, acc0+i)
		g.VXORPS(a, a, a)
	}
	if cols == 1 {
		g.MOVQ(R14, R12)
	} else {
		g.XORQ(R12, R12)
	}
	g.MOVQ(RSP, R13)
	g.MOVQ(R8, RBX)
	g.Label(l("grp"))
	g.widen(width, c)
	// x is the column's activation at x(R12) (one column: R12 itself).
	colMem := func(i, d int) Mem {
		if cols == 1 {
			return m(R12, d)
		}
		return mi(colRegs[i], d, R12, 1)
	}
	if width == 256 {
		if cols > 1 {
			g.VBROADCASTSS(m(R13, 0), Y6)
		}
		for i := 0; i < cols; i++ {
			g.VMULPS(colMem(i, 0), Y1, Y5)
			g.VFMADD231PS(colMem(i, 32), Y2, Y5)
			g.VFMADD231PS(colMem(i, 64), Y3, Y5)
			g.VFMADD231PS(colMem(i, 96), Y4, Y5)
			if cols == 1 {
				g.VBROADCASTSS(m(R13, 0), Y6)
			}
			g.VFMADD231PS(Y6, Y5, vec(256, acc0+i))
		}
	} else {
		for i := 0; i < cols; i++ {
			g.VMULPS(colMem(i, 0), Z1, Z3)
			g.VFMADD231PS(colMem(i, 64), Z2, Z3)
			g.VFMADD231PS_BCST(m(R13, 0), Z3, vec(512, acc0+i))
		}
	}
	g.ADDQ(U8(c.groupBytes()), RDI)
	g.SUBQ(I8(-128), R12)
	g.ADDQ(U8(4), R13)
	g.DECQ(RBX)
	g.JNZ(lab(l("grp")))
	if cols == 1 {
		a := acc0
		g.hsum(width, a, a+1)
		g.VADDSS(m(R9, 0), xs[a], xs[a])
		g.VMOVSS(xs[a], m(R9, 0))
	} else {
		g.arg("ys", RBX)
		for i := 0; i < cols; i++ {
			a := acc0 + i
			if width == 256 {
				g.hsum(256, a, 11)
			} else {
				g.hsum(512, a, 12)
			}
			g.MOVQ(m(RBX, 8*i), R15)
			g.VADDSS(mi(R15, 0, R9, 1), xs[a], xs[a])
			g.VMOVSS(xs[a], mi(R15, 0, R9, 1))
		}
	}
	g.ADDQ(R10, RSI)
	g.ADDQ(U8(4), R9)
	g.DECQ(RCX)
	g.JNZ(lab(l("row")))
	g.VZEROUPPER()
	g.RET()
}

// widen leaves a group's 32 weights at DI as floats: Y1..Y4 (256 bits:
// weights 0–7 low nibbles, 8–15 low, 0–7 high, 8–15 high for Q4; in order
// for Q8) or Z1, Z2 (512).
func (g *gen) widen(width int, c codec) {
	switch {
	case width == 256 && c == q4_0:
		g.VPMOVZXBD(m(RDI, 0), Y1)
		g.VPMOVZXBD(m(RDI, 8), Y2)
		g.VPSRLD(U8(4), Y1, Y3)
		g.VPSRLD(U8(4), Y2, Y4)
		g.VPAND(Y15, Y1, Y1)
		g.VPAND(Y15, Y2, Y2)
		for _, r := range []VecPhysical{Y1, Y2, Y3, Y4} {
			g.VPSUBD(Y14, r, r)
		}
		for _, r := range []VecPhysical{Y1, Y2, Y3, Y4} {
			g.VCVTDQ2PS(r, r)
		}
	case width == 256 && c == q8_0:
		for i, r := range []VecPhysical{Y1, Y2, Y3, Y4} {
			g.VPMOVSXBD(m(RDI, 8*i), r)
		}
		for _, r := range []VecPhysical{Y1, Y2, Y3, Y4} {
			g.VCVTDQ2PS(r, r)
		}
	case c == q4_0:
		g.VPMOVZXBD(m(RDI, 0), Z1)
		g.VPSRLD(U8(4), Z1, Z2)
		g.VPERMPS(Z31, Z1, Z1)
		g.VPERMPS(Z31, Z2, Z2)
	default:
		g.VPMOVSXBD(m(RDI, 0), Z1)
		g.VPMOVSXBD(m(RDI, 16), Z2)
		g.VCVTDQ2PS(Z1, Z1)
		g.VCVTDQ2PS(Z2, Z2)
	}
}

// f32rows256 is DotF32Rows on AVX2. Strides in bytes. For each row, every
// vector's dot product with it runs f32f256's loop (even 8-float chunks
// into one accumulator, odd ones and the masked tail into another, their
// sum reduced by hsum, added to y): the row is read from memory once and
// from L1 for the other vectors. Four vectors (attention's four query
// heads per item) take a loop that loads each pair of row chunks into
// registers once for all four, whose accumulators get the same chunks in
// the same order.
func (g *gen) f32rows256(t floatTables) {
	g.text("f32rows256", attr.NOSPLIT, 0, "func(w *float32, rows, cols, wstride int, x *float32, xstride, nx int, y *float32, ystride int)",
		"f32rows256 is DotF32Rows on AVX2: f32f256's loop per vector inside a",
		"loop over rows.")
	g.arg("w", RDX)
	g.arg("rows", RCX)
	g.arg("cols", R8)
	g.arg("x", R14)
	g.arg("y", R9)
	g.MOVQ(R8, R10)
	g.SHRQ(U8(3), R10) // full 8-float chunks per row
	g.MOVQ(R8, R11)
	g.ANDQ(U8(7), R11)
	g.SHLQ(U8(2), R11) // tail bytes
	g.LEAQ(off(t.tailmask, 32), RAX)
	g.SUBQ(R11, RAX)
	g.VMOVDQU(m(RAX, 0), Y13) // lanes < tail set
	g.arg("wstride", R8)
	g.CMPQ(g.param("nx"), U8(4))
	g.JEQ(lab("f32rowsquad"))

	g.Label("f32rowsrow")
	g.MOVQ(R14, RSI) // vector 0
	g.MOVQ(R9, R13)  // its output for this row
	g.arg("nx", R15)
	g.Label("f32rowsvec")
	g.VXORPS(Y6, Y6, Y6)
	g.VXORPS(Y7, Y7, Y7)
	g.MOVQ(RDX, RDI)
	g.MOVQ(RSI, R12)
	g.MOVQ(R10, RBX)
	g.CMPQ(RBX, U8(2))
	g.JLT(lab("f32rowsone"))
	g.Label("f32rowstwo")
	g.VMOVUPS(m(R12, 0), Y1)
	g.VMOVUPS(m(R12, 32), Y2)
	g.VFMADD231PS(m(RDI, 0), Y1, Y6)
	g.VFMADD231PS(m(RDI, 32), Y2, Y7)
	g.ADDQ(U8(64), RDI)
	g.ADDQ(U8(64), R12)
	g.SUBQ(U8(2), RBX)
	g.CMPQ(RBX, U8(2))
	g.JGE(lab("f32rowstwo"))
	g.Label("f32rowsone")
	g.TESTQ(RBX, RBX)
	g.JZ(lab("f32rowstail"))
	g.VMOVUPS(m(R12, 0), Y1)
	g.VFMADD231PS(m(RDI, 0), Y1, Y6)
	g.ADDQ(U8(32), RDI)
	g.ADDQ(U8(32), R12)
	g.Label("f32rowstail")
	g.TESTQ(R11, R11)
	g.JZ(lab("f32rowssum"))
	g.VMASKMOVPS(m(RDI, 0), Y13, Y2)
	g.VMASKMOVPS(m(R12, 0), Y13, Y1)
	g.VFMADD231PS(Y2, Y1, Y7)
	g.Label("f32rowssum")
	g.VADDPS(Y7, Y6, Y6)
	g.hsum(256, 6, 7)
	g.VADDSS(m(R13, 0), X6, X6)
	g.VMOVSS(X6, m(R13, 0))
	g.ADDQ(g.param("xstride"), RSI)
	g.ADDQ(g.param("ystride"), R13)
	g.DECQ(R15)
	g.JNZ(lab("f32rowsvec"))
	g.ADDQ(U8(4), R9)
	g.ADDQ(R8, RDX)
	g.DECQ(RCX)
	g.JNZ(lab("f32rowsrow"))
	g.VZEROUPPER()
	g.RET()

	g.Label("f32rowsquad")
	g.arg("xstride", RAX)
	g.arg("ystride", RSI)
	g.Label("f32rowsqrow")
	for i := 0; i < 8; i++ {
		g.VXORPS(ys[i], ys[i], ys[i])
	}
	g.MOVQ(RDX, RDI)
	g.MOVQ(R14, R12)                // vectors 0 and 1: (R12), (R12)(AX*1)
	g.LEAQ(mi(R14, 0, RAX, 2), R13) // vectors 2 and 3: (R13), (R13)(AX*1)
	g.MOVQ(R10, RBX)
	g.CMPQ(RBX, U8(2))
	g.JLT(lab("f32rowsqone"))
	// Vector v's chunk at d bytes into the row.
	vm := func(v, d int) Mem {
		base := []Register{R12, R12, R13, R13}[v]
		if v%2 == 1 {
			return mi(base, d, RAX, 1)
		}
		return m(base, d)
	}
	g.Label("f32rowsqtwo")
	g.VMOVUPS(m(RDI, 0), Y8)
	g.VMOVUPS(m(RDI, 32), Y9)
	for v := 0; v < 4; v++ {
		g.VFMADD231PS(vm(v, 0), Y8, ys[2*v])
		g.VFMADD231PS(vm(v, 32), Y9, ys[2*v+1])
	}
	g.ADDQ(U8(64), RDI)
	g.ADDQ(U8(64), R12)
	g.ADDQ(U8(64), R13)
	g.SUBQ(U8(2), RBX)
	g.CMPQ(RBX, U8(2))
	g.JGE(lab("f32rowsqtwo"))
	g.Label("f32rowsqone")
	g.TESTQ(RBX, RBX)
	g.JZ(lab("f32rowsqtail"))
	g.VMOVUPS(m(RDI, 0), Y8)
	for v := 0; v < 4; v++ {
		g.VFMADD231PS(vm(v, 0), Y8, ys[2*v])
	}
	g.ADDQ(U8(32), RDI)
	g.ADDQ(U8(32), R12)
	g.ADDQ(U8(32), R13)
	g.Label("f32rowsqtail")
	g.TESTQ(R11, R11)
	g.JZ(lab("f32rowsqsum"))
	g.VMASKMOVPS(m(RDI, 0), Y13, Y8)
	for v := 0; v < 4; v++ {
		g.VMASKMOVPS(vm(v, 0), Y13, Y9)
		g.VFMADD231PS(Y8, Y9, ys[2*v+1])
	}
	g.Label("f32rowsqsum")
	// Vector v's output: y + v·ystride (SI), through R15 for v ≥ 2.
	out := []Mem{m(R9, 0), mi(R9, 0, RSI, 1), m(R15, 0), mi(R15, 0, RSI, 1)}
	for v := 0; v < 4; v++ {
		if v == 2 {
			g.LEAQ(mi(R9, 0, RSI, 2), R15)
		}
		g.VADDPS(ys[2*v+1], ys[2*v], ys[2*v])
		g.hsum(256, 2*v, 8+v)
		g.VADDSS(out[v], xs[2*v], xs[2*v])
		g.VMOVSS(xs[2*v], out[v])
	}
	g.ADDQ(U8(4), R9)
	g.ADDQ(R8, RDX)
	g.DECQ(RCX)
	g.JNZ(lab("f32rowsqrow"))
	g.VZEROUPPER()
	g.RET()
}
