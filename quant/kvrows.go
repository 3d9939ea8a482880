package quant

import (
	"encoding/binary"
	"fmt"

	"github.com/x448/float16"
)

// The KV cache's 16-bit and 8-bit forms (engine/seq.go) are read by
// attention straight from their stored bytes, without a widened copy:
// DotF16Rows applies a tile of IEEE binary16 values (keys by position or
// values transposed), AccumQ8Rows adds probability-weighted Q8_0 rows
// (values by position). Keys stored as Q8_0 are ordinary Q8_0 tiles (Dot).

// f16RowsFunc is a path's DotF16Rows kernel (strides in bytes, geometry
// checked, cols a multiple of 8).
type f16RowsFunc func(w *uint16, rows, cols, wstride int, x *float32, xstride, nx int, y *float32, ystride int)

// q8AccFunc is a path's AccumQ8Rows kernel (geometry checked, cols a
// multiple of 32).
type q8AccFunc func(scales, data *byte, rows, groups int, x *float32, xstride, nx int, y *float32, ystride int)

// DotF16Rows is DotF32Rows for a tile of IEEE binary16 values: for each of
// nx vectors x_g = x[g·xstride:], y[g·ystride + r] += Σ_c w[r·wstride+c]·x_g[c]
// for r < rows, each w widened exactly to float32 (F16C's VCVTPH2PS on
// amd64) and the sums in float32. Per vector and row the order is fixed by
// the path (the same whatever the thread count or batch), not Dot's: the
// f16 cache is an approximation of the f32 one already (docs/TRACE.md).
// It panics if a slice is too short; it does not allocate.
func (k *Kernel) DotF16Rows(w []uint16, rows, cols, wstride int, x []float32, xstride, nx int, y []float32, ystride int) {
	if rows <= 0 || cols <= 0 || nx <= 0 || wstride < cols || xstride < 0 || ystride < 0 ||
		len(w) < (rows-1)*wstride+cols || len(x) < (nx-1)*xstride+cols || len(y) < (nx-1)*ystride+rows ||
		(nx > 1 && (xstride < cols || ystride < rows)) {
		panic(fmt.Sprintf("quant: DotF16Rows %dx%d (stride %d) × %d vectors (stride %d, out stride %d): w %d, x %d, y %d values",
			rows, cols, wstride, nx, xstride, ystride, len(w), len(x), len(y)))
	}
	if f := f16RowsPath(k); f != nil && cols%8 == 0 {
		f(&w[0], rows, cols, wstride*2, &x[0], xstride*4, nx, &y[0], ystride*4)
		return
	}
	dotF16RowsGo(w, rows, cols, wstride, x, xstride, nx, y, ystride)
}

// dotF16RowsGo is DotF16Rows's pure-Go loop: eight lanes of partial sums
// per row, as the SIMD kernels keep them, then their sum.
func dotF16RowsGo(w []uint16, rows, cols, wstride int, x []float32, xstride, nx int, y []float32, ystride int) {
	for g := range nx {
		xg := x[g*xstride : g*xstride+cols]
		for r := range rows {
			wr := w[r*wstride : r*wstride+cols]
			var acc [8]float32
			c := 0
			for ; c+8 <= cols; c += 8 {
				for l := range 8 {
					acc[l] += F16ToF32(wr[c+l]) * xg[c+l]
				}
			}
			for ; c < cols; c++ {
				acc[c%8] += F16ToF32(wr[c]) * xg[c]
			}
			y[g*ystride+r] += ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]))
		}
	}
}

// DotF16RowsScalar is DotF16Rows's oracle: each product and sum in
// float64, rounded once into y.
func DotF16RowsScalar(w []uint16, rows, cols, wstride int, x []float32, xstride, nx int, y []float32, ystride int) {
	for g := range nx {
		for r := range rows {
			var s float64
			for c := range cols {
				s += float64(F16ToF32(w[r*wstride+c])) * float64(x[g*xstride+c])
			}
			y[g*ystride+r] += float32(s)
		}
	}
}

