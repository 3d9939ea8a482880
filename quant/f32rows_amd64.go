//go:build !noasm

package quant

// f32rows256 is DotF32Rows on AVX2 (f32rows_avx2_amd64.s): f32f256's loop
// per vector inside a loop over rows.
//
//go:noescape
func f32rows256(w *float32, rows, cols, wstride int, x *float32, xstride, nx int, y *float32, ystride int)
