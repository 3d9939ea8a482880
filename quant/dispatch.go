package quant

import (
	"fmt"
	"os"
	"strings"
)

// Kernel is one instruction-set path for the tile dots: a dot function per
// tile type. An engine picks one (runtime.Options.Kernel) and prepares its
// activation Vecs for it (Kernel.NewVec); nothing in the process switches
// kernels behind an engine's back, so two engines in one process may run
// different paths (verify's float replay beside a vnni decode).
//
// A path whose int8 flag is set rounds activations to int8 for Q4_0/Q8_0
// tiles (its Vecs carry int8 views); F32 tiles always use float activations.
// The int8 paths are avx2i8, avxvnni and vnni.
type Kernel struct {
	name     string
	int8     bool
	f32      dotFunc
	q4       dotFunc
	q8       dotFunc
	float    *Kernel                  // the float-activation path of the same instruction set; nil: itself
	quantize func(v *Vec, groups int) // nil: Vec.quantizeGo

	// Multi-column kernels for DotBatch; nil: the single-column one per
	// column.
	q4batch, q8batch batchFunc

	// f32rows applies an F32 tile to several vectors in Dot's order per
	// vector (DotF32Rows); nil: the path has none.
	f32rows f32RowsFunc

	// q4pair walks two Q4 tiles over the same columns at once (DotPair);
	// nil: the path has no two-stream kernel and DotPair runs Dot twice.
	q4pair pairFunc
}

// pairFunc adds two same-column tiles' products into ya and yb; DotPair
// has checked both geometries and that the columns match.
type pairFunc func(a, b *Tile, x *Vec, col int, ya, yb []float32)

// dotFunc adds one tile's product into y; Dot has checked the geometry.
type dotFunc func(t *Tile, x *Vec, col int, y []float32)

// EnvKernel names the environment variable that overrides the default
// kernel (DefaultKernel), for benchmarks and for ruling a kernel out.
const EnvKernel = "CFLOW_KERNEL"

// scalarKernel is the pure-Go path: the scalar oracle on the prepared floats.
var scalarKernel = &Kernel{name: "scalar", f32: dotGo, q4: dotGo, q8: dotGo}

// kernels lists the paths this CPU and build can run, slowest first; the
// last is the fastest. It is built at package init and never written again.
var kernels = append([]*Kernel{scalarKernel}, archKernels(CPU())...)

// defaultKernel is the fastest path, or the one CFLOW_KERNEL names; set at
// package init and never written again.
var defaultKernel = chooseDefault(os.Getenv(EnvKernel))

func chooseDefault(env string) *Kernel {
	fastest := kernels[len(kernels)-1]
	if env == "" {
		return fastest
	}
	k, err := KernelByName(env)
	if err != nil {
		fmt.Fprintf(os.Stderr, "cflow: %s: %v; using %s\n", EnvKernel, err, fastest.name)
		return fastest
	}
	return k
}

// dotGo is the pure-Go path: the scalar oracle on the prepared floats.
func dotGo(t *Tile, x *Vec, col int, y []float32) {
	DotScalar(t, x.x[col:col+t.Cols], y)
}

// DefaultKernel is the kernel engines use unless told otherwise: the fastest
// path this CPU and build offer, or the one the CFLOW_KERNEL environment
// variable names (an unknown name is reported on stderr and ignored).
func DefaultKernel() *Kernel { return defaultKernel }

// Kernels lists the paths available on this CPU and build, slowest first
// (the scalar oracle first), so tests and benchmarks can cover each one.
func Kernels() []*Kernel { return append([]*Kernel(nil), kernels...) }

// KernelNames lists Kernels' names, for help texts and error messages.
func KernelNames() []string {
	names := make([]string, len(kernels))
	for i, k := range kernels {
		names[i] = k.name
	}
	return names
}

// KernelByName finds a path by the name its Name method reports, so flags
// and CFLOW_KERNEL can choose one.
func KernelByName(name string) (*Kernel, error) {
	for _, k := range kernels {
		if k.name == name {
			return k, nil
		}
	}
	return nil, fmt.Errorf("kernel %q not available here (have %s)", name, strings.Join(KernelNames(), ", "))
}

// Name is the path's short name ("scalar", "avx2", "avx2i8", "avxvnni",
// "avx512", "vnnirl", "vnnipair", "vnni"), for --version, run summaries and
// benchmark reports.
func (k *Kernel) Name() string { return k.name }

// String is Name, so a Kernel prints as its name.
func (k *Kernel) String() string { return k.name }

