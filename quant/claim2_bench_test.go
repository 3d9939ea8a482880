//go:build claim2 && amd64 && !noasm

package quant

import (
	"math/rand/v2"
	"testing"
)

// Claim 2 (cache locality): the report's tiled layout against the same Q4_0
// bytes laid out row-major across the full width, computed with the same
// instructions. The production kernels hold a tile's activation slice
// (≤ 256 columns) in registers or stage its scales on the stack, so they
// cannot walk a full-width row; q4f256wide (rowmajor_amd64.s) is the avx2
// kernel's inner loop without that limit, and both walks below run it:
//
//   - tiled: one call per 128×256 tile, tiles in file (stripe-major) order;
//   - rowmajor: one call over the whole matrix, scales [rows][groups] and
//     data [rows][groups·16], row by row across the full width;
//   - tiled-dot: the production walk (quant.Dot, default kernel), for scale.
//
// AVX2 is also what cachegrind can simulate (valgrind has no AVX-512).
// The kernel and these benchmarks build only with the claim2 tag, so the
// production binary does not carry them. Results go in docs/PERFORMANCE.md
// ("Claim 2"); no test asserts them:
//
//	go test -tags claim2 -run '^$' -bench Claim2 -benchtime 5x -count 5 ./quant

// claim2Geometries are the report's (rows = output length, cols = input).
var claim2Geometries = []struct {
	name       string
	rows, cols int
}{
	{"attn-proj", 8192, 8192},
	{"expert-proj", 8192, 8192},
	{"dense-down", 8192, 32768},
	{"dense-gateup", 32768, 8192},
}

// rowMajor is a Q4_0 matrix stored row by row across its full width.
type rowMajor struct {
	rows, cols int
	scales     []byte // rows × groups f16
	data       []byte // rows × groups × 16
}

// toRowMajor copies m's tiles into the row-major layout (same bytes).
func toRowMajor(m *matrix) *rowMajor {
	g := Groups(m.cols)
	rm := &rowMajor{rows: m.rows, cols: m.cols, scales: make([]byte, m.rows*g*2), data: make([]byte, m.rows*g*16)}
	ct := (m.cols + MaxTileCols - 1) / MaxTileCols
	for i := range m.tiles {
		t := &m.tiles[i]
		r0, g0 := i/ct*MaxTileRows, i%ct*MaxTileCols/GroupSize
		tg := Groups(t.Cols)
		for r := 0; r < t.Rows; r++ {
			copy(rm.scales[((r0+r)*g+g0)*2:], t.Scales[r*tg*2:(r+1)*tg*2])
			copy(rm.data[((r0+r)*g+g0)*16:], t.Data[r*tg*16:(r+1)*tg*16])
		}
	}
	return rm
}

func BenchmarkClaim2(b *testing.B) {
	for _, geo := range claim2Geometries {
		b.Run(geo.name, func(b *testing.B) {
			m := newMatrix(randomArena(matrixBytes(Q4_0, geo.rows, geo.cols)), Q4_0, geo.rows, geo.cols)
			x := randActivation(rand.New(rand.NewPCG(1, 1)), 0, geo.cols)[:geo.cols]
			v := NewVec(geo.cols)
			v.Set(x)
			ct := (m.cols + MaxTileCols - 1) / MaxTileCols
			var rm *rowMajor
			walks := []struct {
				name string
				f    func(y []float32)
			}{
				{"tiled", func(y []float32) {
					for i := range m.tiles {
						t := &m.tiles[i]
						r0, c0 := i/ct*MaxTileRows, i%ct*MaxTileCols
						dotQ4RowMajor(t.Scales, t.Data, t.Rows, Groups(t.Cols), x[c0:], y[r0:])
					}
				}},
				{"rowmajor", func(y []float32) {
					if rm == nil {
						rm = toRowMajor(m)
					}
					dotQ4RowMajor(rm.scales, rm.data, rm.rows, Groups(rm.cols), x, y)
				}},
				{"tiled-dot", func(y []float32) {
					for i := range m.tiles {
						Dot(&m.tiles[i], v, i%ct*MaxTileCols, y[i/ct*MaxTileRows:])
					}
				}},
			}
			var ref []float32
			for _, w := range walks {
				b.Run(w.name, func(b *testing.B) {
					y := make([]float32, geo.rows)
					w.f(y) // warm page tables; check the two layouts agree
					if ref == nil {
						ref = y
					} else if w.name == "rowmajor" && !closeTo(y, ref) {
						b.Fatalf("%s disagrees with tiled", w.name)
					}
					b.SetBytes(m.bytes)
					b.ResetTimer()
					for range b.N {
						clear(y)
						w.f(y)
					}
				})
			}
		})
	}
}

// closeTo compares outputs up to float reassociation inside a kernel call.
func closeTo(a, b []float32) bool {
	for i := range a {
		d := a[i] - b[i]
		if d < 0 {
			d = -d
		}
		s := max(b[i], -b[i])
		if d > 1e-3*s+1e-3 {
			return false
		}
	}
	return true
}
