package quant

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"
)

// kvTol is how far a float32-summed product of n terms may sit from its
// float64 oracle: n·2⁻²³ relative to the sum of the terms' magnitudes
// (each of the n additions rounds once), doubled for slack.
func kvTol(n int, mag float64) float64 { return 2 * float64(n+1) * 0x1p-23 * mag }

// TestDotF16RowsMatchesOracle checks every path's DotF16Rows (AVX2 and
// AVX-512 kernels, the Go loop) against the float64 oracle on random f16
// tiles: strided, cut rows, every column count a cache block can hand it
// (multiples of 8 take the SIMD kernels, others the Go loop), several
// vectors per call, accumulating into nonzero y.
func TestDotF16RowsMatchesOracle(t *testing.T) {
	withKernel(t, func(t *testing.T, k *Kernel) {
		rng := rand.New(rand.NewPCG(35, 2))
		for it := range 300 {
			rows, cols := 1+rng.IntN(MaxTileRows), 1+rng.IntN(MaxTileCols)
			if it%2 == 0 {
				cols = 8 * (1 + rng.IntN(MaxTileCols/8))
			}
			wstride := cols + rng.IntN(3)*8
			nx := 1 + it%5
			xstride, ystride := cols+rng.IntN(5), rows+rng.IntN(5)
			w := make([]uint16, (rows-1)*wstride+cols)
			for i := range w {
				w[i] = F32ToF16(float32(rng.NormFloat64()))
			}
			x := randVec(rng, (nx-1)*xstride+cols)
			y := randVec(rng, (nx-1)*ystride+rows)
			want := append([]float32(nil), y...)
			k.DotF16Rows(w, rows, cols, wstride, x, xstride, nx, y, ystride)
			DotF16RowsScalar(w, rows, cols, wstride, x, xstride, nx, want, ystride)
			for g := range nx {
				for r := range rows {
					var mag float64
					for c := range cols {
						mag += math.Abs(float64(F16ToF32(w[r*wstride+c])) * float64(x[g*xstride+c]))
					}
					i := g*ystride + r
					if d := math.Abs(float64(y[i] - want[i])); d > kvTol(cols, mag+math.Abs(float64(want[i]))) {
						t.Fatalf("it %d (%dx%d stride %d, %d vectors): vector %d row %d: %v, oracle %v", it, rows, cols, wstride, nx, g, r, y[i], want[i])
					}
				}
			}
		}
	})
}

// TestAccumQ8RowsMatchesOracle checks every path's AccumQ8Rows against the
// float64 oracle on random Q8_0 rows quantized by QuantizeQ8Row (column
// counts multiples of 32 take the SIMD kernels, others the Go loop).
func TestAccumQ8RowsMatchesOracle(t *testing.T) {
	withKernel(t, func(t *testing.T, k *Kernel) {
		rng := rand.New(rand.NewPCG(35, 8))
		for it := range 200 {
			rows, cols := 1+rng.IntN(MaxTileRows), 32*(1+rng.IntN(8))
			if it%3 == 0 {
				cols = 1 + rng.IntN(256)
			}
			G := Groups(cols)
			nx := 1 + it%5
			xstride, ystride := rows+rng.IntN(5), cols+rng.IntN(5)
			scales, data := make([]byte, rows*G*2), make([]byte, rows*G*32)
			for r := range rows {
				QuantizeQ8Row(randVec(rng, cols), scales[r*G*2:], data[r*G*32:])
			}
			x := randVec(rng, (nx-1)*xstride+rows)
			y := randVec(rng, (nx-1)*ystride+cols)
			want := append([]float32(nil), y...)
			k.AccumQ8Rows(scales, data, rows, cols, x, xstride, nx, y, ystride)
			AccumQ8RowsScalar(scales, data, rows, cols, x, xstride, nx, want, ystride)
			for g := range nx {
				for c := range cols {
					mag := math.Abs(float64(want[g*ystride+c]))
					for r := range rows {
						d := F16ToF32(binary.LittleEndian.Uint16(scales[(r*G+c/32)*2:]))
						mag += math.Abs(float64(x[g*xstride+r]) * float64(d) * float64(int8(data[(r*G+c/32)*32+c%32])))
					}
					i := g*ystride + c
					if diff := math.Abs(float64(y[i] - want[i])); diff > 2*kvTol(rows, mag) {
						t.Fatalf("it %d (%dx%d, %d vectors): vector %d col %d: %v, oracle %v", it, rows, cols, nx, g, c, y[i], want[i])
					}
				}
			}
		}
	})
}

// TestQuantizeQ8RowIsEncode checks the cache's Q8_0 row encoder against the
// converter's tile encoder (Encode), the truth for what a Q8_0 row holds:
// the same scale and value bytes, a short last group zero-padded.
func TestQuantizeQ8RowIsEncode(t *testing.T) {
	rng := rand.New(rand.NewPCG(35, 9))
	for _, cols := range []int{32, 64, 80, 128, 256} {
		x := randVec(rng, cols)
		tile := Encode(Q8_0, x, 1, cols, cols)
		G := Groups(cols)
		scales, data := make([]byte, G*2), make([]byte, G*32)
		QuantizeQ8Row(x, scales, data)
		if string(scales) != string(tile.Scales) || string(data) != string(tile.Data) {
			t.Fatalf("cols %d: QuantizeQ8Row differs from Encode", cols)
		}
	}
}

// TestF16Conversions checks the cache's f16 rounding against the IEEE
// rules: exact values survive, halfway cases round to even, overflow is
// ±Inf.
func TestF16Conversions(t *testing.T) {
	for _, c := range []struct {
		in   float32
		want float32
	}{{1, 1}, {-2.5, -2.5}, {65504, 65504}, {1e6, float32(math.Inf(1))},
		{1 + 0x1p-11, 1}, {1 + 3*0x1p-11, 1 + 0x1p-9}, {0x1p-24, 0x1p-24}} {
		if got := F16ToF32(F32ToF16(c.in)); got != c.want {
			t.Errorf("f16(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

func randVec(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return v
}
