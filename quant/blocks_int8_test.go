package quant

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// int8Kernels are the int8-activation paths to hold to the oracle: every
// registered one, and a bare Go one so the noasm build checks the same.
func int8Kernels() []*Kernel {
	ks := []*Kernel{{name: "go-int8", int8: true, f32: dotGo, q4: dotGo, q8: dotGo}}
	for _, k := range Kernels() {
		if k.int8 {
			ks = append(ks, k)
		}
	}
	return ks
}

// On int8 activations a block-codec tile's product must be (1) the float
// oracle's on the activation the Vec actually holds (dx·q), up to f32
// rounding — the integer sums are exact, only the float combination order
// differs — and (2) the pure-Go kernel's bits equal to the int8 oracle's,
// on every int8 path, for tiles of whole and partial blocks at any column.
func TestBlockInt8MatchesOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, ty := range blockCodecs {
		for i := 0; i < 60; i++ {
			rows := 1 + rng.IntN(12)
			cols := []int{256, 224, 32, 160, 250, 31}[i%6]
			bw := ty.BlockWeights()
			n := (cols + bw - 1) / bw * bw
			w := make([]float32, rows*n)
			for j := range w {
				if j%n < cols {
					w[j] = float32(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(3)-1)))
				}
			}
			tile := Tile{Type: ty, Rows: rows, Cols: cols, Data: make([]byte, ty.DataBytes(rows, cols))}
			if err := QuantizeRows(ty, tile.Data, w, n, nil); err != nil {
				t.Fatal(err)
			}
			deq := make([]float32, rows*n)
			if err := DequantizeRows(ty, deq, tile.Data); err != nil {
				t.Fatal(err)
			}
			col := GroupSize * rng.IntN(4)
			x := make([]float32, col+cols+GroupSize*rng.IntN(3))
			for j := range x {
				x[j] = float32(rng.NormFloat64())
			}
			for _, k := range int8Kernels() {
				v := k.NewVec(len(x))
				v.Set(x)
				y0 := make([]float32, rows)
				for r := range y0 {
					y0[r] = float32(rng.NormFloat64())
				}
				want := slices.Clone(y0)
				dotBlocksInt8(&tile, v, col, want)
				got := slices.Clone(y0)
				Dot(&tile, v, col, got)
				xq := make([]float32, len(x))
				for j := range xq {
					xq[j] = v.dx[j/GroupSize] * float32(v.q8[j])
				}
				ref := slices.Clone(y0)
				DotScalar(&tile, xq[col:], ref)
				for r := 0; r < rows; r++ {
					if math.Float32bits(got[r]) != math.Float32bits(want[r]) {
						t.Fatalf("%s on %s, %dx%d at col %d, row %d: Dot %v, int8 oracle %v", ty, k.Name(), rows, cols, col, r, got[r], want[r])
					}
					var mag float64
					for c := 0; c < cols; c++ {
						mag += math.Abs(float64(deq[r*n+c]) * float64(xq[col+c]))
					}
					mag += math.Abs(float64(y0[r]))
					if d := math.Abs(float64(want[r]) - float64(ref[r])); d > 1e-5*mag+1e-30 {
						t.Fatalf("%s %dx%d at col %d row %d: int8 oracle %v, float oracle on dx·q %v (|diff| %g > 1e-5·%g)", ty, rows, cols, col, r, want[r], ref[r], d, mag)
					}
				}
			}
		}
	}
}
