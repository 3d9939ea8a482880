package runtime

import (
	"github.com/cflow-dev/cflow/quant"
)

// actVec is an activation prepared once for a whole stream: every tile of
// that stream (Q, K and V of a stripe; gate and up) reads this one copy.
// It is the single place that knows the kernel API, so moving to the SIMD
// kernels' prepared vectors is one edit here.
type actVec struct {
	x []float32
}

func newActVec(n int) *actVec { return &actVec{x: make([]float32, n)} }

// set prepares x for the kernels (a copy today; a quantized copy when the
// dispatcher picks an activation-quantizing kernel).
func (a *actVec) set(x []float32) { copy(a.x, x) }

// dotTile adds the tile's product with the activation's columns
// [col, col+t.Cols) into y[0:t.Rows].
func dotTile(t *quant.Tile, a *actVec, col int, y []float32) {
	quant.DotScalar(t, a.x[col:col+t.Cols], y)
}

// KernelName names the dot kernel this engine runs, for run's report.
func KernelName() string { return quant.KernelName() }
