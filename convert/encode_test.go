package convert

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/cflow-dev/cflow/quant"
)

// encodeCases are blocks that stress the rounding contract: random values
// over many magnitudes, exact half-way quotients, zeros, subnormals,
// NaN/Inf and short last groups.
func encodeCases() [][]float32 {
	rng := rand.New(rand.NewPCG(1, 2))
	var out [][]float32
	for k := 0; k < 40; k++ {
		w := make([]float32, 37*70)
		scale := float32(math.Pow(10, float64(rng.IntN(12)-8)))
		for i := range w {
			w[i] = float32(rng.NormFloat64()) * scale
			switch rng.IntN(50) {
			case 0:
				w[i] = 0
			case 1: // a quotient of exactly n + 0.5 after the /7
				w[i] = float32(rng.IntN(15)-7) + 0.5
			case 2:
				w[i] = math.Float32frombits(uint32(rng.IntN(1000))) // subnormal
			}
		}
		out = append(out, w)
	}
	halves := make([]float32, 37*70)
	for i := range halves {
		halves[i] = float32(i%15-7) * 0.5 // max 3.5 → s = 0.5 exactly, quotients n.0 or n.5
	}
	special := make([]float32, 37*70)
	copy(special, halves)
	special[3], special[100], special[200] = float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))
	return append(out, halves, special, make([]float32, 37*70))
}

// TestEncodeF16MatchesQuant: the f16 rows the converter hands
// quant.EncodeRowF16 give what converting to f32 and running quant.Encode
// gives, including permuted rows, short groups and non-finite values
// (quant's tests hold both encoders to the contract).
func TestEncodeF16MatchesQuant(t *testing.T) {
	for ci, w := range encodeCases() {
		rows, cols := 37, 70
		v := make([]float32, rows*cols)
		for i := range v {
			v[i] = roundTo("F16", w[i])
		}
		tn, err := newTensor("w", "test", dtF16, []int{rows, cols}, encodeAs("F16", v))
		if err != nil {
			t.Fatal(err)
		}
		if ci%2 == 1 {
			tn.rowOf = func(r int) int { return rows - 1 - r }
		}
		for _, q := range []quant.Type{quant.Q4_0, quant.Q8_0} {
			for _, g := range [][4]int{{0, 0, 37, 70}, {3, 32, 5, 38}, {36, 64, 1, 6}} {
				r0, c0, nr, nc := g[0], g[1], g[2], g[3]
				blk := make([]float32, nr*nc)
				for r := 0; r < nr; r++ {
					sr := r0 + r
					if tn.rowOf != nil {
						sr = tn.rowOf(sr)
					}
					copy(blk[r*nc:], v[sr*cols+c0:sr*cols+c0+nc])
				}
				want := quant.Encode(q, blk, nr, nc, nc)
				got := quant.Tile{Type: q, Rows: nr, Cols: nc, Scales: make([]byte, q.ScaleBytes(nr, nc)), Data: make([]byte, q.DataBytes(nr, nc))}
				encodeF16(&got, tn, r0, c0)
				if !bytes.Equal(got.Scales, want.Scales) || !bytes.Equal(got.Data, want.Data) {
					t.Fatalf("case %d %s block %v: fused f16 encoder differs from quant.Encode", ci, q, g)
				}
			}
		}
	}
}

// encodeF16 quantizes a tile from an f16 tensor's rows as the converter's
// stripe walk does.
func encodeF16(tile *quant.Tile, t *tensor, r0, c0 int) {
	for r := 0; r < tile.Rows; r++ {
		quant.EncodeRowF16(tile, r, t.rowF16(r0+r, c0, tile.Cols))
	}
}
