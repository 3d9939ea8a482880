//go:build !noasm

package quant

// vnniCol is one activation column as q4vnni512x4 reads it: the Vec's int8
// halves, Q4 bias lanes and scales from the tile's first group, and the
// output from the tile's first row.
type vnniCol struct {
	xl, xh *int8
	c4     *int32
	dx     *float32
	y      *float32
}

// dotQ4VNNI512Batch is the vnni path's DotBatch for Q4_0: four columns at
// a time through q4vnni512x4, the last columns through the single-column
// kernel.
func dotQ4VNNI512Batch(t *Tile, xs []*Vec, col int, ys [][]float32) {
	q4VNNI512Batch(t, xs, col, ys, false)
}

// dotQ4VNNI512BatchX is the vnnipair path's: the last two or three columns
// go through q4vnni512x2 or q4vnni512x3, one pass over the tile where the
// vnni path makes one per column (the avx2i8 path's two- and three-column
// kernels, which measured faster on Zen 3).
func dotQ4VNNI512BatchX(t *Tile, xs []*Vec, col int, ys [][]float32) {
	q4VNNI512Batch(t, xs, col, ys, true)
}

// q4VNNI512Batch runs dotQ4VNNI512Batch, and with multi the two- and
// three-column kernels for the last columns. The rows past each kernel's
// row block (4, or 8 for two columns) go through the single-column kernel
// per column, as do a last single column and tiles too short for a block.
func q4VNNI512Batch(t *Tile, xs []*Vec, col int, ys [][]float32, multi bool) {
	g, g0 := Groups(t.Cols), col/GroupSize
	k0, k1, kg := vnniBlockMasks(g)
	rows4, rows8 := t.Rows&^3, t.Rows&^7
	j := 0
	for ; j+4 <= len(xs) && rows4 > 0; j += 4 {
		var cs [4]vnniCol
		q4Columns(cs[:], xs[j:], g0, ys[j:])
		q4vnni512x4(&t.Scales[0], &t.Data[0], rows4, g, &cs, k0, k1, kg)
		vnniRowTail(t, xs[j:j+4], g0, ys[j:], rows4, k0, k1, kg)
	}
	switch n := len(xs) - j; {
	case multi && n == 3 && rows4 > 0:
		var cs [3]vnniCol
		q4Columns(cs[:], xs[j:], g0, ys[j:])
		q4vnni512x3(&t.Scales[0], &t.Data[0], rows4, g, &cs, k0, k1, kg)
		vnniRowTail(t, xs[j:], g0, ys[j:], rows4, k0, k1, kg)
		return
	case multi && n == 2 && rows8 > 0:
		var cs [2]vnniCol
		q4Columns(cs[:], xs[j:], g0, ys[j:])
		q4vnni512x2(&t.Scales[0], &t.Data[0], rows8, g, &cs, k0, k1, kg)
		vnniRowTail(t, xs[j:], g0, ys[j:], rows8, k0, k1, kg)
		return
	}
	for ; j < len(xs); j++ {
		dotQ4VNNI512(t, xs[j], col, ys[j])
	}
}

// vnniRowTail adds rows [from, t.Rows) of a Q4_0 tile times each column of
// xs into ys, through the single-column kernel.
func vnniRowTail(t *Tile, xs []*Vec, g0 int, ys [][]float32, from, k0, k1, kg int) {
	if from == t.Rows {
		return
	}
	g := Groups(t.Cols)
	for i, x := range xs {
		q4vnni512(&t.Scales[from*g*2], &t.Data[from*g*16], t.Rows-from, g, &x.xl[g0*16], &x.xh[g0*16],
			&x.c4[g0*4], &x.dx[g0], &ys[i][from], k0, k1, kg)
	}
}

// vnniCol8 is one activation column as q8vnni512x4 reads it.
type vnniCol8 struct {
	x8 *int8
	c8 *int32
	dx *float32
	y  *float32
}

// dotQ8VNNI512Batch is dotQ4VNNI512Batch for Q8_0.
func dotQ8VNNI512Batch(t *Tile, xs []*Vec, col int, ys [][]float32) {
	q8VNNI512Batch(t, xs, col, ys, false)
}

// dotQ8VNNI512BatchX is dotQ4VNNI512BatchX for Q8_0: the vnnipair path's,
// with the last two or three columns through q8vnni512x2 or q8vnni512x3.
func dotQ8VNNI512BatchX(t *Tile, xs []*Vec, col int, ys [][]float32) {
	q8VNNI512Batch(t, xs, col, ys, true)
}

