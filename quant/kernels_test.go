package quant

import (
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"testing"
)

// allPaths are the kernel names the issue asks for; a path the CPU or the
// build lacks is skipped, not failed.
var allPaths = []string{"scalar", "avx2", "avx2i8", "avxvnni", "avx512", "vnnirl", "vnnipair", "vnni"}

// withKernel runs f under each available path.
func withKernel(t *testing.T, f func(t *testing.T, k *Kernel)) {
	for _, name := range allPaths {
		t.Run(name, func(t *testing.T) {
			k, err := KernelByName(name)
			if err != nil {
				t.Skipf("kernel %s not available on this CPU/build: %v", name, err)
			}
			f(t, k)
		})
	}
}

// randWeights fills a rows×cols matrix with values whose magnitude varies by
// row and group, including all-zero groups and outliers, so scales differ.
func randWeights(rng *rand.Rand, rows, cols int) []float32 {
	w := make([]float32, rows*cols)
	for r := 0; r < rows; r++ {
		rowScale := math.Exp(rng.NormFloat64() * 2)
		for g := 0; g < Groups(cols); g++ {
			gs := rowScale * math.Exp(rng.NormFloat64())
			zero := rng.IntN(20) == 0
			for c := g * GroupSize; c < min(cols, (g+1)*GroupSize); c++ {
				if zero {
					continue
				}
				v := rng.NormFloat64() * gs
				if rng.IntN(50) == 0 {
					v *= 8
				}
				w[r*cols+c] = float32(v)
			}
		}
	}
	return w
}

// randTileOf builds a tile of type typ; about one in six is a full 128×256
// tile and the rest partial (any rows, any cols including ones that are not
// a multiple of 32).
func randTileOf(rng *rand.Rand, typ Type) Tile {
	rows, cols := MaxTileRows, MaxTileCols
	if rng.IntN(6) != 0 {
		rows, cols = 1+rng.IntN(MaxTileRows), 1+rng.IntN(MaxTileCols)
	}
	return Encode(typ, randWeights(rng, rows, cols), rows, cols, cols)
}

// randActivation returns an activation long enough for a tile at col,
// sometimes with live values past the tile's last column (they must not
// leak into the product), and with block magnitudes that vary.
func randActivation(rng *rand.Rand, col, cols int) []float32 {
	n := col + cols
	if rng.IntN(2) == 0 {
		n += rng.IntN(100)
	}
	x := make([]float32, n)
	for i := range x {
		if i%GroupSize == 0 && rng.IntN(30) == 0 {
			i += GroupSize - 1 // leave a zero block now and then
			continue
		}
		x[i] = float32(rng.NormFloat64() * math.Exp(rng.NormFloat64()))
	}
	return x
}

// dense dequantizes a whole tile once, with each scale decoded once
// (Weight per element is slow); TestDense pins it to Weight.
func dense(t *Tile) []float32 {
	w := make([]float32, t.Rows*t.Cols)
	if t.Type == F32 {
		for r := 0; r < t.Rows; r++ {
			t.DequantRow(r, w[r*t.Cols:(r+1)*t.Cols])
		}
		return w
	}
	g := Groups(t.Cols)
	for r := 0; r < t.Rows; r++ {
		for gi := 0; gi < g; gi++ {
			s, idx := t.ScaleAt(r, gi), r*g+gi
			for j := 0; j < GroupSize && gi*GroupSize+j < t.Cols; j++ {
				var q int
				if t.Type == Q4_0 {
					b := t.Data[idx*16+j%16]
					if j >= 16 {
						b >>= 4
					}
					q = int(b&0x0f) - 8
				} else {
					q = int(int8(t.Data[idx*32+j]))
				}
				w[r*t.Cols+gi*GroupSize+j] = s * float32(q)
			}
		}
	}
	return w
}

func TestDense(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, typ := range []Type{F32, Q4_0, Q8_0} {
		tile := randTileOf(rng, typ)
		w := dense(&tile)
		for r := 0; r < tile.Rows; r++ {
			for c := 0; c < tile.Cols; c++ {
				if w[r*tile.Cols+c] != tile.Weight(r, c) {
					t.Fatalf("%s: dense[%d,%d] = %g, Weight %g", typ, r, c, w[r*tile.Cols+c], tile.Weight(r, c))
				}
			}
		}
	}
}

