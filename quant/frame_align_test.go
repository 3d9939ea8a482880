package quant

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The avx2i8 Q4 kernels hold one copy of their loop per SP mod 32 (Go
// aligns SP to 8 bytes only; each copy addresses the frame at the constant
// displacement that makes it 32-byte aligned) and pick one at entry, so a
// test run from a single stack depth checks only the copy that depth
// selects. The helpers below call a function from frames 8, 16, 24 and 32
// bytes larger (a live local array of one to four words), which moves the
// kernel's SP through all four residues mod 32 whatever the depth of the
// test itself.

//go:noinline
func holdWords1(p *[1]uint64) {}

//go:noinline
func holdWords2(p *[2]uint64) {}

//go:noinline
func holdWords3(p *[3]uint64) {}

//go:noinline
func holdWords4(p *[4]uint64) {}

//go:noinline
func callBelow1Word(f func()) {
	var p [1]uint64
	holdWords1(&p)
	f()
}

//go:noinline
func callBelow2Words(f func()) {
	var p [2]uint64
	holdWords2(&p)
	f()
}

//go:noinline
func callBelow3Words(f func()) {
	var p [3]uint64
	holdWords3(&p)
	f()
}

//go:noinline
func callBelow4Words(f func()) {
	var p [4]uint64
	holdWords4(&p)
	f()
}

// atEveryStackAlignment runs f from four frames 8 bytes apart.
func atEveryStackAlignment(f func()) {
	callBelow1Word(f)
	callBelow2Words(f)
	callBelow3Words(f)
	callBelow4Words(f)
}

// TestQ4KernelsAtEveryStackAlignment: every copy of the avx2i8 Q4 kernels
// (one per SP mod 32) computes the same thing. From each stack alignment,
// Dot stays within the int8 bound of the scalar oracle and gives the same
// bits as from the others, and DotBatch gives Dot's bits, on a full tile,
// short rows, a lone last group and pad nibbles.
func TestQ4KernelsAtEveryStackAlignment(t *testing.T) {
	k, err := KernelByName("avx2i8")
	if err != nil {
		t.Skipf("avx2i8 not available on this CPU/build: %v", err)
	}
	rng := rand.New(rand.NewPCG(27, 28))
	shapes := [][2]int{{MaxTileRows, MaxTileCols}, {7, MaxTileCols}, {13, 96}, {6, 100}, {3, 17}}
	for i, s := range shapes {
		rows, cols := s[0], s[1]
		tile := Encode(Q4_0, randWeights(rng, rows, cols), rows, cols, cols)
		w := dense(&tile)
		col := GroupSize * rng.IntN(9)
		x := randActivation(rng, col, cols)
		v := k.NewVec(len(x))
		v.Set(x)
		want := make([]float32, rows)
		DotScalar(&tile, x[col:], want)
		var first []float32
		frame := 0
		atEveryStackAlignment(func() {
			frame++
			got := make([]float32, rows)
			Dot(&tile, v, col, got)
			for r := range got {
				wr := w[r*cols : (r+1)*cols]
				b := int8Bound(wr, v, col)
				tol := b + 1e-5*(magnitude(wr, x[col:])+b)
				if d := math.Abs(float64(got[r]) - float64(want[r])); d > tol {
					t.Errorf("shape %d (%dx%d), frame %d, row %d: Dot %g, oracle %g (|diff| %g > %g)", i, rows, cols, frame, r, got[r], want[r], d, tol)
				}
			}
			if first == nil {
				first = got
			} else if !sameBits(got, first) {
				t.Errorf("shape %d (%dx%d): Dot from frame %d differs from frame 1", i, rows, cols, frame)
			}
			if j := batchDiffersFromDot(k, rng, &tile, col, 4); j >= 0 {
				t.Errorf("shape %d (%dx%d), frame %d: DotBatch column %d differs from Dot", i, rows, cols, frame, j)
			}
		})
	}
}
