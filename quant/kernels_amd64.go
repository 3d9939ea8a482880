//go:build !noasm

package quant

// Assembly entry points: the hand-written kernels_*_amd64.s below, and the
// generated families (generate.go) whose stubs are <family>_amd64.go. Each
// computes y[r] += row r of one tile times the activation, for r < rows;
// the Go wrappers below pass pointers already offset to the tile's first
// column and the masks that cut a partial tile's last block. sc points at
// the tile's f16 scales.
//
// The float kernels read x as f32; the vnni kernels read the Vec's int8
// views (see Vec.quantize for the layouts).

//go:noescape
func q4avxvnni(sc, data *byte, rows, groups int, xl, xh *int8, c4 *int32, dx, y *float32)

//go:noescape
func q8avxvnni(sc, data *byte, rows, groups int, x8 *int8, c8 *int32, dx, y *float32)

// archKernels lists the assembly paths f allows, the default (the fastest
// measured) last.
func archKernels(f CPUFeatures) []*Kernel {
	var ks []*Kernel
	if !f.AVX2 {
		return ks
	}
	avx2 := &Kernel{name: "avx2", f32: dotF32AVX2, q4: dotQ4AVX2, q8: dotQ8AVX2, q4batch: dotQ4AVX2Batch, q8batch: dotQ8AVX2Batch,
		f32rows: f32rows256}
	ks = append(ks, avx2)
	// int8 activations through VPMADDUBSW: the default on AVX2 CPUs without
	// VNNI (AMD Zen 2/3), where the float kernels run out of arithmetic
	// before the memory stream does.
	ks = append(ks, &Kernel{name: "avx2i8", int8: true, f32: dotF32AVX2,
		q4: dotQ4AVX2I8, q8: dotQ8AVX2I8, float: avx2, quantize: quantizeAVX2,
		q4batch: dotQ4AVX2I8Batch, q8batch: dotQ8AVX2I8Batch, q4pair: dotQ4AVX2I8Pair})
	if f.AVXVNNI {
		// For CPUs with AVX-VNNI but no AVX-512 (the default there); it
		// quantizes activations in Go.
		ks = append(ks, &Kernel{name: "avxvnni", int8: true, f32: dotF32AVX2,
			q4: dotQ4AVXVNNI, q8: dotQ8AVXVNNI, float: avx2})
	}
	if !f.AVX512 {
		return ks
	}
	avx512 := &Kernel{name: "avx512", f32: dotF32AVX512, q4: dotQ4AVX512, q8: dotQ8AVX512, q4batch: dotQ4AVX512Batch, q8batch: dotQ8AVX512Batch}
	ks = append(ks, avx512)
	if f.AVX512VNNI {
		vnni := &Kernel{name: "vnni", int8: true, f32: dotF32AVX512,
			q4: dotQ4VNNI512, q8: dotQ8VNNI512, float: avx512, quantize: quantizeVNNI,
			q4batch: dotQ4VNNI512Batch, q8batch: dotQ8VNNI512Batch}
		// vnnipair is vnni with the avx2i8 path's two-stream walk
		// (q4vnni512pair) and its two- and three-column batch kernels:
		// the same bits, faster on Zen 3 in their avx2i8 form, not yet
		// measured on a VNNI CPU, so it is chosen by name (CFLOW_KERNEL,
		// --kernel) and vnni stays the default until it is
		// (docs/PERFORMANCE.md, log at 0382674, "Session 11").
		pair := *vnni
		pair.name, pair.q4pair = "vnnipair", dotQ4VNNI512Pair
		pair.q4batch, pair.q8batch = dotQ4VNNI512BatchX, dotQ8VNNI512BatchX
		// vnnirl is vnni with the avx2i8 path's arithmetic order for Q4_0
		// (the rows as lanes: exact integer group sums, one float step per
		// four rows) and its own two-stream kernel: about 0.73× vnni's
		// cycles per four-column step in LLVM's Sapphire Rapids and Zen 4
		// models (docs/PERFORMANCE.md, log at 0382674, "Session 12"); other bits than
		// vnni's, not yet measured, so chosen by name.
		rl := *vnni
		rl.name, rl.q4, rl.q4batch, rl.q4pair = "vnnirl", dotQ4VNNIRL, dotQ4VNNIRLBatch, dotQ4VNNIRLPair
		ks = append(ks, &rl, &pair, vnni)
	}
	return ks
}

// lowBits is a mask with the low n bits set (n ≤ 16), for the k-registers.
func lowBits(n int) int { return 1<<max(n, 0) - 1 }

// vnniBlockMasks are the AVX-512 Q4_0 kernels' masks for g groups: the
// dword masks of a row's two 64-byte blocks (four groups each, four dword
// lanes per group) and the group mask.
func vnniBlockMasks(g int) (k0, k1, kg int) {
	return lowBits(4 * min(g, 4)), lowBits(4 * (g - 4)), lowBits(g)
}

func dotF32AVX2(t *Tile, x *Vec, col int, y []float32) {
	f32f256(&t.Data[0], t.Rows, t.Cols, &x.x[col], &y[0])
}

func dotQ4AVX2(t *Tile, x *Vec, col int, y []float32) {
	q4f256(&t.Scales[0], &t.Data[0], t.Rows, Groups(t.Cols), &x.x[col], &y[0])
}

func dotQ8AVX2(t *Tile, x *Vec, col int, y []float32) {
	q8f256(&t.Scales[0], &t.Data[0], t.Rows, Groups(t.Cols), &x.x[col], &y[0])
}