// magnitude is Σ_c |W[r,c]·x[c]| for row r (w the tile's dense row), the
// scale a float error is judged against.
func magnitude(w, x []float32) float64 {
	var m float64
	for c, wc := range w {
		m += math.Abs(float64(wc) * float64(x[c]))
	}
	return m
}

// int8Bound is what rounding the activation to int8 may cost row r: each
// value moves by at most d/2 (d its block's scale), so the row moves by at
// most Σ_c |W[r,c]|·d(c)/2.
func int8Bound(w []float32, v *Vec, col int) float64 {
	var b float64
	for c, wc := range w {
		b += math.Abs(float64(wc)) * float64(v.dx[(col+c)/GroupSize]) / 2
	}
	return b
}

const tilesPerType = 1000

func TestKernelsMatchOracle(t *testing.T) {
	tiles := map[Type][]Tile{}
	dw := map[Type][][]float32{}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, typ := range []Type{F32, Q4_0, Q8_0} {
		for range tilesPerType {
			tile := randTileOf(rng, typ)
			tiles[typ] = append(tiles[typ], tile)
			dw[typ] = append(dw[typ], dense(&tile))
		}
	}
	withKernel(t, func(t *testing.T, k *Kernel) {
		rng := rand.New(rand.NewPCG(3, 4))
		v := k.NewVec(0)
		for _, typ := range []Type{F32, Q4_0, Q8_0} {
			worst := 0.0
			for i := range tiles[typ] {
				tile := &tiles[typ][i]
				col := GroupSize * rng.IntN(5)
				x := randActivation(rng, col, tile.Cols)
				v.Set(x)
				y0 := make([]float32, tile.Rows+3)
				for r := range y0 {
					y0[r] = float32(rng.NormFloat64())
				}
				got := slices.Clone(y0)
				want := slices.Clone(y0)
				Dot(tile, v, col, got)
				DotScalar(tile, x[col:], want)
				int8 := k.QuantizesActivations() && typ != F32
				for r := range y0 {
					diff := math.Abs(float64(got[r]) - float64(want[r]))
					if r >= tile.Rows {
						if got[r] != y0[r] {
							t.Fatalf("%s tile %d (%dx%d): y[%d] past the tile's rows changed", typ, i, tile.Rows, tile.Cols, r)
						}
						continue
					}
					w := dw[typ][i][r*tile.Cols : (r+1)*tile.Cols]
					mag := magnitude(w, x[col:]) + math.Abs(float64(y0[r]))
					tol := 1e-5 * mag
					if int8 {
						b := int8Bound(w, v, col)
						tol = b + 1e-5*(mag+b)
					}
					if diff > tol {
						t.Fatalf("%s tile %d (%dx%d at col %d) row %d: got %g want %g (|diff| %g > tol %g)",
							typ, i, tile.Rows, tile.Cols, col, r, got[r], want[r], diff, tol)
					}
					if tol > 0 {
						worst = max(worst, diff/tol)
					}
				}
			}
			t.Logf("%s: worst |diff|/tol = %.3g over %d tiles", typ, worst, len(tiles[typ]))
		}
	})
}

// TestStripeMatchesDot checks the fused entry point adds exactly what
// separate Dot calls add.
func TestStripeMatchesDot(t *testing.T) {
	withKernel(t, func(t *testing.T, k *Kernel) {
		rng := rand.New(rand.NewPCG(5, 6))
		for _, typ := range []Type{F32, Q4_0, Q8_0} {
			for range 20 {
				cols := 1 + rng.IntN(MaxTileCols)
				var tiles []*Tile
				var ys, want [][]float32
				for range 3 {
					rows := 1 + rng.IntN(MaxTileRows)
					tile := Encode(typ, randWeights(rng, rows, cols), rows, cols, cols)
					tiles = append(tiles, &tile)
					ys = append(ys, make([]float32, rows))
					want = append(want, make([]float32, rows))
				}
				col := GroupSize * rng.IntN(3)
				x := randActivation(rng, col, cols)
				v := k.NewVec(len(x))
				v.Set(x)
				DotStripe(tiles, v, col, ys)
				for i, tile := range tiles {
					Dot(tile, v, col, want[i])
				}
				for i := range ys {
					if !slices.Equal(ys[i], want[i]) {
						t.Fatalf("%s: DotStripe tile %d differs from Dot", typ, i)
					}
				}
			}
		}
	})
}

