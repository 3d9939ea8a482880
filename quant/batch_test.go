package quant

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestDotBatchMatchesOracle applies random tiles (full and partial, every
// type) to batches of 1–12 random columns on every path: each column must
// get what the scalar oracle gives within the single-column kernels'
// tolerance (float noise, plus the int8 rounding bound on int8 paths), and
// what Dot gives: bit for bit on paths without a multi-column kernel and
// on the float-activation paths, within float summation noise (1e-5 of
// Σ|w·x|) on the int8 ones.
func TestDotBatchMatchesOracle(t *testing.T) {
	withKernel(t, func(t *testing.T, k *Kernel) {
		rng := rand.New(rand.NewPCG(21, 22))
		for _, typ := range []Type{F32, Q4_0, Q8_0} {
			worst := 0.0
			for i := range 300 {
				tile := randTileOf(rng, typ)
				dw := dense(&tile)
				col := GroupSize * rng.IntN(4)
				B := 1 + rng.IntN(12)
				xs := make([]*Vec, B)
				raw := make([][]float32, B)
				ys, single := make([][]float32, B), make([][]float32, B)
				for j := range xs {
					raw[j] = randActivation(rng, col, tile.Cols)
					xs[j] = k.NewVec(len(raw[j]))
					xs[j].Set(raw[j])
					ys[j] = make([]float32, tile.Rows+2)
					for r := range ys[j] {
						ys[j][r] = float32(rng.NormFloat64())
					}
					single[j] = slices.Clone(ys[j])
				}
				y0 := make([][]float32, B)
				for j := range ys {
					y0[j] = slices.Clone(ys[j])
				}
				DotBatch(&tile, xs, col, ys)
				for j := range xs {
					Dot(&tile, xs[j], col, single[j])
				}
				// Float-activation multi-column kernels do each column's
				// arithmetic in the single-column kernel's order, and so do
				// the exact int8 paths' (exactBatchKernels: a batched
				// prefill and token-by-token decode must not differ even in
				// an int8 rounding they could flip).
				exact := k.batch(typ) == nil || !k.QuantizesActivations() || slices.Contains(exactBatchKernels, k.Name())
				for j := range xs {
					if exact && !sameBits(ys[j], single[j]) {
						t.Fatalf("%s tile %d column %d of %d: DotBatch differs from Dot bit for bit", typ, i, j, B)
					}
					want := slices.Clone(y0[j])
					DotScalar(&tile, raw[j][col:], want)
					for r := range ys[j] {
						if r >= tile.Rows {
							if ys[j][r] != y0[j][r] {
								t.Fatalf("%s tile %d column %d: y[%d] past the tile's rows changed", typ, i, j, r)
							}
							continue
						}
						w := dw[r*tile.Cols : (r+1)*tile.Cols]
						mag := magnitude(w, raw[j][col:]) + math.Abs(float64(y0[j][r]))
						tol := 1e-5 * mag
						if k.QuantizesActivations() && typ != F32 {
							b := int8Bound(w, xs[j], col)
							tol = b + 1e-5*(mag+b)
						}
						// A multi-column kernel reads the same int8
						// activations as Dot: only float summation order
						// may differ from it.
						if d := math.Abs(float64(ys[j][r]) - float64(single[j][r])); !exact && d > 1e-5*mag {
							t.Fatalf("%s tile %d column %d of %d row %d: batch %g, Dot %g (|diff| %g > 1e-5·%g)",
								typ, i, j, B, r, ys[j][r], single[j][r], d, mag)
						}
						diff := math.Abs(float64(ys[j][r]) - float64(want[r]))
						if diff > tol {
							t.Fatalf("%s tile %d (%dx%d at col %d) column %d of %d row %d: got %g want %g (|diff| %g > tol %g)",
								typ, i, tile.Rows, tile.Cols, col, j, B, r, ys[j][r], want[r], diff, tol)
						}
						if tol > 0 {
							worst = max(worst, diff/tol)
						}
					}
				}
			}
			t.Logf("%s: worst |diff|/tol = %.3g", typ, worst)
		}
	})
}

// TestDotBatchChecks: columns of different kernels, too few outputs and a
// column range outside an activation are refused before any work.
func TestDotBatchChecks(t *testing.T) {
	tile := Encode(Q4_0, make([]float32, 64), 1, 64, 64)
	ks := Kernels()
	a, b := ks[0].NewVec(64), ks[len(ks)-1].NewVec(32)
	a.Set(make([]float32, 64))
	b.Set(make([]float32, 32))
	y := [][]float32{make([]float32, 1), make([]float32, 1)}
	for name, f := range map[string]func(){
		"too few outputs": func() { DotBatch(&tile, []*Vec{a, a}, 0, y[:1]) },
		"short column":    func() { DotBatch(&tile, []*Vec{a, ks[0].NewVec(32)}, 0, y) },
		"mixed kernels": func() {
			if len(ks) == 1 {
				panic("only one kernel")
			}
			c := ks[len(ks)-1].NewVec(64)
			c.Set(make([]float32, 64))
			DotBatch(&tile, []*Vec{a, c}, 0, y)
		},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: DotBatch did not panic", name)
				}
			}()
			f()
		}()
	}
	_ = b
}