func dotF32AVX512(t *Tile, x *Vec, col int, y []float32) {
	f32f512(&t.Data[0], t.Rows, t.Cols, &x.x[col], &y[0], lowBits(t.Cols%16))
}

func dotQ4AVX512(t *Tile, x *Vec, col int, y []float32) {
	g := Groups(t.Cols)
	q4f512(&t.Scales[0], &t.Data[0], t.Rows, g, &x.x[col], &y[0], lowBits(g))
}

func dotQ8AVX512(t *Tile, x *Vec, col int, y []float32) {
	g := Groups(t.Cols)
	q8f512(&t.Scales[0], &t.Data[0], t.Rows, g, &x.x[col], &y[0], lowBits(g))
}

func dotQ4VNNI512(t *Tile, x *Vec, col int, y []float32) {
	g, g0 := Groups(t.Cols), col/GroupSize
	k0, k1, kg := vnniBlockMasks(g)
	q4vnni512(&t.Scales[0], &t.Data[0], t.Rows, g, &x.xl[g0*16], &x.xh[g0*16], &x.c4[g0*4], &x.dx[g0], &y[0], k0, k1, kg)
}

// dotQ4VNNI512Pair is the vnnipair path's DotPair: two full-width tiles
// with the same rows, a multiple of 16, go through q4vnni512pair; any other
// shapes through two dotQ4VNNI512 calls. (dotQ4AVX2I8Pair has the same
// shape; a helper taking the assembly function as a value would make the
// call indirect and its arguments escape, so each calls its kernel.)
func dotQ4VNNI512Pair(a, b *Tile, x *Vec, col int, ya, yb []float32) {
	if a.Rows != b.Rows || a.Rows%16 != 0 || Groups(a.Cols) != 8 || Groups(b.Cols) != 8 {
		dotQ4VNNI512(a, x, col, ya)
		dotQ4VNNI512(b, x, col, yb)
		return
	}
	g0 := col / GroupSize
	q4vnni512pair(&a.Scales[0], &a.Data[0], &b.Scales[0], &b.Data[0], a.Rows, &x.xl[g0*16], &x.xh[g0*16], &x.c4[g0*4], &x.dx[g0], &ya[0], &yb[0])
}

func dotQ8VNNI512(t *Tile, x *Vec, col int, y []float32) {
	g, g0 := Groups(t.Cols), col/GroupSize
	k0, k1, k2, k3, kg := q8Masks(g)
	q8vnni512(&t.Scales[0], &t.Data[0], t.Rows, g, &x.q8[g0*GroupSize], &x.c8[g0*8], &x.dx[g0], &y[0],
		k0, k1, k2, k3, kg)
}

func quantizeVNNI(v *Vec, g int) {
	if g > 0 {
		quantize512(&v.x[0], g, &v.q8[0], &v.xl[0], &v.xh[0], &v.dx[0], &v.c4[0], &v.c8[0])
	}
}

func dotQ4AVXVNNI(t *Tile, x *Vec, col int, y []float32) {
	g0 := col / GroupSize
	q4avxvnni(&t.Scales[0], &t.Data[0], t.Rows, Groups(t.Cols), &x.xl[g0*16], &x.xh[g0*16], &x.c4[g0*4], &x.dx[g0], &y[0])
}

func dotQ8AVXVNNI(t *Tile, x *Vec, col int, y []float32) {
	g0 := col / GroupSize
	q8avxvnni(&t.Scales[0], &t.Data[0], t.Rows, Groups(t.Cols), &x.q8[g0*GroupSize], &x.c8[g0*8], &x.dx[g0], &y[0])
}

func dotQ4AVX2I8(t *Tile, x *Vec, col int, y []float32) {
	g0 := col / GroupSize
	q4avx2i8(&t.Scales[0], &t.Data[0], t.Rows, Groups(t.Cols), &x.xl[g0*16], &x.xh[g0*16], &x.c4[g0*4], &x.dx[g0], &y[0])
}

// dotQ4AVX2I8Pair runs two Q4 tiles over the same columns through the
// two-stream kernel when both are whole blocks of full rows (8 groups, the
// same row count, a multiple of 4: every tile of a 128×256 tiling but a
// matrix's edges), and through dotQ4AVX2I8 one after the other otherwise.
func dotQ4AVX2I8Pair(a, b *Tile, x *Vec, col int, ya, yb []float32) {
	if a.Rows != b.Rows || a.Rows%4 != 0 || Groups(a.Cols) != 8 || Groups(b.Cols) != 8 {
		dotQ4AVX2I8(a, x, col, ya)
		dotQ4AVX2I8(b, x, col, yb)
		return
	}
	g0 := col / GroupSize
	q4avx2i8pair(&a.Scales[0], &a.Data[0], &b.Scales[0], &b.Data[0], a.Rows, &x.xl[g0*16], &x.xh[g0*16], &x.c4[g0*4], &x.dx[g0], &ya[0], &yb[0])
}

func dotQ8AVX2I8(t *Tile, x *Vec, col int, y []float32) {
	g0 := col / GroupSize
	q8avx2i8(&t.Scales[0], &t.Data[0], t.Rows, Groups(t.Cols), &x.q8[g0*GroupSize], &x.dx[g0], &y[0])
}

func quantizeAVX2(v *Vec, g int) {
	if g > 0 {
		quantize256(&v.x[0], g, &v.q8[0], &v.xl[0], &v.xh[0], &v.dx[0], &v.c4[0], &v.c8[0])
	}
}
