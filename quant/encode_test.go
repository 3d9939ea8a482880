package quant

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/x448/float16"
)

// encodeCases are blocks (37×70 values) that stress the rounding contract:
// random values over many magnitudes, exact half-way quotients, zeros,
// subnormals, NaN/Inf; the geometries below add short last groups.
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

// encodePaths are the fast encoder's paths this build and CPU can run.
func encodePaths() []bool {
	if encodeAsm {
		return []bool{false, true}
	}
	return []bool{false}
}

func newTile(q Type, rows, cols int) Tile {
	return Tile{Type: q, Rows: rows, Cols: cols, Scales: make([]byte, q.ScaleBytes(rows, cols)), Data: make([]byte, q.DataBytes(rows, cols))}
}

// TestEncodeMatchesRef holds the fast encoder (Go and assembly) to the
// written-out contract, encodeRef, bit for bit; golden_replay_test.go holds
// EncodeInto to the PyTorch reference's vectors.
func TestEncodeMatchesRef(t *testing.T) {
	for _, asm := range encodePaths() {
		for _, q := range []Type{Q4_0, Q8_0, F32} {
			for ci, w := range encodeCases() {
				for _, geo := range [][2]int{{37, 70}, {1, 32}, {5, 256}, {3, 31}} {
					rows, cols := geo[0], geo[1]
					want, got := newTile(q, rows, cols), newTile(q, rows, cols)
					encodeRef(&want, w, 70)
					encodeInto(&got, w, 70, asm)
					if !bytes.Equal(got.Scales, want.Scales) || !bytes.Equal(got.Data, want.Data) {
						t.Fatalf("asm=%v %s case %d %dx%d: fast encoder differs from encodeRef", asm, q, ci, rows, cols)
					}
				}
			}
		}
	}
}

// TestEncodeRowF16MatchesRef: the f16 row encoder equals widening to f32
// and running encodeRef, for short groups and non-finite values too.
func TestEncodeRowF16MatchesRef(t *testing.T) {
	for _, asm := range encodePaths() {
		for ci, w := range encodeCases() {
			for _, cols := range []int{70, 64, 6, 256 % 70} {
				rows := 37
				src := make([]byte, 2*rows*70)
				wide := make([]float32, rows*70)
				for i, v := range w {
					h := float16.Fromfloat32(v).Bits()
					binary.LittleEndian.PutUint16(src[2*i:], h)
					wide[i] = float16.Frombits(h).Float32()
					if F16ToF32(h) != wide[i] && !math.IsNaN(float64(wide[i])) {
						t.Fatalf("F16ToF32(%#x) = %g, want %g", h, F16ToF32(h), wide[i])
					}
				}
				for _, q := range []Type{Q4_0, Q8_0} {
					want, got := newTile(q, rows, cols), newTile(q, rows, cols)
					encodeRef(&want, wide, 70)
					for r := 0; r < rows; r++ {
						encodeRowF16(&got, r, src[2*70*r:], asm)
					}
					if !bytes.Equal(got.Scales, want.Scales) || !bytes.Equal(got.Data, want.Data) {
						t.Fatalf("asm=%v case %d %s %d cols: f16 row encoder differs from encodeRef", asm, ci, q, cols)
					}
				}
			}
		}
	}
}

func benchTileWeights() []float32 {
	w := encodeCases()[0][:128*16]
	blk := make([]float32, 128*256)
	for i := range blk {
		blk[i] = w[i%len(w)]
	}
	return blk
}

// BenchmarkEncodeQ4 times one cached 128×256 tile per path (bytes are the
// f16 input's size, as conversion counts them).
func BenchmarkEncodeQ4(b *testing.B) {
	blk := benchTileWeights()
	for _, asm := range encodePaths() {
		name := map[bool]string{false: "go", true: "asm"}[asm]
		b.Run(name, func(b *testing.B) {
			tile := newTile(Q4_0, 128, 256)
			b.SetBytes(128 * 256 * 2)
			for b.Loop() {
				encodeInto(&tile, blk, 256, asm)
			}
		})
	}
	b.Run("ref", func(b *testing.B) {
		tile := newTile(Q4_0, 128, 256)
		b.SetBytes(128 * 256 * 2)
		for b.Loop() {
			encodeRef(&tile, blk, 256)
		}
	})
}

// BenchmarkEncodeRowF16 times the f16 → Q4_0 row path on one cached tile.
func BenchmarkEncodeRowF16(b *testing.B) {
	src := make([]byte, 128*256*2)
	for i := 0; i < 128*256; i++ {
		binary.LittleEndian.PutUint16(src[2*i:], float16.Fromfloat32(float32(i%97-48)/1000).Bits())
	}
	for _, asm := range encodePaths() {
		b.Run(map[bool]string{false: "go", true: "asm"}[asm], func(b *testing.B) {
			tile := newTile(Q4_0, 128, 256)
			b.SetBytes(128 * 256 * 2)
			for b.Loop() {
				for r := 0; r < 128; r++ {
					encodeRowF16(&tile, r, src[r*512:], asm)
				}
			}
		})
	}
}