// q8VNNI512Batch is q4VNNI512Batch for Q8_0: four columns at a time, with
// multi the last two or three through the two- and three-column kernels,
// the rows past each kernel's row block and any other columns through the
// single-column kernel.
func q8VNNI512Batch(t *Tile, xs []*Vec, col int, ys [][]float32, multi bool) {
	g, g0 := Groups(t.Cols), col/GroupSize
	k0, k1, k2, k3, kg := q8Masks(g)
	rows4, rows8 := t.Rows&^3, t.Rows&^7
	j := 0
	for ; j+4 <= len(xs) && rows4 > 0; j += 4 {
		var cs [4]vnniCol8
		vnniColumns8(cs[:], xs[j:], g0, ys[j:])
		q8vnni512x4(&t.Scales[0], &t.Data[0], rows4, g, &cs, k0, k1, k2, k3, kg)
		vnniRowTail8(t, xs[j:j+4], g0, ys[j:], rows4)
	}
	switch n := len(xs) - j; {
	case multi && n == 3 && rows4 > 0:
		var cs [3]vnniCol8
		vnniColumns8(cs[:], xs[j:], g0, ys[j:])
		q8vnni512x3(&t.Scales[0], &t.Data[0], rows4, g, &cs, k0, k1, k2, k3, kg)
		vnniRowTail8(t, xs[j:], g0, ys[j:], rows4)
		return
	case multi && n == 2 && rows8 > 0:
		var cs [2]vnniCol8
		vnniColumns8(cs[:], xs[j:], g0, ys[j:])
		q8vnni512x2(&t.Scales[0], &t.Data[0], rows8, g, &cs, k0, k1, k2, k3, kg)
		vnniRowTail8(t, xs[j:], g0, ys[j:], rows8)
		return
	}
	for ; j < len(xs); j++ {
		dotQ8VNNI512(t, xs[j], col, ys[j])
	}
}

// q8Masks are the Q8 vnni kernels' k-register masks for rows of g groups:
// one per 64-byte block of two groups (eight dword lanes per group), and
// kg over the row's g scales.
func q8Masks(g int) (k0, k1, k2, k3, kg int) {
	m := func(b int) int { return lowBits(8 * min(max(g-2*b, 0), 2)) }
	return m(0), m(1), m(2), m(3), lowBits(g)
}

// vnniColumns8 is q4Columns for the Q8 vnni kernels' records: each
// column's natural-order int8 values, bias lanes and scales from group g0
// on, and its output.
func vnniColumns8(cs []vnniCol8, xs []*Vec, g0 int, ys [][]float32) {
	for i := range cs {
		x := xs[i]
		cs[i] = vnniCol8{&x.q8[g0*GroupSize], &x.c8[g0*8], &x.dx[g0], &ys[i][0]}
	}
}

// vnniRowTail8 is vnniRowTail for a Q8_0 tile: rows [from, t.Rows) times
// each column of xs into ys, through the single-column kernel.
func vnniRowTail8(t *Tile, xs []*Vec, g0 int, ys [][]float32, from int) {
	if from == t.Rows {
		return
	}
	g := Groups(t.Cols)
	k0, k1, k2, k3, kg := q8Masks(g)
	for i, x := range xs {
		q8vnni512(&t.Scales[from*g*2], &t.Data[from*g*32], t.Rows-from, g, &x.q8[g0*GroupSize], &x.c8[g0*8],
			&x.dx[g0], &ys[i][from], k0, k1, k2, k3, kg)
	}
}

// dotQ4AVX2Batch is the avx2 path's DotBatch for Q4_0: four columns at a
// time, the last B mod 4 through the single-column kernel.
func dotQ4AVX2Batch(t *Tile, xs []*Vec, col int, ys [][]float32) {
	g := Groups(t.Cols)
	j := 0
	for ; j+4 <= len(xs); j += 4 {
		xp, yp := columns4(xs, col, ys, j)
		q4f256x4(&t.Scales[0], &t.Data[0], t.Rows, g, &xp, &yp)
	}
	for ; j < len(xs); j++ {
		dotQ4AVX2(t, xs[j], col, ys[j])
	}
}

// dotQ4AVX512Batch is the avx512 path's DotBatch for Q4_0, four columns at
// a time like dotQ4AVX2Batch.
func dotQ4AVX512Batch(t *Tile, xs []*Vec, col int, ys [][]float32) {
	g := Groups(t.Cols)
	j := 0
	for ; j+4 <= len(xs); j += 4 {
		xp, yp := columns4(xs, col, ys, j)
		q4f512x4(&t.Scales[0], &t.Data[0], t.Rows, g, &xp, &yp, lowBits(g))
	}
	for ; j < len(xs); j++ {
		dotQ4AVX512(t, xs[j], col, ys[j])
	}
}

// dotQ8AVX2Batch and dotQ8AVX512Batch are dotQ4AVX2Batch and
// dotQ4AVX512Batch for Q8_0. (Spelled out rather than sharing a helper that
// takes the kernel as a closure: the closure would make the pointer arrays
// escape, and DotBatch must not allocate.)
func dotQ8AVX2Batch(t *Tile, xs []*Vec, col int, ys [][]float32) {
	g := Groups(t.Cols)
	j := 0
	for ; j+4 <= len(xs); j += 4 {
		xp, yp := columns4(xs, col, ys, j)
		q8f256x4(&t.Scales[0], &t.Data[0], t.Rows, g, &xp, &yp)
	}
	for ; j < len(xs); j++ {
		dotQ8AVX2(t, xs[j], col, ys[j])
	}
}