// AccumQ8Rows adds, for each of nx weight vectors x_g = x[g·xstride:],
// Σ_r x_g[r]·row_r into y[g·ystride : g·ystride+cols], where row_r is row r
// of a Q8_0 tile of rows × cols (the attention values of one KV head by
// position: scales[r·G+j] is the f16 scale of group j, data[(r·G+j)·32+i]
// its int8 values, G = Groups(cols)). Each row's group g contributes
// (x_g[r]·scale)·q as float32 products accumulated over r in order. It
// panics if a slice is too short; it does not allocate.
func (k *Kernel) AccumQ8Rows(scales, data []byte, rows, cols int, x []float32, xstride, nx int, y []float32, ystride int) {
	G := Groups(cols)
	if rows <= 0 || cols <= 0 || nx <= 0 || xstride < 0 || ystride < 0 ||
		len(scales) < rows*G*2 || len(data) < rows*G*32 || len(x) < (nx-1)*xstride+rows || len(y) < (nx-1)*ystride+cols ||
		(nx > 1 && (xstride < rows || ystride < cols)) {
		panic(fmt.Sprintf("quant: AccumQ8Rows %dx%d × %d vectors (stride %d, out stride %d): scales %d, data %d, x %d, y %d",
			rows, cols, nx, xstride, ystride, len(scales), len(data), len(x), len(y)))
	}
	if f := q8AccPath(k); f != nil && cols%GroupSize == 0 {
		f(&scales[0], &data[0], rows, G, &x[0], xstride*4, nx, &y[0], ystride*4)
		return
	}
	accumQ8RowsGo(scales, data, rows, cols, x, xstride, nx, y, ystride)
}

// accumQ8RowsGo is AccumQ8Rows's pure-Go loop, the SIMD kernels' order:
// per output element, rows in order, each adding (x·scale)·q.
func accumQ8RowsGo(scales, data []byte, rows, cols int, x []float32, xstride, nx int, y []float32, ystride int) {
	G := Groups(cols)
	for g := range nx {
		yg := y[g*ystride : g*ystride+cols]
		for r := range rows {
			p := x[g*xstride+r]
			for j := range G {
				c := p * F16ToF32(binary.LittleEndian.Uint16(scales[(r*G+j)*2:]))
				q := data[(r*G+j)*32:]
				for i := range min(GroupSize, cols-j*GroupSize) {
					yg[j*GroupSize+i] += c * float32(int8(q[i]))
				}
			}
		}
	}
}

// AccumQ8RowsScalar is AccumQ8Rows's oracle, in float64 per element.
func AccumQ8RowsScalar(scales, data []byte, rows, cols int, x []float32, xstride, nx int, y []float32, ystride int) {
	G := Groups(cols)
	for g := range nx {
		for c := range cols {
			var s float64
			for r := range rows {
				d := float64(F16ToF32(binary.LittleEndian.Uint16(scales[(r*G+c/GroupSize)*2:])))
				s += float64(x[g*xstride+r]) * d * float64(int8(data[(r*G+c/GroupSize)*32+c%GroupSize]))
			}
			y[g*ystride+c] += float32(s)
		}
	}
}

// F32ToF16 rounds to the nearest IEEE binary16, ties to even (as
// VCVTPS2PH with rounding mode 0), saturating to ±Inf past 65504: the f16
// KV cache stores keys and values through it.
func F32ToF16(f float32) uint16 { return float16.Fromfloat32(f).Bits() }

// QuantizeQ8Row encodes x (cols values) as one Q8_0 tile row: Groups(cols)
// f16 scales into scales (2 bytes each) and 32 int8 per group into data,
// a short last group zero-padded, with the converter's rounding (Encode):
// scale absmax/127, values rounded half away from zero. The q8_0 KV cache
// stores each position's keys or values through it.
func QuantizeQ8Row(x []float32, scales, data []byte) {
	var b [GroupSize]float32
	for j := range Groups(len(x)) {
		n := copy(b[:], x[j*GroupSize:])
		clear(b[n:])
		s := quantQ8Block(&b, data[j*GroupSize:(j+1)*GroupSize])
		binary.LittleEndian.PutUint16(scales[j*2:], F32ToF16(s))
	}
}
