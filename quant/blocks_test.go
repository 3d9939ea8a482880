package quant

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/x448/float16"
)

var blockCodecs = []Type{Q4_K, Q5_K, Q6_K, Q5_0, Q5_1, Q4_1}

// fp32ToFP16 is ggml's transcription; x448/float16 is an independent
// round-to-nearest-even converter, and every non-NaN float32 must agree.
func TestFP16MatchesIndependentConverter(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	check := func(f float32) {
		if f != f {
			return
		}
		if got, want := fp32ToFP16(f), float16.Fromfloat32(f).Bits(); got != want {
			t.Fatalf("fp32ToFP16(%g = %#08x) = %#04x, want %#04x", f, math.Float32bits(f), got, want)
		}
		h := fp32ToFP16(f)
		if got, want := fp16ToFP32(h), float16.Frombits(h).Float32(); math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("fp16ToFP32(%#04x) = %g, want %g", h, got, want)
		}
	}
	for i := 0; i < 1<<20; i++ {
		check(math.Float32frombits(r.Uint32()))
	}
	// Every f16 value, its neighbours and the midpoints between them.
	for h := 0; h < 1<<16; h++ {
		f := float16.Frombits(uint16(h)).Float32()
		b := math.Float32bits(f)
		for _, d := range []int32{-1, 0, 1, 1 << 12, -(1 << 12)} {
			check(math.Float32frombits(uint32(int32(b) + d)))
		}
	}
	if got := fp32ToFP16(float32(math.NaN())); got&0x7c00 != 0x7c00 || got&0x3ff == 0 {
		t.Errorf("fp32ToFP16(NaN) = %#04x, not a NaN", got)
	}
}

// The oracle dot over a block-codec tile must equal the float64 dot of the
// dequantized weights (held to ggml's own dequantizer by
// TestBlockCodecsMatchGGML) up to f32 rounding, including tiles whose
// width is not whole blocks (a zero-padded last block), and every
// float-activation path must give DotScalar's bits.
func TestBlockTileDotMatchesDequantized(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, ty := range blockCodecs {
		for _, cols := range []int{256, 224, 32, 160} {
			rows := 5
			nb := (cols + ty.BlockWeights() - 1) / ty.BlockWeights()
			n := nb * ty.BlockWeights()
			w := make([]float32, rows*n)
			for i := range w {
				if i%n < cols {
					w[i] = float32(r.NormFloat64())
				}
			}
			tile := Tile{Type: ty, Rows: rows, Cols: cols, Data: make([]byte, ty.DataBytes(rows, cols))}
			if len(tile.Data) != rows*ty.RowBytes(n) || ty.ScaleBytes(rows, cols) != 0 {
				t.Fatalf("%s %dx%d: DataBytes %d, ScaleBytes %d", ty, rows, cols, len(tile.Data), ty.ScaleBytes(rows, cols))
			}
			if err := QuantizeRows(ty, tile.Data, w, n, nil); err != nil {
				t.Fatal(err)
			}
			deq := make([]float32, rows*n)
			if err := DequantizeRows(ty, deq, tile.Data); err != nil {
				t.Fatal(err)
			}
			x := make([]float32, cols)
			for i := range x {
				x[i] = float32(r.NormFloat64())
			}
			y := make([]float32, rows)
			DotScalar(&tile, x, y)
			for row := 0; row < rows; row++ {
				var want, mag float64
				for c := 0; c < cols; c++ {
					d := float64(deq[row*n+c])
					if got := tile.Weight(row, c); got != deq[row*n+c] {
						t.Fatalf("%s: Weight(%d,%d) = %v, dequantized %v", ty, row, c, got, d)
					}
					want += d * float64(x[c])
					mag += math.Abs(d * float64(x[c]))
				}
				if math.Abs(float64(y[row])-want) > 1e-5*mag+1e-6 {
					t.Errorf("%s %dx%d row %d: DotScalar %v, dequantized dot %v", ty, rows, cols, row, y[row], want)
				}
			}
			for _, k := range Kernels() {
				if k.QuantizesActivations() {
					continue // TestBlockInt8MatchesOracle
				}
				v := k.NewVec(cols)
				v.Set(x)
				yk := make([]float32, rows)
				Dot(&tile, v, 0, yk)
				for row := range yk {
					if math.Float32bits(yk[row]) != math.Float32bits(y[row]) {
						t.Errorf("%s on %s: Dot row %d = %v, DotScalar %v", ty, k.Name(), row, yk[row], y[row])
					}
				}
			}
		}
	}
}

// Nothing may be quantized silently wrong: non-finite weights, bad
// importances and partial blocks are errors naming the problem.
func TestQuantizeRowsRefusesBadInput(t *testing.T) {
	ok := make([]float32, 512)
	cases := []struct {
		name string
		ty   Type
		src  []float32
		n    int
		imx  []float32
		dst  int
		want string
	}{
		{"nan", Q4_K, withAt(ok, 300, float32(math.NaN())), 256, nil, 288, "weight 300 (row 1, column 44) is NaN"},
		{"inf", Q5_0, withAt(ok, 3, float32(math.Inf(-1))), 32, nil, 16 * 22, "weight 3 (row 0, column 3) is -Inf"},
		{"partial block", Q6_K, ok[:320], 320, nil, 0, "multiple of 256"},
		{"partial row", Q5_1, ok[:100], 32, nil, 0, "not whole rows"},
		{"dst size", Q4_K, ok, 256, nil, 100, "want 288"},
		{"imatrix length", Q5_K, ok, 256, make([]float32, 255), 352, "importance matrix has 255"},
		{"imatrix negative", Q5_K, ok, 256, withAt(make([]float32, 256), 9, -1), 352, "importance of column 9 is -1"},
		{"imatrix nan", Q6_K, ok, 256, withAt(make([]float32, 256), 2, float32(math.NaN())), 420, "importance of column 2 is NaN"},
		{"not a block codec", F32, ok, 256, nil, 0, "not a block codec"},
	}
	for _, c := range cases {
		err := QuantizeRows(c.ty, make([]byte, c.dst), c.src, c.n, c.imx)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want one containing %q", c.name, err, c.want)
		}
	}
}

func withAt(x []float32, i int, v float32) []float32 {
	y := append([]float32(nil), x...)
	y[i] = v
	return y
}

// No file format holds the block codecs yet, so readers must refuse them.
func TestBlockCodecsNotYetValidInFiles(t *testing.T) {
	for _, ty := range blockCodecs {
		if ty.Valid() {
			t.Errorf("%s reports Valid before any file format holds it", ty)
		}
		if _, err := ParseType(ty.String()); err == nil {
			t.Errorf("ParseType(%q) accepted a type no file can hold", ty)
		}
	}
}