func TestDotBatchNoAllocs(t *testing.T) {
	withKernel(t, func(t *testing.T, k *Kernel) {
		rng := rand.New(rand.NewPCG(23, 24))
		tiles := []*Tile{}
		for _, typ := range []Type{F32, Q4_0, Q8_0} {
			tile := Encode(typ, randWeights(rng, MaxTileRows, MaxTileCols), MaxTileRows, MaxTileCols, MaxTileCols)
			tiles = append(tiles, &tile)
		}
		xs, ys := make([]*Vec, 8), make([][]float32, 8)
		for j := range xs {
			xs[j] = k.NewVec(512)
			xs[j].Set(randActivation(rng, 0, 512)[:512])
			ys[j] = make([]float32, MaxTileRows)
		}
		if n := testing.AllocsPerRun(20, func() {
			for _, tile := range tiles {
				for _, B := range []int{8, 3, 2} { // the two- and three-column kernels too
					DotBatch(tile, xs[:B], 256, ys[:B])
				}
			}
		}); n != 0 {
			t.Fatalf("DotBatch allocates %v times per run", n)
		}
	})
}

// sameBits compares float slices bit for bit (NaN equals the same NaN).
func sameBits(a, b []float32) bool {
	return slices.EqualFunc(a, b, func(x, y float32) bool { return math.Float32bits(x) == math.Float32bits(y) })
}

// batchDiffersFromDot applies tile at col to B random activation columns of
// kernel k, once through DotBatch and once a column at a time through Dot,
// both adding into the same random outputs, and returns the first column
// whose bits differ (−1 when every column agrees): the bit-identity the
// avx2i8 four-column kernels promise their single-column twins.
func batchDiffersFromDot(k *Kernel, rng *rand.Rand, tile *Tile, col, B int) int {
	xs := make([]*Vec, B)
	ys, single := make([][]float32, B), make([][]float32, B)
	for j := range xs {
		raw := randActivation(rng, col, tile.Cols)
		xs[j] = k.NewVec(len(raw))
		xs[j].Set(raw)
		ys[j] = make([]float32, tile.Rows)
		for r := range ys[j] {
			ys[j][r] = float32(rng.NormFloat64())
		}
		single[j] = slices.Clone(ys[j])
	}
	DotBatch(tile, xs, col, ys)
	for j := range xs {
		Dot(tile, xs[j], col, single[j])
		if !sameBits(ys[j], single[j]) {
			return j
		}
	}
	return -1
}