// QuantizesActivations reports whether the path rounds activations to int8
// for Q4_0/Q8_0 tiles. Replaying a reference trace to 1e-3 leaves no room
// for that rounding, so verify asks for Float instead.
func (k *Kernel) QuantizesActivations() bool { return k.int8 }

// Float is the fastest path of the same instruction set that keeps
// activations in f32: k itself unless k rounds them to int8 (vnni → avx512,
// avxvnni and avx2i8 → avx2).
func (k *Kernel) Float() *Kernel {
	if k.float != nil {
		return k.float
	}
	return k
}

// pick resolves the function for a tile of type t on x's path. The block
// codecs have no SIMD kernel yet: float paths run the oracle on x's
// floats, int8 paths the pure-Go int8 kernel (blocks_int8_go.go).
func pick(t Type, x *Vec) dotFunc {
	if t.GGMLBlocks() {
		if x.k.int8 {
			return dotBlocksInt8Go
		}
		return dotGo
	}
	switch t {
	case Q4_0:
		return x.k.q4
	case Q8_0:
		return x.k.q8
	}
	return x.k.f32
}

// check panics unless the kernels may read the tile and the activation
// without leaving their slices: the assembly indexes by geometry alone.
func check(t *Tile, x *Vec, col int, y []float32) {
	if col%GroupSize != 0 || col < 0 || col+t.Cols > x.n {
		panic(fmt.Sprintf("quant: tile cols [%d,%d) outside activation of %d (col must be a multiple of %d)", col, col+t.Cols, x.n, GroupSize))
	}
	checkTile(t, len(y))
}

// checkTile panics unless t's byte arrays match its geometry and y has a
// row for each of its rows.
func checkTile(t *Tile, ylen int) {
	if t.Rows <= 0 || t.Cols <= 0 || t.Rows > MaxTileRows || t.Cols > MaxTileCols || ylen < t.Rows ||
		len(t.Scales) < t.Type.ScaleBytes(t.Rows, t.Cols) || len(t.Data) < t.Type.DataBytes(t.Rows, t.Cols) {
		panic(fmt.Sprintf("quant: bad tile %dx%d %s (scales %d, data %d bytes) or y of %d", t.Rows, t.Cols, t.Type, len(t.Scales), len(t.Data), ylen))
	}
}

// Dot adds one tile's product into y: y[r] += Σ_c W[r,c]·x[col+c] for r <
// t.Rows, on the path x was prepared for. col must be a multiple of 32. It
// does not allocate.
func Dot(t *Tile, x *Vec, col int, y []float32) {
	check(t, x, col, y)
	pick(t.Type, x)(t, x, col, y)
}

// DotPair adds a's product into ya and b's into yb, the same bits as
// Dot(a, x, col, ya) followed by Dot(b, x, col, yb). a and b cover the
// same columns. On a path with a two-stream kernel (PairsQ4) two Q4_0
// tiles are walked block by block in turn, so a matvec can read two
// distant parts of its weights at once and keep more DRAM misses in flight
// than one stream does; otherwise, and for other shapes or types, it is
// the two Dots.
func DotPair(a, b *Tile, x *Vec, col int, ya, yb []float32) {
	check(a, x, col, ya)
	check(b, x, col, yb)
	if f := x.k.q4pair; f != nil && a.Type == Q4_0 && b.Type == Q4_0 && a.Cols == b.Cols {
		f(a, b, x, col, ya, yb)
		return
	}
	pick(a.Type, x)(a, x, col, ya)
	pick(b.Type, x)(b, x, col, yb)
}

// PairsQ4 reports whether the path has a two-stream kernel for Q4_0 tiles,
// so that callers pair their tiles (DotPair) only where it pays: the
// pairing is measured on the avx2i8 path alone (docs/PERFORMANCE.md).
func (k *Kernel) PairsQ4() bool { return k.q4pair != nil }

// DotStripe runs Dot for tiles that share the column range [col, col+cols)
// (the Q, K and V tiles of one stripe, or gate and up), ys[i] receiving
// tiles[i]'s rows. It checks every tile before running any; see
// docs/PERFORMANCE.md ("Kernels") for why the tiles are not fused further.
func DotStripe(tiles []*Tile, x *Vec, col int, ys [][]float32) {
	if len(ys) < len(tiles) {
		panic("quant: DotStripe needs one output per tile")
	}
	for i, t := range tiles {
		check(t, x, col, ys[i])
	}
	for i, t := range tiles {
		pick(t.Type, x)(t, x, col, ys[i])
	}
}
