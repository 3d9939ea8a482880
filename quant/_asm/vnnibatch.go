package main

import (
	"fmt"

	"github.com/mmcloughlin/avo/attr"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The vnni family's multi-column kernels for DotBatch: one Q4_0 or Q8_0
// tile against four prepared int8 activation columns at once (and, for
// the vnnipair path's last columns of a batch, two or three). Each weight
// row is loaded (and split into nibbles) once for all the columns, and
// rows × columns accumulators, sixteen in all, are reduced together in
// one tree (vnniTree). Activations are memory operands (each column's
// 64-byte blocks sit in L1 across the tile's rows). Each column's sums go
// through the same instructions at every count, so they keep Dot's bits.
func (g *gen) vnniBatch(t vnniTables) {
	for _, c := range []codec{q4_0, q8_0} {
		for _, cols := range []int{2, 3, 4} {
			g.vnniCols(t, c, cols)
		}
	}
}

// vnniTree reduces the sixteen accumulators Z8–Z23 (n = register − 8)
// into Z8, lane n holding accumulator n's sum: the single-column kernels'
// tree with scratch Z24, Z25; perm holds rowperm.
func (g *gen) vnniTree(perm VecPhysical) {
	z := func(i int) VecPhysical {
		return []VecPhysical{Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15, Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23}[i]
	}
	for level, step := 0, 1; step < 16; level, step = level+1, step*2 {
		imm := [][2]uint8{{0x44, 0xee}, {0x88, 0xdd}, {0x44, 0xee}, {0x88, 0xdd}}[level]
		for a := 0; a < 16; a += 2 * step {
			if level < 2 {
				g.VSHUFF64X2(U8(imm[0]), z(a+step), z(a), Z24)
				g.VSHUFF64X2(U8(imm[1]), z(a+step), z(a), Z25)
			} else {
				g.VSHUFPS(U8(imm[0]), z(a+step), z(a), Z24)
				g.VSHUFPS(U8(imm[1]), z(a+step), z(a), Z25)
			}
			g.VADDPS(Z25, Z24, z(a))
		}
	}
	g.VPERMPS(Z8, perm, Z8)
}

// vnniCols is q4vnni512xN or q8vnni512xN. Four or three columns take four
// rows a step (column j's row r in Z8+4j+r; with three, Z20–Z23 are
// zeroed once and stay zero through the tree, lanes 12–15 not stored), so
// rows must be a positive multiple of 4; two columns take eight (column
// j's row r in Z8+8j+r), a multiple of 8.
func (g *gen) vnniCols(t vnniTables, c codec, cols int) {
	name := fmt.Sprintf("%svnni512x%d", c, cols)
	recType, rec := "vnniCol", 40
	masks := "k0, k1, kg int"
	if c == q8_0 {
		recType, rec, masks = "vnniCol8", 32, "k0, k1, k2, k3, kg int"
	}
	doc := []string{fmt.Sprintf("%s adds one %s tile's rows [0, rows) times %d columns into", name,
		map[codec]string{q4_0: "Q4_0", q8_0: "Q8_0"}[c], cols),
		fmt.Sprintf("their outputs (the vnni path's DotBatch); rows must be a positive multiple of %d.", map[int]int{2: 8, 3: 4, 4: 4}[cols])}
	g.text(name, attr.NOSPLIT, 0, fmt.Sprintf("func(sc, data *byte, rows, groups int, cols *[%d]%s, %s)", cols, recType, masks), doc...)
	loop := fmt.Sprintf("x%d", cols)
	if c == q8_0 {
		loop = map[int]string{2: "x8x2", 3: "x8x3", 4: "x8"}[cols]
	}
	loop += "loop"
	g.arg("sc", RSI)
	g.arg("data", RDI)
	g.arg("rows", RCX)
	g.arg("groups", R8)
	g.arg("cols", RBX)
	g.kmask("k0", K1)
	g.kmask("k1", K2)
	perm := Z29
	if c == q4_0 {
		g.kmask("kg", K3)
		g.MOVL(U32(0x0f0f0f0f), EAX)
		g.VPBROADCASTD(EAX, Z31)
		g.VMOVDQU32(t.idx4a, Z27)
		g.VMOVDQU32(t.idx4b, Z28)
		g.VMOVDQU32(t.rowperm, Z29)
	} else {
		perm = Z26
		g.kmask("k2", K4)
		g.kmask("k3", K5)
		g.kmask("kg", K3)
		g.MOVL(U32(0x80808080), EAX)
		g.VPBROADCASTD(EAX, Z31)
		for i, z := range []VecPhysical{Z27, Z28, Z29, Z30} {
			g.VMOVDQU32(t.idx8[i], z)
		}
		g.VMOVDQU32(t.rowperm, Z26)
	}
	g.LEAQ(mi(R8, 0, R8, 1), R10)
	g.MOVQ(R8, R11)
	g.SHLQ(U8(map[codec]uint8{q4_0: 4, q8_0: 5}[c]), R11)
	g.XORQ(R9, R9)
	if cols == 3 {
		for _, z := range []VecPhysical{Z20, Z21, Z22, Z23} {
			g.VPXORD(z, z, z)
		}
	}
	zs := []VecPhysical{Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15, Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23}
	rows := map[int]int{2: 8, 3: 4, 4: 4}[cols]
	g.Label(loop)
	for r := 0; r < rows; r++ {
		if c == q4_0 {
			g.vnniLoadRow4()
		} else {
			g.vnniLoadRow8()
		}
		for j := 0; j < cols; j++ {
			acc := zs[rows*j+r]
			if c == q4_0 {
				g.vnniCol4(j*rec, acc)
			} else {
				g.vnniCol8(j*rec, acc)
			}
		}
	}
	g.vnniTree(perm)
	// Column j's rows (lanes rows·j ..) into its y at R9.
	yoff := map[codec]int{q4_0: 32, q8_0: 24}[c]
	for j := 0; j < cols; j++ {
		if rows == 8 {
			g.VEXTRACTF64X4(U8(j), Z8, Y24)
		} else {
			g.VEXTRACTF32X4(U8(j), Z8, X24)
		}
		v := map[int]VecPhysical{8: Y24, 4: X24}[rows]
		g.MOVQ(m(RBX, yoff+j*rec), RAX)
		g.VADDPS(mi(RAX, 0, R9, 1), v, v)
		g.VMOVUPS(v, mi(RAX, 0, R9, 1))
	}
	g.ADDQ(U8(4*rows), R9)
	g.SUBQ(U8(rows), RCX)
	g.JNZ(lab(loop))
	g.VZEROUPPER()
	g.RET()
}

// vnniLoadRow4 loads a Q4_0 row: its scales (Y0, zero past the tile's
// groups) and its nibbles, groups 0–3 low/high in Z3/Z4 and 4–7 in Z5/Z6;
// advances SI, DI. Prefetches as the single-column kernel's row.
func (g *gen) vnniLoadRow4() {
	g.PREFETCHT0(m(RDI, 2048))
	g.PREFETCHT0(m(RDI, 2112))
	g.PREFETCHT1(m(RDI, 8192))
	g.PREFETCHT1(m(RDI, 8256))
	g.VCVTPH2PS_Z(m(RSI, 0), K3, Y0)
	g.VMOVDQU32_Z(m(RDI, 0), K1, Z3)
	g.VPSRLW(U8(4), Z3, Z4)
	g.VPANDD(Z31, Z3, Z3)
	g.VPANDD(Z31, Z4, Z4)
	g.VMOVDQU32_Z(m(RDI, 64), K2, Z5)
	g.VPSRLW(U8(4), Z5, Z6)
	g.VPANDD(Z31, Z5, Z5)
	g.VPANDD(Z31, Z6, Z6)
	g.ADDQ(R10, RSI)
	g.ADDQ(R11, RDI)
}

// vnniCol4 adds the loaded Q4_0 row times one column (its vnniCol at
// rec(BX)) into acc: per block the −8·Σx bias, two VPDPBUSD against the
// column's int8 halves, converted and scaled per lane by row scale ×
// column scale.
func (g *gen) vnniCol4(rec int, acc VecPhysical) {
	g.MOVQ(m(RBX, rec+24), RAX)
	g.VMULPS(m(RAX, 0), Y0, Y2)
	g.VPERMPS(Z2, Z28, Z1)
	g.VPERMPS(Z2, Z27, Z2)
	g.MOVQ(m(RBX, rec+16), RAX)
	g.MOVQ(m(RBX, rec), RDX)
	g.MOVQ(m(RBX, rec+8), R12)
	g.VMOVDQU32_Z(m(RAX, 0), K1, Z7)
	g.vpdpbusd(m(RDX, 0), Z3, Z7)
	g.vpdpbusd(m(R12, 0), Z4, Z7)
	g.VCVTDQ2PS(Z7, Z7)
	g.VMULPS(Z2, Z7, acc)
	g.VMOVDQU32_Z(m(RAX, 64), K2, Z7)
	g.vpdpbusd(m(RDX, 64), Z5, Z7)
	g.vpdpbusd(m(R12, 64), Z6, Z7)
	g.VCVTDQ2PS(Z7, Z7)
	g.VFMADD231PS(Z1, Z7, acc)
}

// vnniLoadRow8 loads a Q8_0 row: its scales (Y0) and its four 64-byte
// blocks of two groups in Z3–Z6, made unsigned by flipping the sign bit
// (the −128·Σx bias lanes undo it); advances SI, DI.
func (g *gen) vnniLoadRow8() {
	for i := 0; i < 4; i++ {
		g.PREFETCHT0(m(RDI, 2048+64*i))
	}
	g.VCVTPH2PS_Z(m(RSI, 0), K3, Y0)
	ws := []VecPhysical{Z3, Z4, Z5, Z6}
	for i, b := range q8blocks {
		g.VMOVDQU32_Z(m(RDI, 64*i), b.k, ws[i])
	}
	for _, w := range ws {
		g.VPXORD(Z31, w, w)
	}
	g.ADDQ(R10, RSI)
	g.ADDQ(R11, RDI)
}

// vnniCol8 adds the loaded Q8_0 row times one column (its vnniCol8 at
// rec(BX): x8, c8, dx) into acc: per block the bias lanes (masked like the
// weights), VPDPBUSD against the column's int8 values, converted, scaled
// by the block's expanded scales (from Z2).
func (g *gen) vnniCol8(rec int, acc VecPhysical) {
	g.MOVQ(m(RBX, rec+16), RAX)
	g.VMULPS(m(RAX, 0), Y0, Y2)
	g.MOVQ(m(RBX, rec+8), RAX)
	g.MOVQ(m(RBX, rec), RDX)
	ws := []VecPhysical{Z3, Z4, Z5, Z6}
	idx := []VecPhysical{Z27, Z28, Z29, Z30}
	for i, b := range q8blocks {
		g.VMOVDQU32_Z(m(RAX, 64*i), b.k, Z7)
		g.vpdpbusd(m(RDX, 64*i), ws[i], Z7)
		g.VCVTDQ2PS(Z7, Z7)
		g.VPERMPS(Z2, idx[i], Z1)
		if i == 0 {
			g.VMULPS(Z1, Z7, acc)
		} else {
			g.VFMADD231PS(Z1, Z7, acc)
		}
	}
}