// TestDotPairMatchesDot checks DotPair adds into each output exactly what
// Dot does, on every path: for the pairs the two-stream kernels take (Q4_0,
// eight full groups of columns, equal row counts a multiple of 4 on avx2i8
// and of 16 on vnnipair and vnnirl, 128×256 the most common) and for the rest they
// hand to Dot.
func TestDotPairMatchesDot(t *testing.T) {
	withKernel(t, func(t *testing.T, k *Kernel) {
		if (k.Name() == "avx2i8" || k.Name() == "vnnipair" || k.Name() == "vnnirl") && !k.PairsQ4() {
			t.Fatalf("%s lost its two-stream kernel", k.Name())
		}
		rng := rand.New(rand.NewPCG(7, 8))
		shape := func(typed bool) (Type, int, int) {
			typ := Q4_0
			if typed && rng.IntN(4) == 0 {
				typ = []Type{F32, Q8_0}[rng.IntN(2)]
			}
			switch rng.IntN(3) {
			case 0:
				return typ, MaxTileRows, MaxTileCols
			case 1:
				return typ, 4 * (1 + rng.IntN(MaxTileRows/4)), MaxTileCols - rng.IntN(GroupSize)
			}
			return typ, 1 + rng.IntN(MaxTileRows), 1 + rng.IntN(MaxTileCols)
		}
		for i := range 60 {
			ta, ra, cols := shape(true)
			tb, rb := ta, ra
			if i%3 == 2 { // the other tile's own type and rows
				tb, rb, _ = shape(true)
			}
			a := Encode(ta, randWeights(rng, ra, cols), ra, cols, cols)
			b := Encode(tb, randWeights(rng, rb, cols), rb, cols, cols)
			col := GroupSize * rng.IntN(3)
			x := randActivation(rng, col, cols)
			v := k.NewVec(len(x))
			v.Set(x)
			ya, yb := randActivation(rng, 0, ra), randActivation(rng, 0, rb)
			wa, wb := slices.Clone(ya), slices.Clone(yb)
			DotPair(&a, &b, v, col, ya, yb)
			Dot(&a, v, col, wa)
			Dot(&b, v, col, wb)
			if !sameBits(ya, wa) || !sameBits(yb, wb) {
				t.Fatalf("pair %d (%s %dx%d, %s %dx%d, col %d): DotPair differs from Dot", i, ta, ra, cols, tb, rb, cols, col)
			}
		}
	})
}

// TestVecReuse checks a Vec shrunk by Set behaves like a fresh one: the
// values a longer earlier Set left behind must not leak into products.
func TestVecReuse(t *testing.T) {
	withKernel(t, func(t *testing.T, k *Kernel) {
		rng := rand.New(rand.NewPCG(7, 8))
		long := randActivation(rng, 0, 1000)
		for i := range long {
			long[i] = 100 + float32(i)
		}
		short := randActivation(rng, 0, 40)[:40]
		reused := k.NewVec(len(long))
		reused.Set(long)
		reused.Set(short)
		fresh := k.NewVec(len(short))
		fresh.Set(short)
		if reused.Len() != len(short) {
			t.Fatalf("Len = %d, want %d", reused.Len(), len(short))
		}
		if !slices.Equal(reused.x[:len(fresh.x)], fresh.x) || slices.ContainsFunc(reused.x[len(fresh.x):], func(f float32) bool { return f != 0 }) {
			t.Fatal("padded floats differ from a fresh Vec's")
		}
		for _, typ := range []Type{F32, Q4_0, Q8_0} {
			w := randWeights(rng, 7, 40)
			tile := Encode(typ, w, 7, 40, 40)
			a, b := make([]float32, 7), make([]float32, 7)
			// The kernels read whole groups and blocks past column 40: what
			// they find there must not depend on the earlier, longer Set.
			Dot(&tile, reused, 0, a)
			Dot(&tile, fresh, 0, b)
			if !slices.Equal(a, b) {
				t.Fatalf("%s: reused Vec gives %v, fresh %v", typ, a, b)
			}
		}
	})
}

func TestNoAllocs(t *testing.T) {
	withKernel(t, func(t *testing.T, k *Kernel) {
		rng := rand.New(rand.NewPCG(9, 10))
		x := randActivation(rng, 0, 512)
		v := k.NewVec(len(x))
		y := make([]float32, MaxTileRows)
		tiles := []*Tile{}
		for _, typ := range []Type{F32, Q4_0, Q8_0} {
			tile := Encode(typ, randWeights(rng, MaxTileRows, MaxTileCols), MaxTileRows, MaxTileCols, MaxTileCols)
			tiles = append(tiles, &tile)
		}
		ys := [][]float32{y, y, y}
		yb := make([]float32, MaxTileRows)
		if n := testing.AllocsPerRun(20, func() {
			v.Set(x)
			for _, tile := range tiles {
				Dot(tile, v, 32, y)
			}
			DotStripe(tiles, v, 0, ys)
			DotPair(tiles[1], tiles[1], v, 0, y, yb) // two full Q4_0 tiles: the two-stream kernel where there is one
		}); n != 0 {
			t.Fatalf("Set+Dot+DotStripe+DotPair allocate %v times per run", n)
		}
	})
}