func dotQ8AVX512Batch(t *Tile, xs []*Vec, col int, ys [][]float32) {
	g := Groups(t.Cols)
	j := 0
	for ; j+4 <= len(xs); j += 4 {
		xp, yp := columns4(xs, col, ys, j)
		q8f512x4(&t.Scales[0], &t.Data[0], t.Rows, g, &xp, &yp, lowBits(g))
	}
	for ; j < len(xs); j++ {
		dotQ8AVX512(t, xs[j], col, ys[j])
	}
}

// columns4 points at columns j..j+3 of a batch for a four-column kernel. It
// returns the arrays by value, so they stay on the caller's stack (DotBatch
// must not allocate).
func columns4(xs []*Vec, col int, ys [][]float32, j int) (xp, yp [4]*float32) {
	for i := range 4 {
		xp[i], yp[i] = &xs[j+i].x[col], &ys[j+i][0]
	}
	return xp, yp
}

// dotQ4AVX2I8Batch is the avx2i8 path's DotBatch for Q4_0: four columns at
// a time, the last B mod 4 (two or three) through the two- or
// three-column kernel, one through the single-column one. All run each
// column through the same arithmetic (quant/_asm/q4rows.go), so every tile
// shape, pad nibbles included, gives Dot's bits.
func dotQ4AVX2I8Batch(t *Tile, xs []*Vec, col int, ys [][]float32) {
	g, g0 := Groups(t.Cols), col/GroupSize
	j := 0
	for ; j+4 <= len(xs); j += 4 {
		var cs [4]vnniCol
		q4Columns(cs[:], xs[j:], g0, ys[j:])
		q4avx2i8x4(&t.Scales[0], &t.Data[0], t.Rows, g, &cs)
	}
	switch len(xs) - j {
	case 3:
		var cs [3]vnniCol
		q4Columns(cs[:], xs[j:], g0, ys[j:])
		q4avx2i8x3(&t.Scales[0], &t.Data[0], t.Rows, g, &cs)
	case 2:
		var cs [2]vnniCol
		q4Columns(cs[:], xs[j:], g0, ys[j:])
		q4avx2i8x2(&t.Scales[0], &t.Data[0], t.Rows, g, &cs)
	case 1:
		dotQ4AVX2I8(t, xs[j], col, ys[j])
	}
}

// q4Columns points cs at the Q4 kernels' int8 views (nibble halves, bias
// lanes, scales) of columns xs[:len(cs)] from group g0 on and at their
// outputs ys[:len(cs)]; q8Columns at the natural-order int8 values the Q8
// kernels read.
func q4Columns(cs []vnniCol, xs []*Vec, g0 int, ys [][]float32) {
	for i := range cs {
		x := xs[i]
		cs[i] = vnniCol{&x.xl[g0*16], &x.xh[g0*16], &x.c4[g0*4], &x.dx[g0], &ys[i][0]}
	}
}

func q8Columns(cs []vnniCol, xs []*Vec, g0 int, ys [][]float32) {
	for i := range cs {
		x := xs[i]
		cs[i] = vnniCol{xl: &x.q8[g0*GroupSize], dx: &x.dx[g0], y: &ys[i][0]}
	}
}

// dotQ8AVX2I8Batch is dotQ4AVX2I8Batch for Q8_0: four columns at a time
// through q8avx2i8x4, a last two or three through q8avx2i8x2 or
// q8avx2i8x3, one through the single-column kernel. Each column has its
// own lane and the single-column kernel's arithmetic, so every column
// keeps Dot's bits. One pass over the tile keeps the DRAM stream going
// where a call per column stalled it (docs/PERFORMANCE.md, log at 0382674, "Session 12:
// Q8_0 two- and three-column kernels"). Spelled out beside
// dotQ4AVX2I8Batch, not shared with it: a helper taking the kernels as
// func values would make the calls indirect and the column arrays escape.
func dotQ8AVX2I8Batch(t *Tile, xs []*Vec, col int, ys [][]float32) {
	g, g0 := Groups(t.Cols), col/GroupSize
	j := 0
	for ; j+4 <= len(xs); j += 4 {
		var cs [4]vnniCol
		q8Columns(cs[:], xs[j:], g0, ys[j:])
		q8avx2i8x4(&t.Scales[0], &t.Data[0], t.Rows, g, &cs)
	}
	switch len(xs) - j {
	case 3:
		var cs [3]vnniCol
		q8Columns(cs[:], xs[j:], g0, ys[j:])
		q8avx2i8x3(&t.Scales[0], &t.Data[0], t.Rows, g, &cs)
	case 2:
		var cs [2]vnniCol
		q8Columns(cs[:], xs[j:], g0, ys[j:])
		q8avx2i8x2(&t.Scales[0], &t.Data[0], t.Rows, g, &cs)
	case 1:
		dotQ8AVX2I8(t, xs[j], col, ys[j])
	}
}
