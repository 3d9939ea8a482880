package quant

import (
	"fmt"
	"os"
	"strings"
)

// kernel is one instruction-set path: a dot function per tile type. A path
// whose int8 flag is set reads the Vec's int8 activations for Q4_0/Q8_0 and
// uses fallback when the Vec was prepared without them.
type kernel struct {
	name     string
	int8     bool
	f32      dotFunc
	q4       dotFunc
	q8       dotFunc
	fallback *kernel
	quantize func(v *Vec, groups int) // nil: Vec.quantizeGo
}

// dotFunc adds one tile's product into y; Dot has checked the geometry.
type dotFunc func(t *Tile, x *Vec, col int, y []float32)

// kernels lists the paths this CPU and build can run, slowest first; the
// last is the default. registerKernels (per-architecture file) appends to it.
var kernels = []*kernel{scalarKernel}

var scalarKernel = &kernel{name: "scalar", f32: dotGo, q4: dotGo, q8: dotGo}

// active is the one dispatch point. It is set at package init and changed
// only by SetKernel, which tests and benchmarks call before any Dot.
var active = scalarKernel

// dotGo is the pure-Go path: the scalar oracle on the prepared floats.
func dotGo(t *Tile, x *Vec, col int, y []float32) {
	DotScalar(t, x.x[col:col+t.Cols], y)
}

func init() {
	registerKernels()
	active = kernels[len(kernels)-1]
	if name := os.Getenv("CFLOW_KERNEL"); name != "" {
		if err := SetKernel(name); err != nil {
			fmt.Fprintf(os.Stderr, "cflow: CFLOW_KERNEL: %v; using %s\n", err, active.name)
		}
	}
}

// KernelName reports the dot-kernel path in use, for --version and run
// summaries.
func KernelName() string { return active.name }

// Kernels lists the paths available on this CPU and build, slowest first,
// so tests and benchmarks can cover each one.
func Kernels() []string {
	names := make([]string, len(kernels))
	for i, k := range kernels {
		names[i] = k.name
	}
	return names
}

// SetKernel forces a path by name (one of Kernels()). It is not safe to call
// concurrently with Dot; Vecs prepared before the switch should be Set again
// (an int8 path given a float-only Vec computes with floats).
func SetKernel(name string) error {
	for _, k := range kernels {
		if k.name == name {
			active = k
			return nil
		}
	}
	return fmt.Errorf("kernel %q not available here (have %s)", name, strings.Join(Kernels(), ", "))
}

// KernelQuantizesActivations reports whether the active path rounds
// activations to int8 for Q4_0/Q8_0 tiles. The runtime asks so it can force
// a float path when it must match reference traces to 1e-3.
func KernelQuantizesActivations() bool { return active.int8 }

// pick resolves the function for t on the active path.
func pick(t Type, x *Vec) dotFunc {
	k := active
	if k.int8 && !x.quantized {
		k = k.fallback
	}
	switch t {
	case Q4_0:
		return k.q4
	case Q8_0:
		return k.q8
	}
	return k.f32
}

// check panics unless the kernels may read the tile and the activation
// without leaving their slices: the assembly indexes by geometry alone.
func check(t *Tile, x *Vec, col int, y []float32) {
	if col%GroupSize != 0 || col < 0 || col+t.Cols > x.n {
		panic(fmt.Sprintf("quant: tile cols [%d,%d) outside activation of %d (col must be a multiple of %d)", col, col+t.Cols, x.n, GroupSize))
	}
	if t.Rows <= 0 || t.Cols <= 0 || t.Rows > MaxTileRows || t.Cols > MaxTileCols || len(y) < t.Rows ||
		len(t.Scales) < t.Type.ScaleBytes(t.Rows, t.Cols) || len(t.Data) < t.Type.DataBytes(t.Rows, t.Cols) {
		panic(fmt.Sprintf("quant: bad tile %dx%d %s (scales %d, data %d bytes) or y of %d", t.Rows, t.Cols, t.Type, len(t.Scales), len(t.Data), len(y)))
	}
}

// Dot adds one tile's product into y: y[r] += Σ_c W[r,c]·x[col+c] for r <
// t.Rows. col must be a multiple of 32. It does not allocate.
func Dot(t *Tile, x *Vec, col int, y []float32) {
	check(t, x, col, y)
	pick(t.Type, x)(t, x, col, y)
}

// DotStripe runs Dot for tiles that share the column range [col, col+cols)
// (the Q, K and V tiles of one stripe, or gate and up), ys[i] receiving
// tiles[i]'s rows. It resolves the path once; see docs/PERFORMANCE.md
// ("Kernels") for why the tiles are not fused further.
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