// TestFloatTwin: Float keeps the instruction set and drops only the int8
// activation rounding, and a Vec of each kernel in one process computes
// with its own path (no kernel is process-global).
func TestFloatTwin(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	tile := Encode(Q4_0, randWeights(rng, 16, 256), 16, 256, 256)
	x := randActivation(rng, 0, 256)
	for _, k := range Kernels() {
		f := k.Float()
		if f.QuantizesActivations() || (!k.QuantizesActivations() && f != k) {
			t.Fatalf("%s.Float() = %s", k, f)
		}
		vk, vf := k.NewVec(len(x)), f.NewVec(len(x))
		vk.Set(x)
		vf.Set(x)
		if vk.Kernel() != k || vf.Kernel() != f {
			t.Fatalf("%s: Vec kernels %s, %s", k, vk.Kernel(), vf.Kernel())
		}
		got, want := make([]float32, 16), make([]float32, 16)
		Dot(&tile, vf, 0, got)
		DotScalar(&tile, x, want)
		for r := range got {
			if math.Abs(float64(got[r]-want[r])) > 1e-4*(1+math.Abs(float64(want[r]))) {
				t.Fatalf("%s's float twin %s row %d: %g, oracle %g", k, f, r, got[r], want[r])
			}
		}
	}
}

// TestKernelList: the scalar oracle comes first, every name resolves, the
// default is the fastest path unless CFLOW_KERNEL names another, and only
// the vnni paths round activations.
func TestKernelList(t *testing.T) {
	ks, names := Kernels(), KernelNames()
	if len(ks) == 0 || ks[0].Name() != "scalar" || len(names) != len(ks) {
		t.Fatalf("Kernels() = %v, KernelNames() = %v: want scalar first", ks, names)
	}
	want := ks[len(ks)-1]
	if env := os.Getenv(EnvKernel); env != "" {
		if k, err := KernelByName(env); err == nil {
			want = k
		}
	}
	if DefaultKernel() != want {
		t.Fatalf("DefaultKernel() = %s, want %s (%s=%q)", DefaultKernel(), want, EnvKernel, os.Getenv(EnvKernel))
	}
	if _, err := KernelByName("nonesuch"); err == nil {
		t.Fatal("KernelByName accepted an unknown name")
	}
	for i, n := range names {
		k, err := KernelByName(n)
		if err != nil || k != ks[i] || k.Name() != n {
			t.Fatalf("KernelByName(%s) = %v, %v", n, k, err)
		}
		if k.QuantizesActivations() != (n == "vnni" || n == "vnnipair" || n == "vnnirl" || n == "avxvnni" || n == "avx2i8") {
			t.Fatalf("%s: QuantizesActivations = %v", n, k.QuantizesActivations())
		}
	}
}

func TestDotRejectsBadColumns(t *testing.T) {
	tile := Encode(Q4_0, make([]float32, 32), 1, 32, 32)
	v := NewVec(64)
	v.Set(make([]float32, 64))
	for _, col := range []int{-32, 16, 64} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Dot at col %d did not panic", col)
				}
			}()
			Dot(&tile, v, col, make([]float32, 1))
		}()
	}
}

// TestQuantizeAsmMatchesGo pins each path's activation quantizer to the Go
// definition, byte for byte.
func TestQuantizeAsmMatchesGo(t *testing.T) {
	withKernel(t, func(t *testing.T, k *Kernel) {
		if k.quantize == nil {
			t.Skip("path quantizes in Go (or not at all)")
		}
		rng := rand.New(rand.NewPCG(15, 16))
		for range 50 {
			x := randActivation(rng, 0, 1+rng.IntN(3000))
			if rng.IntN(3) == 0 {
				x[rng.IntN(len(x))] = 1e-40 // subnormal
			}
			a, b := k.NewVec(len(x)), k.NewVec(len(x))
			a.Set(x)
			b.Set(x)
			b.quantizeGo(Groups(len(x)))
			if !slices.Equal(a.q8, b.q8) || !slices.Equal(a.xl, b.xl) || !slices.Equal(a.xh, b.xh) ||
				!slices.Equal(a.dx, b.dx) || !slices.Equal(a.c4, b.c4) || !slices.Equal(a.c8, b.c8) {
				t.Fatalf("%s quantizer differs from quantizeGo for n=%d", k, len(x))
			}
		}
	})
}

