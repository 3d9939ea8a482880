package quant

import (
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"
)

// TestDotF32RowsMatchesDot checks the multi-vector F32 kernel against two
// truths: Dot on an F32 tile holding the same rows, one vector at a time
// (bit for bit: attention's batched prefill and decode must agree to the
// bit whichever kernel a head runs on), and a float64 sum (to f32
// rounding). Rows are strided and cut (cols < wstride), cols cover every
// tail length, and several vectors share one call.
func TestDotF32RowsMatchesDot(t *testing.T) {
	withKernel(t, func(t *testing.T, k *Kernel) {
		if !k.HasF32Rows() {
			t.Skipf("path %s has no multi-vector F32 kernel", k)
		}
		rng := rand.New(rand.NewPCG(17, 5))
		for it := 0; it < 300; it++ {
			rows, cols := 1+rng.IntN(MaxTileRows), 1+rng.IntN(MaxTileCols)
			wstride := cols + rng.IntN(3)*8
			nx := 1 + it%9 // 4 (the four-vector loop) every ninth
			xstride, ystride := cols+rng.IntN(5), rows+rng.IntN(5)
			w := randWeights(rng, rows, wstride)
			x := make([]float32, (nx-1)*xstride+cols)
			for i := range x {
				x[i] = float32(rng.NormFloat64())
			}
			y := make([]float32, (nx-1)*ystride+rows)
			for i := range y {
				y[i] = float32(rng.NormFloat64())
			}
			want := append([]float32(nil), y...)
			k.DotF32Rows(w, rows, cols, wstride, x, xstride, nx, y, ystride)

			tile := make([]float32, rows*cols)
			for r := range rows {
				copy(tile[r*cols:(r+1)*cols], w[r*wstride:r*wstride+cols])
			}
			tl := Tile{Type: F32, Rows: rows, Cols: cols, Data: unsafe.Slice((*byte)(unsafe.Pointer(&tile[0])), rows*cols*4)}
			v := k.Float().NewVec(cols)
			for g := range nx {
				xg := x[g*xstride : g*xstride+cols]
				yg := want[g*ystride : g*ystride+rows]
				ref := make([]float64, rows)
				for r := range rows {
					ref[r] = float64(yg[r])
					for c, xv := range xg {
						ref[r] += float64(tile[r*cols+c]) * float64(xv)
					}
				}
				v.Set(xg)
				Dot(&tl, v, 0, yg)
				for r := range rows {
					got := y[g*ystride+r]
					if math.Float32bits(got) != math.Float32bits(yg[r]) {
						t.Fatalf("it %d (%dx%d stride %d, %d vectors): vector %d row %d: %v, Dot %v", it, rows, cols, wstride, nx, g, r, got, yg[r])
					}
					var mag float64
					for c, xv := range xg {
						mag += math.Abs(float64(tile[r*cols+c]) * float64(xv))
					}
					if d := math.Abs(float64(got) - ref[r]); d > 1e-5*(mag+math.Abs(float64(want[g*ystride+r]))) {
						t.Fatalf("it %d: vector %d row %d: %v, float64 sum %v", it, g, r, got, ref[r])
					}
				}
			}
			// Outputs between the vectors' rows are left alone.
			for g := range nx - 1 {
				for i := g*ystride + rows; i < (g+1)*ystride; i++ {
					if y[i] != want[i] {
						t.Fatalf("it %d: y[%d] between vectors written", it, i)
					}
				}
			}
		}
	})
}

// TestDotF32RowsRefusesShortSlices: the assembly indexes by geometry alone,
// so a slice too short for it must panic before it runs.
func TestDotF32RowsRefusesShortSlices(t *testing.T) {
	k := DefaultKernel()
	if !k.HasF32Rows() {
		t.Skip("no multi-vector F32 kernel on this path")
	}
	defer func() {
		if recover() == nil {
			t.Fatal("a w one value short did not panic")
		}
	}()
	k.DotF32Rows(make([]float32, 2*16+15), 3, 16, 16, make([]float32, 16), 16, 1, make([]float32, 3), 3)
}
