//go:build !noasm

package quant

// q4vnnirl is the vnnirl path's single-column Q4_0 kernel and q4vnnirlx4
// its four-column one (kernels_vnnirl_amd64.s): AVX-512 VNNI with the rows
// as lanes, the avx2i8 path's arithmetic order at 512 bits.
//
//go:noescape
func q4vnnirl(sc, data *byte, rows, groups int, xl, xh *int8, c4 *int32, dx, y *float32, k0, k1, kg int)

// q4vnnirlpair is q4vnnirl for two tiles with the same columns and rows (a
// multiple of 16), sixteen rows of each in turn: two tile streams per core.
//
//go:noescape
func q4vnnirlpair(sc, data, scB, dataB *byte, rows, groups int, xl, xh *int8, c4 *int32, dx, y, yB *float32, k0, k1, kg int)

//go:noescape
func q4vnnirlx4(sc, data *byte, rows, groups int, cols *[4]vnniCol, k0, k1, kg int)

// q4vnnirlx2 and q4vnnirlx3 are q4vnnirlx4 for a batch's last two or three
// columns, one pass over the tile where single-column calls would mix its
// rows once per column.
//
//go:noescape
func q4vnnirlx2(sc, data *byte, rows, groups int, cols *[2]vnniCol, k0, k1, kg int)

//go:noescape
func q4vnnirlx3(sc, data *byte, rows, groups int, cols *[3]vnniCol, k0, k1, kg int)

// dotQ4VNNIRL is the vnnirl path's Dot for Q4_0.
func dotQ4VNNIRL(t *Tile, x *Vec, col int, y []float32) {
	g, g0 := Groups(t.Cols), col/GroupSize
	k0, k1, kg := vnniBlockMasks(g)
	q4vnnirl(&t.Scales[0], &t.Data[0], t.Rows, g, &x.xl[g0*16], &x.xh[g0*16], &x.c4[g0*4], &x.dx[g0], &y[0], k0, k1, kg)
}

// dotQ4VNNIRLPair is the vnnirl path's DotPair: two tiles with the same
// rows, a multiple of 16, go through q4vnnirlpair (DotPair has checked that
// they share their columns); other shapes through two dotQ4VNNIRL calls.
func dotQ4VNNIRLPair(a, b *Tile, x *Vec, col int, ya, yb []float32) {
	if a.Rows != b.Rows || a.Rows%16 != 0 {
		dotQ4VNNIRL(a, x, col, ya)
		dotQ4VNNIRL(b, x, col, yb)
		return
	}
	g, g0 := Groups(a.Cols), col/GroupSize
	k0, k1, kg := vnniBlockMasks(g)
	q4vnnirlpair(&a.Scales[0], &a.Data[0], &b.Scales[0], &b.Data[0], a.Rows, g, &x.xl[g0*16], &x.xh[g0*16], &x.c4[g0*4],
		&x.dx[g0], &ya[0], &yb[0], k0, k1, kg)
}

// dotQ4VNNIRLBatch is the vnnirl path's DotBatch for Q4_0: four columns at
// a time through q4vnnirlx4, the last two or three through q4vnnirlx2 or
// q4vnnirlx3, a last single one through the single-column kernel; rows
// past a multiple of 4 go through the single-column kernel per column.
// All expand the same arithmetic, so every column gets Dot's bits.
func dotQ4VNNIRLBatch(t *Tile, xs []*Vec, col int, ys [][]float32) {
	g, g0 := Groups(t.Cols), col/GroupSize
	k0, k1, kg := vnniBlockMasks(g)
	rows4 := t.Rows &^ 3
	if rows4 == 0 {
		for j := range xs {
			dotQ4VNNIRL(t, xs[j], col, ys[j])
		}
		return
	}
	for j := 0; j < len(xs); {
		n := min(4, len(xs)-j)
		if n == 1 {
			dotQ4VNNIRL(t, xs[j], col, ys[j])
			return
		}
		var cs [4]vnniCol
		q4Columns(cs[:n], xs[j:], g0, ys[j:])
		switch n {
		case 4:
			q4vnnirlx4(&t.Scales[0], &t.Data[0], rows4, g, &cs, k0, k1, kg)
		case 3:
			q4vnnirlx3(&t.Scales[0], &t.Data[0], rows4, g, (*[3]vnniCol)(cs[:3]), k0, k1, kg)
		case 2:
			q4vnnirlx2(&t.Scales[0], &t.Data[0], rows4, g, (*[2]vnniCol)(cs[:2]), k0, k1, kg)
		}
		if rows4 < t.Rows {
			for i, x := range xs[j : j+n] {
				q4vnnirl(&t.Scales[rows4*g*2], &t.Data[rows4*g*16], t.Rows-rows4, g, &x.xl[g0*16], &x.xh[g0*16],
					&x.c4[g0*4], &x.dx[g0], &ys[j+i][rows4], k0, k1, kg)
			}
		}
		j += n
	}
}