// TestEnvSelectsKernel runs this test binary again with CFLOW_KERNEL set and
// checks package init chose that path (and that a bad name falls back to
// the default instead of failing).
func TestEnvSelectsKernel(t *testing.T) {
	if want := os.Getenv("CFLOW_KERNEL_WANT"); want != "" {
		if DefaultKernel().Name() != want {
			t.Fatalf("CFLOW_KERNEL=%s: DefaultKernel() = %s, want %s", os.Getenv("CFLOW_KERNEL"), DefaultKernel(), want)
		}
		return
	}
	def := KernelNames()[len(Kernels())-1]
	cases := map[string]string{"scalar": "scalar", "nonesuch": def}
	for _, k := range KernelNames() {
		cases[k] = k
	}
	for env, want := range cases {
		cmd := exec.Command(os.Args[0], "-test.run=^TestEnvSelectsKernel$")
		cmd.Env = append(os.Environ(), "CFLOW_KERNEL="+env, "CFLOW_KERNEL_WANT="+want)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("CFLOW_KERNEL=%s: %v\n%s", env, err, out)
		}
	}
}

// TestInt8KernelsMatchQuantizedOracle pins the int8 paths tighter than the
// rounding bound TestKernelsMatchOracle allows: fed the activation they
// actually read (each value d·q of its Vec's int8 view), the scalar oracle
// must give their result up to float summation noise (1e-5 of Σ|w·x|), so
// a lane mix-up or a lost bias cannot hide inside the rounding tolerance.
// DotBatch is held to the same standard for batches of 1–9 columns.
func TestInt8KernelsMatchQuantizedOracle(t *testing.T) {
	withKernel(t, func(t *testing.T, k *Kernel) {
		if !k.QuantizesActivations() {
			t.Skip("float-activation path")
		}
		rng := rand.New(rand.NewPCG(31, 32))
		for _, typ := range []Type{Q4_0, Q8_0} {
			for i := range 400 {
				tile := randTileOf(rng, typ)
				w := dense(&tile)
				col := GroupSize * rng.IntN(5)
				B := 1 + rng.IntN(9)
				xs, ys, y0s, qs := make([]*Vec, B), make([][]float32, B), make([][]float32, B), make([][]float32, B)
				for j := range xs {
					x := randActivation(rng, col, tile.Cols)
					xs[j] = k.NewVec(len(x))
					xs[j].Set(x)
					qs[j] = make([]float32, len(x))
					for c := range x {
						qs[j][c] = xs[j].dx[c/GroupSize] * float32(xs[j].q8[c])
					}
					y0s[j] = make([]float32, tile.Rows+1)
					for r := range y0s[j] {
						y0s[j][r] = float32(rng.NormFloat64())
					}
					ys[j] = slices.Clone(y0s[j])
				}
				single := slices.Clone(ys[0])
				Dot(&tile, xs[0], col, single)
				DotBatch(&tile, xs, col, ys)
				for j := range xs {
					want := slices.Clone(y0s[j])
					DotScalar(&tile, qs[j][col:], want)
					for r := 0; r < tile.Rows; r++ {
						mag := magnitude(w[r*tile.Cols:(r+1)*tile.Cols], qs[j][col:]) + math.Abs(float64(y0s[j][r]))
						got := []float32{ys[j][r]}
						if j == 0 {
							got = append(got, single[r])
						}
						for _, g := range got {
							if d := math.Abs(float64(g) - float64(want[r])); d > 1e-5*mag {
								t.Fatalf("%s tile %d (%dx%d at col %d) column %d of %d row %d: got %g, oracle on the int8 activation %g (|diff| %g > 1e-5·%g)",
									typ, i, tile.Rows, tile.Cols, col, j, B, r, g, want[r], d, mag)
							}
						}
					}
					if ys[j][tile.Rows] != y0s[j][tile.Rows] {
						t.Fatalf("%s tile %d column %d: y past the tile's rows changed", typ, i, j)
					}
				}
			}
		}
	})
}
