//go:build claim2 && !noasm

package quant

// q4f256wide computes y[r] += Σ_g scale[r,g]·(nibbles[r,g]·x[32g:32g+32])
// for r < rows over a Q4_0 block run stored row after row (scales rows×groups
// f16, data rows×groups×16 bytes) of any width. It is the avx2 kernel's
// inner loop without the 8-group tile limit, and exists only so Claim 2
// (docs/PERFORMANCE.md) can time and cache-simulate a full-width row-major
// matvec against tiles with the same instructions; the engine never calls
// it, and only builds tagged claim2 include it. x must hold 32·groups
// floats and y rows floats.
//
//go:noescape
func q4f256wide(sc, data *byte, rows, groups int, x, y *float32)

// dotQ4RowMajor runs q4f256wide on a rows×(32·groups) Q4_0 matrix (or a
// tile, whose layout is the same within it), after checking the slices, so
// a benchmark cannot make the assembly read past them.
func dotQ4RowMajor(scales, data []byte, rows, groups int, x, y []float32) {
	if rows <= 0 || groups <= 0 || len(scales) < rows*groups*2 || len(data) < rows*groups*16 ||
		len(x) < groups*GroupSize || len(y) < rows {
		panic("quant: dotQ4RowMajor: slices shorter than the geometry")
	}
	q4f256wide(&scales[0], &data[0], rows, groups, &x[0], &y[0])
}