// exactBatchKernels are the int8 paths whose multi-column kernels promise
// Dot's bits (all of them: avx2i8, vnni, vnnipair, vnnirl); withExactBatch
// runs f under each this CPU has.
var exactBatchKernels = []string{"avx2i8", "vnni", "vnnipair", "vnnirl"}

func withExactBatch(t *testing.T, f func(t *testing.T, k *Kernel)) {
	for _, name := range exactBatchKernels {
		t.Run(name, func(t *testing.T) {
			k, err := KernelByName(name)
			if err != nil {
				t.Skipf("%s not available on this CPU/build: %v", name, err)
			}
			f(t, k)
		})
	}
}

// TestDotBatchFullTilesSumAsDot: on full tiles (the bulk of every real
// model) the exact paths' multi-column kernels give each column exactly
// what its single-column kernel gives. An int8 path that sums in another
// order passes the oracle test above, yet an ulp there can flip a later
// int8 activation rounding, and batched prefill then drifts from
// token-by-token decoding by more than TRACE.md's replay rule allows (it
// did on verify's llama_wide fixture when avx2i8's four-column reduction
// was reordered). B runs 2..12, so the two- and three-column kernels and
// their leftovers after groups of four are covered too.
func TestDotBatchFullTilesSumAsDot(t *testing.T) {
	withExactBatch(t, func(t *testing.T, k *Kernel) {
		rng := rand.New(rand.NewPCG(23, 24))
		for _, typ := range []Type{Q4_0, Q8_0} {
			for i := range 48 {
				// Full-width rows of every count 1..8 first (the four-column
				// kernel's full-row loop alternates two rows and finishes a
				// row's sums during the next one), then random counts and
				// whole tiles.
				rows := MaxTileRows
				if i < 8 {
					rows = 1 + i
				} else if i%2 == 0 {
					rows = 1 + rng.IntN(MaxTileRows)
				}
				tile := Encode(typ, randWeights(rng, rows, MaxTileCols), rows, MaxTileCols, MaxTileCols)
				col := GroupSize * 8 * rng.IntN(3)
				B := 2 + rng.IntN(11)
				if j := batchDiffersFromDot(k, rng, &tile, col, B); j >= 0 {
					t.Fatalf("%s full tile %d (%d rows) column %d of %d: DotBatch differs from Dot", typ, i, rows, j, B)
				}
			}
		}
	})
}

// TestDotBatchPartialTilesSumAsDot extends TestDotBatchFullTilesSumAsDot to
// every Q4_0 and Q8_0 tile shape: any row count, short rows (fewer than 8
// groups), an odd group count (a lone last group) and pad weights (cols
// not a multiple of 32) with live activations past the tile. avx2i8's Q4
// kernels share their arithmetic (_asm/q4rows.go: exact integer group
// sums, bias included), its Q8 kernels give each column its own lane with
// the single-column kernel's sums, and vnni's sum each column as its
// single-column kernel does, so the multi-column kernels must give Dot's
// bits on all of them; batched prefill of a model whose matrices end in a
// partial tile relies on it as much as on full tiles.
func TestDotBatchPartialTilesSumAsDot(t *testing.T) {
	withExactBatch(t, func(t *testing.T, k *Kernel) {
		rng := rand.New(rand.NewPCG(25, 26))
		for _, typ := range []Type{Q4_0, Q8_0} {
			for i := range 300 {
				rows, cols := 1+rng.IntN(MaxTileRows), 1+rng.IntN(MaxTileCols)
				if i%3 == 0 {
					cols = GroupSize * (1 + rng.IntN(8)) // whole groups, short rows
				}
				tile := Encode(typ, randWeights(rng, rows, cols), rows, cols, cols)
				col := GroupSize * rng.IntN(9)
				B := 2 + rng.IntN(7)
				if j := batchDiffersFromDot(k, rng, &tile, col, B); j >= 0 {
					t.Fatalf("%s tile %d (%dx%d at col %d) column %d of %d: DotBatch differs from Dot", typ, i, rows, cols, col, j, B)
				}
			}
		}
	})
}
