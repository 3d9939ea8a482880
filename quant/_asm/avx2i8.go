package main

import (
	"fmt"

	"github.com/mmcloughlin/avo/attr"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The avx2i8 family: AVX2 kernels with int8 activations for CPUs with
// AVX2 but no VNNI (AMD Zen 2/3, Intel Haswell–Comet Lake). VPMADDUBSW
// (unsigned × signed bytes, pairs summed to int16) followed by VPMADDWD
// against int16 ones sums four byte products into each dword, the lane
// layout VPDPBUSD gives, so the Vec's int8 views and the Q4 bias lanes
// (c4) serve both. Q8 weights are signed: their magnitude goes unsigned
// and their sign onto the activation (VPABSB, VPSIGNB), which keeps every
// int16 pair sum below 2·128·127 and away from VPMADDUBSW's saturation.
// Q4 runs four rows at a time with the rows as lanes (q4rows.go), for one
// column (decode, also over two tile streams) or 2–4 (DotBatch); Q8 four
// rows at a time for one column, one row against 2–4 columns.
// See docs/PERFORMANCE.md ("Kernels", "Decode stream", "Batched kernels").
func avx2i8Family(g *gen) {
	t := avx2i8Tables{
		// sc16mask: the 16 bytes at sc16mask+16−2G keep a short row's G f16
		// scales and zero the rest (the next row's).
		sc16mask: g.static("sc16mask", ^uint64(0), ^uint64(0), 0, 0),
		// q4ones: int16 ones for VPMADDWD (q4Sum).
		q4ones: g.static("q4ones", 0x0001000100010001, 0x0001000100010001, 0x0001000100010001, 0x0001000100010001),
	}
	for _, cols := range []int{4, 2, 3} {
		g.q4avx2i8Cols(t, cols)
	}
	for _, cols := range []int{4, 2, 3} {
		g.q8avx2i8Cols(t, cols)
	}
	g.q4avx2i8(t)
	g.q4avx2i8Pair(t)
	g.q8avx2i8()
	g.quantize256()
}

// avx2i8Tables are the family's file-static constants.
type avx2i8Tables struct{ sc16mask, q4ones Mem }

// pfd is how far ahead of the 4-row block the full-row Q4 loops (and the
// Q8 loops) prefetch their data stream into L1 (the scale stream pfd/8
// ahead for Q4, pfd/16 for Q8: the same distance in tiles): DRAM lines
// stay in flight while a block computes. On the loaded Zen 3 VM, a 256 MiB
// Q4 matvec went from 90% of a plain read loop's rate without it to 108%
// at 4 KiB (median of 5; noisy). The decode Q4 loop prefetches with
// PREFETCHNTA: its weights are read once per token, and the non-temporal
// hint keeps them from displacing the activations, KV cache and norms
// that the token's serial work reads next; the stream runs at the same
// rate as with PREFETCHT0, and a decode token's 2-thread pass took 0.94x
// the time (docs/PERFORMANCE.md, log at 0382674, "Session 6: the stream"). The
// multi-column kernels keep PREFETCHT0: a 4-token pass was no faster with
// NTA. Without it a multi-column tile streaming from DRAM ran at about 60%
// of its L1-resident speed ("Zen 3: q4avx2i8x4 and q8avx2i8x4"). Past a
// tile's end it reaches the next tile of the stripe, which follows in the
// file.
const pfd = 4096

// labels returns a namer for one body copy's labels: prefix+name+suffix,
// unique within the function.
func labels(prefix string, k int) func(string) string {
	return func(name string) string { return fmt.Sprintf("%s%s%d", prefix, name, k) }
}

// q4Layout is where a Q4 kernel's frame (from SP+k) keeps column c's
// block, its tables for the current block, and the 64 bytes of scale
// slots (16 per row, zero past the row's groups).
type q4Layout struct {
	col, tab func(k, c int) int
	slot     func(k int) int
}

// decodeLayout is the one-column kernels' frame: the column block at 0,
// the tables at 1280, the slots at 1408; 1472 bytes plus 24 for the
// largest k.
var decodeLayout = q4Layout{
	col:  func(k, _ int) int { return k },
	tab:  func(k, _ int) int { return k + q4ColBytes },
	slot: func(k int) int { return k + 1408 },
}

const decodeFrame = 1496

// batchLayout is the multi-column kernels' frame whatever the count:
// column c's block at c·1280, its tables at 5120 + c·128, the slots at
// 5632; 5696 bytes plus 24.
var batchLayout = q4Layout{
	col:  func(k, c int) int { return k + c*q4ColBytes },
	tab:  func(k, c int) int { return k + 5120 + c*128 },
	slot: func(k int) int { return k + 5632 },
}

const batchFrame = 5720

// q4Pair is a Q4 kernel's group-pair step for frame displacement k and
// cols columns: the block's nibbles are built once (q4Build) and each
// column's sums go through the same instructions as in the one-column
// kernel, so every column gets Dot's bits for every tile shape.
func (g *gen) q4Pair(t avx2i8Tables, lay q4Layout, k, cols int) q4PairFunc {
	return func(p int, w [4]VecPhysical, first bool) {
		g.q4Build(p, w)
		for c := 0; c < cols; c++ {
			g.q4Sum(lay.col(k, c), p, t.q4ones)
			g.q4Acc(first, lay.tab(k, c)+32*p, []VecPhysical{Y0, Y1, Y2, Y3}[c])
		}
	}
}

// edgePrefetch prefetches the pfd bytes of data from `from` on, with cur
// and cnt as scratch. The full-row loop prefetches pfd ahead of its
// block, so a tile's first pfd bytes are its predecessor's to fetch. When
// the predecessor ran just before (a stripe's tiles are contiguous), its
// last blocks covered only the first pfd − (header + scales) bytes: the
// next 2 KiB were left to the hardware prefetcher, 11% of every 18 KiB
// tile; and a stripe taken after another thread's (or a matvec's first)
// starts cold. So the first pfd bytes are prefetched at entry; lines
// already on their way cost one instruction each.
func (g *gen) edgePrefetch(from, cur, cnt Register, edge string) {
	g.MOVQ(from, cur)
	g.MOVQ(U32(pfd/64), cnt)
	g.Label(edge)
	g.PREFETCHNTA(m(cur, 0))
	g.ADDQ(U8(64), cur)
	g.DECQ(cnt)
	g.JNZ(lab(edge))
}

// q4DecodeBlock runs one full block (four 8-group rows) of the one-column
// full-row loop: its prefetches pfd ahead, the scales and tables, the four
// group pairs, and the rows' sums added into y at R9.
func (g *gen) q4DecodeBlock(t avx2i8Tables, k int) {
	g.q4Prefetch(g.PREFETCHNTA, pfd, 8)
	g.q4Scales(fullScales)
	g.q4Tab(decodeLayout.col(k, 0), decodeLayout.tab(k, 0))
	q4FullPairs(g.q4Pair(t, decodeLayout, k, 1))
	g.q4Halves(Y0, X0)
	g.VADDPS(m(R9, 0), X0, X0)
	g.VMOVUPS(X0, m(R9, 0))
}

// q4avx2i8 is the decode kernel: four rows at a time with the rows as
// lanes; full rows (8 groups) take the unrolled, prefetching loop; short
// rows and the last rows mod 4 the general one, which runs the last rows
// one at a time as a block whose four rows are the same row (stride 0),
// keeping lane 0.
func (g *gen) q4avx2i8(t avx2i8Tables) {
	g.text("q4avx2i8", 0, decodeFrame, "func(sc, data *byte, rows, groups int, xl, xh *int8, c4 *int32, dx, y *float32)",
		"q4avx2i8 adds one Q4_0 tile's rows times one int8 activation column",
		"into y (the avx2i8 path's Dot): the group sums are exact integers, bias",
		"included, so tiles with pad nibbles need nothing special.")
	g.arg("sc", RSI)
	g.arg("data", RDI)
	g.arg("rows", RCX)
	g.arg("groups", R8)
	g.arg("xl", RAX)
	g.arg("xh", RBX)
	g.arg("c4", RDX)
	g.arg("dx", R14)
	g.arg("y", R9)
	copyLabel := func(k int) string { return fmt.Sprintf("q4i8k%d", k) }
	g.alignJump(R10, copyLabel)
	for _, k := range frameShifts {
		if k != 0 {
			g.Label(copyLabel(k))
		}
		l := labels("q4i8", k)
		g.q4ColPrep(decodeLayout.col(k, 0), RAX, RBX, RDX, R14)
		g.q4Entry(decodeLayout.slot(k), t.sc16mask, l("gen"))
		g.edgePrefetch(RDI, RAX, RBX, l("edge"))
		g.Label(l("full"))
		g.q4DecodeBlock(t, k)
		g.q4NextFull(l("full"))
		g.Label(l("gen"))
		g.TESTQ(RCX, RCX)
		g.JZ(lab("q4i8done"))
		g.q4ScRows(decodeLayout.slot(k), l, l("gtab"))
		g.Label(l("gtab"))
		g.q4Tab(decodeLayout.col(k, 0), decodeLayout.tab(k, 0))
		g.q4GenPairs(g.q4Pair(t, decodeLayout, k, 1), l, l("gend"))
		g.Label(l("gend"))
		g.q4Halves(Y0, X0)
		g.CMPQ(RCX, U8(4))
		g.JLT(lab(l("gendone")))
		g.VADDPS(m(R9, 0), X0, X0)
		g.VMOVUPS(X0, m(R9, 0))
		g.q4NextGen(l("gen"))
		g.Label(l("gendone"))
		g.VADDSS(m(R9, 0), X0, X0)
		g.VMOVSS(X0, m(R9, 0))
		g.ADDQ(R12, RDI)
		g.ADDQ(R13, RSI)
		g.ADDQ(U8(4), R9)
		g.DECQ(RCX)
		g.JMP(lab(l("gen")))
	}
	g.Label("q4i8done")
	g.VZEROUPPER()
	g.RET()
}

// q4avx2i8Pair is q4avx2i8's full-row loop over two tiles at once: tile A
// (sc, data, y) and tile B (scB, dataB, yB), both of `rows` full rows (8
// groups, rows a multiple of 4, as DotPair's wrapper checks) over the
// same columns, so one column preparation serves both. Blocks of four rows
// are taken from A and B in turn, each stream prefetching pfd ahead of
// its own block: two DRAM streams far apart in the file keep more of one
// core's misses in flight than one stream does (docs/PERFORMANCE.md, log at 0382674,
// "Session 9: two tile streams per thread"). Each block is the same
// instruction sequence as q4avx2i8's, so every row gets the bits Dot
// gives it. Between blocks the streams' cursors swap: A's DI, SI, R9 with
// B's in AX, BX, DX.
func (g *gen) q4avx2i8Pair(t avx2i8Tables) {
	g.text("q4avx2i8pair", 0, decodeFrame, "func(sc, data, scB, dataB *byte, rows int, xl, xh *int8, c4 *int32, dx, y, yB *float32)",
		"q4avx2i8pair is q4avx2i8 over two tiles of full rows (8 groups, the same",
		"rows, a multiple of 4) against the same column, their blocks",
		"interleaved so that two DRAM streams are in flight.")
	g.arg("sc", RSI)
	g.arg("data", RDI)
	g.arg("rows", RCX)
	g.MOVQ(U32(8), R8)
	g.arg("xl", RAX)
	g.arg("xh", RBX)
	g.arg("c4", RDX)
	g.arg("dx", R14)
	g.arg("y", R9)
	copyLabel := func(k int) string { return fmt.Sprintf("q4pk%d", k) }
	g.alignJump(R10, copyLabel)
	for _, k := range frameShifts {
		if k != 0 {
			g.Label(copyLabel(k))
		}
		l := labels("q4p", k)
		g.q4ColPrep(decodeLayout.col(k, 0), RAX, RBX, RDX, R14)
		// The general-loop exit is never taken (the wrapper sends only
		// full rows here), so it goes straight to done.
		g.q4Entry(decodeLayout.slot(k), t.sc16mask, "q4pdone")
		g.arg("dataB", RAX)
		g.arg("scB", RBX)
		g.arg("yB", RDX)
		g.edgePrefetch(RDI, R14, R13, l("edgea"))
		g.edgePrefetch(RAX, R14, R13, l("edgeb"))
		g.Label(l("full"))
		for i := 0; i < 2; i++ {
			g.q4DecodeBlock(t, k)
			g.ADDQ(U32(512), RDI)
			g.ADDQ(U8(64), RSI)
			g.ADDQ(U8(16), R9)
			g.XCHGQ(RDI, RAX)
			g.XCHGQ(RSI, RBX)
			g.XCHGQ(R9, RDX)
		}
		g.SUBQ(U8(4), RCX)
		g.CMPQ(RCX, U8(4))
		g.JGE(lab(l("full")))
		g.JMP(lab("q4pdone"))
	}
	g.Label("q4pdone")
	g.VZEROUPPER()
	g.RET()
}

// q4avx2i8Cols is q4avx2i8's blocks of four rows against cols (2–4)
// columns (DotBatch; two or three: a server tick with that many clients
// decoding, a prompt's last B mod 4 columns): each block's group pairs are
// loaded and mixed once for the columns, one pass over the tile keeping
// the DRAM stream going for all of them. The frame is the four-column
// layout whatever the count.
func (g *gen) q4avx2i8Cols(t avx2i8Tables, cols int) {
	name := fmt.Sprintf("q4avx2i8x%d", cols)
	doc := []string{name + " adds one Q4_0 tile times " + []string{"", "", "two", "three", "four"}[cols] + " int8 activation columns into",
		"their outputs (the avx2i8 path's DotBatch): each block of four rows is",
		"mixed and split once for the columns, and each column's sums go",
		"through q4avx2i8's arithmetic, so each column gets Dot's bits."}
	g.text(name, 0, batchFrame, fmt.Sprintf("func(sc, data *byte, rows, groups int, cols *[%d]vnniCol)", cols), doc...)
	g.arg("sc", RSI)
	g.arg("data", RDI)
	g.arg("rows", RCX)
	g.arg("groups", R8)
	g.arg("cols", RBX)
	pre := fmt.Sprintf("q4x%d", cols)
	done := pre + "done"
	copyLabel := func(k int) string { return fmt.Sprintf("%sk%d", pre, k) }
	g.alignJump(RAX, copyLabel)
	ys := []VecPhysical{Y0, Y1, Y2, Y3}
	xs := []VecPhysical{X0, X1, X2, X3}
	// out adds each column's four row sums (or lane 0's, one) into its y
	// (pointer at c·40+32(BX), vnniCol.y) at row offset R9.
	out := func(four bool) {
		for c := 0; c < cols; c++ {
			g.q4Halves(ys[c], xs[c])
			g.MOVQ(m(RBX, c*40+32), R14)
			if four {
				g.VADDPS(mi(R14, 0, R9, 1), xs[c], xs[c])
				g.VMOVUPS(xs[c], mi(R14, 0, R9, 1))
			} else {
				g.VADDSS(mi(R14, 0, R9, 1), xs[c], xs[c])
				g.VMOVSS(xs[c], mi(R14, 0, R9, 1))
			}
		}
	}
	tabs := func(k int) {
		for c := 0; c < cols; c++ {
			g.q4Tab(batchLayout.col(k, c), batchLayout.tab(k, c))
		}
	}
	for _, k := range frameShifts {
		if k != 0 {
			g.Label(copyLabel(k))
		}
		l := labels(pre, k)
		// Column c's block from cols[c] (vnniCol: xl, xh, c4, dx at
		// +0..+24).
		for c := 0; c < cols; c++ {
			g.MOVQ(m(RBX, c*40), RAX)
			g.MOVQ(m(RBX, c*40+8), RDX)
			g.MOVQ(m(RBX, c*40+16), R10)
			g.MOVQ(m(RBX, c*40+24), R11)
			g.q4ColPrep(batchLayout.col(k, c), RAX, RDX, R10, R11)
		}
		g.XORQ(R9, R9)
		g.q4Entry(batchLayout.slot(k), t.sc16mask, l("gen"))
		g.Label(l("full"))
		g.q4Prefetch(g.PREFETCHT0, pfd, 8)
		g.q4Scales(fullScales)
		tabs(k)
		q4FullPairs(g.q4Pair(t, batchLayout, k, cols))
		out(true)
		g.q4NextFull(l("full"))
		g.Label(l("gen"))
		g.TESTQ(RCX, RCX)
		g.JZ(lab(done))
		g.q4Prefetch(g.PREFETCHT0, pfd, 7)
		g.q4ScRows(batchLayout.slot(k), l, l("gtab"))
		g.Label(l("gtab"))
		tabs(k)
		g.q4GenPairs(g.q4Pair(t, batchLayout, k, cols), l, l("gend"))
		g.Label(l("gend"))
		g.CMPQ(RCX, U8(4))
		g.JLT(lab(l("gendone")))
		out(true)
		g.q4NextGen(l("gen"))
		g.Label(l("gendone"))
		out(false)
		g.ADDQ(R12, RDI)
		g.ADDQ(R13, RSI)
		g.ADDQ(U8(4), R9)
		g.DECQ(RCX)
		g.JMP(lab(l("gen")))
	}
	g.Label(done)
	g.VZEROUPPER()
	g.RET()
}

// rowScales writes, for rowsz bytes of frame (32 per row), each row's f16
// scales times the activation scales (Y12; R15 points at them) as 8
// floats at r·32(SP), rows' scales starting at SI (2·R8 bytes apart). Full
// rows (8 groups) convert with one VCVTPH2PS each; otherwise one scale at
// a time, so nothing past the scale array is read, and lanes ≥ groups
// keep the zeros stored at entry. Clobbers AX, BX, DX, R12, Y4.
func (g *gen) rowScales(rowsz int, l func(string) string) {
	g.CMPQ(R8, U8(8))
	g.JNE(lab(l("part")))
	g.XORQ(RDX, RDX)
	g.Label(l("full"))
	g.VCVTPH2PS(mi(RSI, 0, RDX, 1), Y4)
	g.VMULPS(Y12, Y4, Y4)
	g.VMOVUPS(Y4, spi(0, RDX, 2))
	g.ADDQ(U8(16), RDX)
	g.CMPQ(RDX, U8(rowsz/2))
	g.JLT(lab(l("full")))
	g.JMP(lab(l("done")))
	g.Label(l("part"))
	g.MOVQ(RSI, R12)
	g.XORQ(RDX, RDX)
	g.Label(l("row"))
	g.XORQ(RBX, RBX)
	g.Label(l("el"))
	g.MOVWLZX(m(R12, 0), EAX)
	g.VMOVD(EAX, X4)
	g.VCVTPH2PS(X4, X4)
	g.VMULSS(mi(R15, 0, RBX, 4), X4, X4)
	g.LEAQ(spi(0, RDX, 1), RAX)
	g.VMOVSS(X4, mi(RAX, 0, RBX, 4))
	g.ADDQ(U8(2), R12)
	g.INCQ(RBX)
	g.CMPQ(RBX, R8)
	g.JLT(lab(l("el")))
	g.ADDQ(U8(32), RDX)
	g.CMPQ(RDX, U32(rowsz))
	g.JLT(lab(l("row")))
	g.Label(l("done"))
}

// q8Row adds one row's group (32 int8 weights at w) against the
// activation group in Y9 into acc, scaled by the row's scale at sc.
func (g *gen) q8Row(w, sc Mem, acc VecPhysical) {
	g.VMOVDQU(w, Y4)
	g.VPSIGNB(Y4, Y9, Y5)
	g.VPABSB(Y4, Y4)
	g.VPMADDUBSW(Y5, Y4, Y4)
	g.VPMADDWD(Y14, Y4, Y4)
	g.VCVTDQ2PS(Y4, Y4)
	g.VBROADCASTSS(sc, Y5)
	g.VFMADD231PS(Y5, Y4, acc)
}

// q8avx2i8 is the one-column Q8_0 kernel: four rows at a time, each
// activation group loaded once for them, the four rows' float sums
// reduced together (VHADDPS) into one 4-float update of y. Frame: four
// rows' scale tables.
func (g *gen) q8avx2i8() {
	g.text("q8avx2i8", attr.NOSPLIT, 160, "func(sc, data *byte, rows, groups int, x8 *int8, dx, y *float32)",
		"q8avx2i8 adds one Q8_0 tile's rows times one int8 activation column",
		"into y (the avx2i8 path's Dot).")
	g.arg("sc", RSI)
	g.arg("data", RDI)
	g.arg("rows", RCX)
	g.arg("groups", R8)
	g.arg("dx", R15)
	g.VMOVUPS(m(R15, 0), Y12)
	g.arg("y", R9)
	g.MOVL(U32(0x00010001), EAX)
	g.VMOVD(EAX, X14)
	g.VPBROADCASTD(X14, Y14)
	g.MOVQ(R8, R10)
	g.SHLQ(U8(5), R10)              // a row's weight bytes
	g.LEAQ(mi(R10, 0, R10, 2), R11) // three rows'
	g.LEAQ(m(RDI, pfd), R14)        // prefetch cursor, 128 bytes per group step
	g.CMPQ(RCX, U8(4))
	g.JLT(lab("q8i8one"))

	g.Label("q8i8four")
	g.PREFETCHT0(m(RSI, pfd/16))
	g.rowScales(128, labels("q8i8sc4", 0))
	for _, r := range []VecPhysical{Y0, Y1, Y2, Y3} {
		g.VXORPS(r, r, r)
	}
	g.arg("x8", R12)
	g.MOVQ(RSP, RAX)
	g.MOVQ(R8, RBX)
	g.Label("q8i8fourg")
	g.PREFETCHT0(m(R14, 0))
	g.PREFETCHT0(m(R14, 64))
	g.ADDQ(U32(128), R14)
	g.VMOVDQU(m(R12, 0), Y9)
	g.q8Row(m(RDI, 0), m(RAX, 0), Y0)
	g.q8Row(mi(RDI, 0, R10, 1), m(RAX, 32), Y1)
	g.q8Row(mi(RDI, 0, R10, 2), m(RAX, 64), Y2)
	g.q8Row(mi(RDI, 0, R11, 1), m(RAX, 96), Y3)
	g.ADDQ(U8(32), RDI)
	g.ADDQ(U8(32), R12)
	g.ADDQ(U8(4), RAX)
	g.DECQ(RBX)
	g.JNZ(lab("q8i8fourg"))
	// The four rows' horizontal sums into y[0:4].
	g.VHADDPS(Y1, Y0, Y0)
	g.VHADDPS(Y3, Y2, Y2)
	g.VHADDPS(Y2, Y0, Y0)
	g.VEXTRACTF128(U8(1), Y0, X1)
	g.VADDPS(X1, X0, X0)
	g.VADDPS(m(R9, 0), X0, X0)
	g.VMOVUPS(X0, m(R9, 0))
	g.ADDQ(R11, RDI)
	g.LEAQ(mi(RSI, 0, R8, 8), RSI)
	g.ADDQ(U8(16), R9)
	g.SUBQ(U8(4), RCX)
	g.CMPQ(RCX, U8(4))
	g.JGE(lab("q8i8four"))

	g.Label("q8i8one")
	g.TESTQ(RCX, RCX)
	g.JZ(lab("q8i8done"))
	g.rowScales(32, labels("q8i8sc1", 0))
	g.VXORPS(Y0, Y0, Y0)
	g.arg("x8", R12)
	g.MOVQ(RSP, RAX)
	g.MOVQ(R8, RBX)
	g.Label("q8i8oneg")
	g.VMOVDQU(m(R12, 0), Y9)
	g.q8Row(m(RDI, 0), m(RAX, 0), Y0)
	g.ADDQ(U8(32), RDI)
	g.ADDQ(U8(32), R12)
	g.ADDQ(U8(4), RAX)
	g.DECQ(RBX)
	g.JNZ(lab("q8i8oneg"))
	// Y0's horizontal sum with the four-row reduction's pairing,
	// (l0+l1)+(l2+l3) + (l4+l5)+(l6+l7).
	g.VHADDPS(Y0, Y0, Y0)
	g.VHADDPS(Y0, Y0, Y0)
	g.VEXTRACTF128(U8(1), Y0, X1)
	g.VADDPS(X1, X0, X0)
	g.VADDSS(m(R9, 0), X0, X0)
	g.VMOVSS(X0, m(R9, 0))
	g.LEAQ(mi(RSI, 0, R8, 2), RSI)
	g.ADDQ(U8(4), R9)
	g.DECQ(RCX)
	g.JNZ(lab("q8i8one"))

	g.Label("q8i8done")
	g.VZEROUPPER()
	g.RET()
}

// Frame of q8avx2i8x2..x4 (the four-column layout whatever the count):
// column c's row scales at c·32, the row's own at 160, its x8 block and dx
// at 192 + c·288 (+0, +256), the row sums (four floats per row, columns
// 0..3) at 1344.
const q8Rows = 1344

func q8x(c int) int  { return 192 + c*288 }
func q8dx(c int) int { return 192 + c*288 + 256 }

// q8avx2i8Cols is the Q8_0 kernel for cols (2–4) columns: each column's
// activation block is copied into the frame at entry, so the inner loop
// addresses the columns off SP. Each row: its scales, the columns'
// tables, one pass over its groups with each weight vector loaded and its
// magnitude taken once for all the columns, the row sums reduced in the
// one-column kernel's order into the frame; they are added into the
// outputs at the end. Column c's instructions are the same at every
// count, so each column keeps Dot's bits.
func (g *gen) q8avx2i8Cols(t avx2i8Tables, cols int) {
	name := fmt.Sprintf("q8avx2i8x%d", cols)
	g.text(name, 0, 3392, fmt.Sprintf("func(sc, data *byte, rows, groups int, cols *[%d]vnniCol)", cols),
		name+" is q4avx2i8x"+fmt.Sprint(cols)+" for Q8_0: cols[c].xl is column c's x8 (natural",
		"order); xh and c4 are unused.")
	pre := fmt.Sprintf("q8x%d", cols)
	ys := []VecPhysical{Y0, Y1, Y2, Y3}
	xs := []VecPhysical{X0, X1, X2, X3}
	g.arg("sc", RSI)
	g.arg("data", RDI)
	g.arg("rows", RCX)
	g.arg("groups", R8)
	g.arg("cols", RBX)
	for c := 0; c < cols; c++ {
		g.MOVQ(m(RBX, c*40), RAX)
		for half := 0; half < 2; half++ {
			if half == 1 {
				g.ADDQ(U32(128), RAX)
			}
			for i := 0; i < 4; i++ {
				g.VMOVDQU(m(RAX, 32*i), ys[i])
			}
			for i := 0; i < 4; i++ {
				g.VMOVDQU(ys[i], sp(q8x(c)+128*half+32*i))
			}
		}
		g.MOVQ(m(RBX, c*40+24), RAX)
		g.VMOVUPS(m(RAX, 0), Y0)
		g.VMOVUPS(Y0, sp(q8dx(c)))
	}
	g.MOVL(U32(0x00010001), EAX)
	g.VMOVD(EAX, X14)
	g.VPBROADCASTD(X14, Y14)
	g.VXORPS(Y0, Y0, Y0)
	g.VMOVUPS(Y0, sp(160))
	// The accumulators of the columns past cols, which the reduction still
	// adds (into lanes no one reads): zeros, where stale frame bytes could
	// be denormals or NaNs.
	for c := cols; c < 4; c++ {
		g.VXORPS(ys[c], ys[c], ys[c])
	}
	g.XORQ(R9, R9)
	g.Label(pre + "row")
	for i := 0; i < 4; i++ {
		g.PREFETCHT0(m(RDI, pfd+64*i))
	}
	g.PREFETCHT0(m(RSI, pfd/16))
	// The row's f16 scales at SI, as floats, into Y6: one 16-byte load
	// while it cannot pass the scale array's end (rows left CX · 2G ≥ 16
	// bytes), masked to the row's G lanes; else one scale at a time through
	// the zeroed slot at 160(SP). Clobbers AX, DX, R11.
	g.MOVQ(RCX, RAX)
	g.IMULQ(R8, RAX)
	g.CMPQ(RAX, U8(8))
	g.JLT(lab(pre + "dwp"))
	g.LEAQ(off(t.sc16mask, 16), R11)
	g.SUBQ(R8, R11)
	g.SUBQ(R8, R11)
	g.VMOVDQU(m(RSI, 0), X6)
	g.VPAND(m(R11, 0), X6, X6)
	g.VCVTPH2PS(X6, Y6)
	g.JMP(lab(pre + "dwd"))
	g.Label(pre + "dwp")
	g.XORQ(RDX, RDX)
	g.Label(pre + "dwe")
	g.MOVWLZX(mi(RSI, 0, RDX, 2), EAX)
	g.VMOVD(EAX, X6)
	g.VCVTPH2PS(X6, X6)
	g.VMOVSS(X6, spi(160, RDX, 4))
	g.INCQ(RDX)
	g.CMPQ(RDX, R8)
	g.JLT(lab(pre + "dwe"))
	g.VMOVUPS(sp(160), Y6)
	g.Label(pre + "dwd")
	// Each column's scale table for the row (row scales × its activation
	// scales) at c·32(SP).
	for c := 0; c < cols; c++ {
		g.VMULPS(sp(q8dx(c)), Y6, Y7)
		g.VMOVUPS(Y7, sp(c*32))
	}
	for c := 0; c < cols; c++ {
		g.VXORPS(ys[c], ys[c], ys[c])
	}
	g.XORQ(R11, R11)
	g.XORQ(RAX, RAX)
	g.MOVQ(R8, RDX)
	g.Label(pre + "grp")
	g.VMOVDQU(m(RDI, 0), Y4)
	g.VPABSB(Y4, Y5)
	// The row's group (Y4 weights, Y5 their magnitudes) times each
	// column's activation group (offset R11).
	for c := 0; c < cols; c++ {
		g.VMOVDQU(spi(q8x(c), R11, 1), Y8)
		g.VPSIGNB(Y4, Y8, Y8)
		g.VPMADDUBSW(Y8, Y5, Y8)
		g.VPMADDWD(Y14, Y8, Y8)
		g.VCVTDQ2PS(Y8, Y8)
		g.VBROADCASTSS(spi(c*32, RAX, 1), Y9)
		g.VFMADD231PS(Y9, Y8, ys[c])
	}
	g.ADDQ(U8(32), RDI)
	g.ADDQ(U8(32), R11)
	g.ADDQ(U8(4), RAX)
	g.DECQ(RDX)
	g.JNZ(lab(pre + "grp"))
	// The horizontal sums of Y0..Y3 into X8 (lane c: Yc's), added in the
	// order the one-column kernel adds a row's lanes ((0+1)+(2+3)) +
	// ((4+5)+(6+7)), so a column's sums are bit for bit the one-column
	// kernel's: a different order (unpack-and-add, tried for its
	// single-uop shuffles) moves sums by an ulp, and an ulp is enough to
	// flip a later int8 activation rounding, which batched prefill then
	// carries through the layers (verify's TestBatchedPrefillMatchesSteps,
	// llama_wide).
	g.VHADDPS(Y1, Y0, Y4)
	g.VHADDPS(Y3, Y2, Y5)
	g.VHADDPS(Y5, Y4, Y8)
	g.VEXTRACTF128(U8(1), Y8, X9)
	g.VADDPS(X9, X8, X8)
	g.VMOVUPS(X8, spi(q8Rows, R9, 4))
	g.LEAQ(mi(RSI, 0, R8, 2), RSI)
	g.ADDQ(U8(4), R9)
	g.DECQ(RCX)
	g.JNZ(lab(pre + "row"))

	// Flush: the row sums at q8Rows(SP) into the columns' outputs, four
	// rows at a time after a 4×4 transpose, the last rows mod 4 one at a
	// time.
	l4, l1, done := pre+"flush4", pre+"flush1", pre+"done"
	g.arg("rows", RCX)
	g.XORQ(R9, R9)
	g.CMPQ(RCX, U8(4))
	g.JLT(lab(l1))
	g.Label(l4)
	for i := 0; i < 4; i++ {
		g.VMOVUPS(spi(q8Rows+16*i, R9, 4), xs[i])
	}
	g.VUNPCKLPS(X1, X0, X4)
	g.VUNPCKHPS(X1, X0, X5)
	g.VUNPCKLPS(X3, X2, X6)
	g.VUNPCKHPS(X3, X2, X7)
	g.VUNPCKLPD(X6, X4, X0)
	g.VUNPCKHPD(X6, X4, X1)
	g.VUNPCKLPD(X7, X5, X2)
	g.VUNPCKHPD(X7, X5, X3)
	for c := 0; c < cols; c++ {
		g.MOVQ(m(RBX, c*40+32), R12)
		g.VADDPS(mi(R12, 0, R9, 1), xs[c], xs[c])
		g.VMOVUPS(xs[c], mi(R12, 0, R9, 1))
	}
	g.ADDQ(U8(16), R9)
	g.SUBQ(U8(4), RCX)
	g.CMPQ(RCX, U8(4))
	g.JGE(lab(l4))
	g.Label(l1)
	g.TESTQ(RCX, RCX)
	g.JZ(lab(done))
	g.VMOVUPS(spi(q8Rows, R9, 4), X0)
	for c := 0; c < cols; c++ {
		switch c {
		case 1:
			g.VMOVSHDUP(X0, X2)
		case 2:
			g.VMOVHLPS(X0, X0, X2)
		case 3:
			g.VPERMILPS(U8(0xff), X0, X2)
		}
		src := X2
		if c == 0 {
			src = X0
		}
		g.MOVQ(m(RBX, c*40+32), R12)
		g.VADDSS(mi(R12, 0, R9, 1), src, X1)
		g.VMOVSS(X1, mi(R12, 0, R9, 1))
	}
	g.ADDQ(U8(4), R9)
	g.DECQ(RCX)
	g.JMP(lab(l1))
	g.Label(done)
	g.VZEROUPPER()
	g.RET()
}
