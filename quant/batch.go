package quant

import "fmt"

// batchFunc adds one tile's product with each of xs's columns into the
// matching ys; DotBatch has checked the geometry and that every Vec is
// prepared for the same kernel.
type batchFunc func(t *Tile, xs []*Vec, col int, ys [][]float32)

// DotBatch applies one tile to several activation columns (the tokens of a
// batched prefill): ys[j][r] += Σ_c W[r,c]·xs[j][col+c] for r < t.Rows and
// every j < len(xs). Each xs[j] is an ordinary prepared Vec (Set once per
// token and product), and all of them must belong to the same Kernel.
//
// The result for column j is what Dot(t, xs[j], col, ys[j]) gives: bit for
// bit on the float-activation paths and on avx2i8 (their multi-column
// kernels keep each column's arithmetic in the single-column order) and on
// paths without a multi-column kernel, and up to float summation order on
// the vnni kernels, so a batched forward pass and token-by-token decode agree. The point is the memory traffic: the tile is
// read from DRAM once for the whole batch instead of once per token, and a
// multi-column kernel also decodes each weight once for all columns.
//
// It does not allocate. col must be a multiple of 32.
func DotBatch(t *Tile, xs []*Vec, col int, ys [][]float32) {
	if len(xs) == 0 {
		return
	}
	if len(ys) < len(xs) {
		panic(fmt.Sprintf("quant: DotBatch has %d outputs for %d columns", len(ys), len(xs)))
	}
	k := xs[0].k
	for j, x := range xs {
		if x.k != k {
			panic(fmt.Sprintf("quant: DotBatch column %d prepared for kernel %s, column 0 for %s", j, x.k, k))
		}
		check(t, x, col, ys[j])
	}
	if f := k.batch(t.Type); f != nil {
		f(t, xs, col, ys)
		return
	}
	dot := pick(t.Type, xs[0])
	for j, x := range xs {
		dot(t, x, col, ys[j])
	}
}

// batch is the path's multi-column function for tiles of type t, or nil
// when it has none (DotBatch then runs the single-column kernel once per
// column while the tile is hot in cache).
func (k *Kernel) batch(t Type) batchFunc {
	switch t {
	case Q4_0:
		return k.q4batch
	case Q8_0:
		return k.q8batch
	}
	return nil
}
