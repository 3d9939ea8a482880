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

// TestEncodeMatchesQuant holds the converter's fast encoder to quant's
// reference encoder bit for bit (the golden/ contract lives there).
func TestEncodeMatchesQuant(t *testing.T) {
	forBothPaths(t, testEncodeMatchesQuant)
}

// forBothPaths runs a test with the assembly quantizers (when this CPU has
// them) and with the Go ones.
func forBothPaths(t *testing.T, f func(*testing.T)) {
	defer func(v bool) { useGroupAsm = v }(useGroupAsm)
	for _, asm := range []bool{true, false} {
		if asm && !haveGroupAsm {
			continue
		}
		useGroupAsm = asm
		f(t)
	}
}

func testEncodeMatchesQuant(t *testing.T) {
	for _, q := range []quant.Type{quant.Q4_0, quant.Q8_0, quant.F32} {
		for ci, w := range encodeCases() {
			for _, geo := range [][2]int{{37, 70}, {1, 32}, {5, 256}, {3, 31}} {
				rows, cols := geo[0], geo[1]
				blk := make([]float32, rows*cols)
				for r := 0; r < rows; r++ {
					copy(blk[r*cols:(r+1)*cols], w[r*70:r*70+cols])
				}
				want := quant.Encode(q, blk, rows, cols, cols)
				got := quant.Tile{Type: q, Rows: rows, Cols: cols,
					Scales: make([]byte, q.ScaleBytes(rows, cols)), Data: make([]byte, q.DataBytes(rows, cols))}
				encodeTile(&got, blk)
				if !bytes.Equal(got.Scales, want.Scales) || !bytes.Equal(got.Data, want.Data) {
					t.Fatalf("%s case %d %dx%d: fast encoder differs from quant.Encode", q, ci, rows, cols)
				}
			}
		}
	}
}

func BenchmarkEncodeQ4(b *testing.B) {
	w := encodeCases()[0][:128*16]
	blk := make([]float32, 128*256)
	for i := range blk {
		blk[i] = w[i%len(w)]
	}
	tile := quant.Tile{Type: quant.Q4_0, Rows: 128, Cols: 256,
		Scales: make([]byte, quant.Q4_0.ScaleBytes(128, 256)), Data: make([]byte, quant.Q4_0.DataBytes(128, 256))}
	b.SetBytes(128 * 256 * 2)
	for b.Loop() {
		encodeTile(&tile, blk)
	}
}

func BenchmarkEncodeQ4Go(b *testing.B) {
	defer func(v bool) { useGroupAsm = v }(useGroupAsm)
	useGroupAsm = false
	BenchmarkEncodeQ4(b)
}

func BenchmarkEncodeQ4Reference(b *testing.B) {
	blk := make([]float32, 128*256)
	for i := range blk {
		blk[i] = float32(i%97) - 48
	}
	tile := quant.Tile{Type: quant.Q4_0, Rows: 128, Cols: 256,
		Scales: make([]byte, quant.Q4_0.ScaleBytes(128, 256)), Data: make([]byte, quant.Q4_0.DataBytes(128, 256))}
	b.SetBytes(128 * 256 * 2)
	for b.Loop() {
		quant.EncodeInto(&tile, blk, 256)
	}
}

// TestEncodeF16MatchesQuant: the fused f16 path equals converting to f32
// and running quant.Encode, including permuted rows, short groups and
// non-finite values.
func TestEncodeF16MatchesQuant(t *testing.T) {
	forBothPaths(t, testEncodeF16MatchesQuant)
}

func testEncodeF16MatchesQuant(t *testing.T) {
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

// BenchmarkGroupF16 times the fused f16 → Q4_0 path on one cached tile.
func BenchmarkGroupF16(b *testing.B) {
	v := make([]float32, 128*256)
	for i := range v {
		v[i] = float32(i%97-48) / 1000
	}
	tn, _ := newTensor("w", "bench", dtF16, []int{128, 256}, encodeAs("F16", v))
	tile := quant.Tile{Type: quant.Q4_0, Rows: 128, Cols: 256,
		Scales: make([]byte, quant.Q4_0.ScaleBytes(128, 256)), Data: make([]byte, quant.Q4_0.DataBytes(128, 256))}
	b.SetBytes(128 * 256 * 2)
	for b.Loop() {
		encodeF16(&tile, tn, 0, 0)
	}
}
