package quant

import "fmt"

// f32RowsFunc is a path's multi-vector F32 kernel (DotF32Rows's contract,
// strides in bytes, geometry checked).
type f32RowsFunc func(w *float32, rows, cols, wstride int, x *float32, xstride, nx int, y *float32, ystride int)

// HasF32Rows reports whether path k has a multi-vector F32 kernel, so
// DotF32Rows will run: attention uses it to apply one key or value tile
// to several query heads while the tile's rows are in L1.
func (k *Kernel) HasF32Rows() bool { return k.Float().f32rows != nil }

// DotF32Rows adds, for each of nx vectors x_g = x[g·xstride : g·xstride+cols],
// y[g·ystride + r] += Σ_c w[r·wstride + c]·x_g[c] for r < rows. Each
// vector's sums run in exactly the order Dot uses on an F32 tile of
// rows×cols on path k, so every y is bit-identical to Dot on that vector
// alone; what changes is that each row of w is read from memory once for
// all nx vectors instead of once per vector (attention's keys and values,
// shared by the query heads of one KV head). Rows are wstride apart, so a
// tile may be cut to fewer columns than it holds (the live positions of a
// value block). It panics if k has no such kernel (HasF32Rows) or a slice
// is too short. It does not allocate.
func (k *Kernel) DotF32Rows(w []float32, rows, cols, wstride int, x []float32, xstride, nx int, y []float32, ystride int) {
	f := k.Float().f32rows
	if f == nil {
		panic("quant: path " + k.name + " has no multi-vector F32 kernel")
	}
	if rows <= 0 || cols <= 0 || nx <= 0 || wstride < cols || xstride < 0 || ystride < 0 ||
		len(w) < (rows-1)*wstride+cols || len(x) < (nx-1)*xstride+cols || len(y) < (nx-1)*ystride+rows ||
		(nx > 1 && (xstride < cols || ystride < rows)) {
		panic(fmt.Sprintf("quant: DotF32Rows %dx%d (stride %d) × %d vectors (stride %d, out stride %d): w %d, x %d, y %d values",
			rows, cols, wstride, nx, xstride, ystride, len(w), len(x), len(y)))
	}
	f(&w[0], rows, cols, wstride*4, &x[0], xstride*4, nx, &y[0], ystride*4)
}
