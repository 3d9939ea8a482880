package engine

import (
	"github.com/cflow-dev/cflow/quant"
)

// actVec is an activation prepared once for a whole stream: every tile of
// that stream (Q, K and V of a stripe; gate and up) reads this one prepared
// vector, quantized once when the kernel multiplies int8 activations. It
// is the single place that knows the kernel API.
type actVec struct {
	v *quant.Vec
}

// newActVec prepares a vector of up to n values for the engine's kernel.
func (e *Engine) newActVec(n int) *actVec { return &actVec{v: e.kernel.NewVec(max(n, 1))} }

// set prepares x for the kernels; it must not run concurrently with dots.
func (a *actVec) set(x []float32) { a.v.Set(x) }

// dotTile adds the tile's product with the activation's columns
// [col, col+t.Cols) into y[0:t.Rows].
func dotTile(t *quant.Tile, a *actVec, col int, y []float32) {
	quant.Dot(t, a.v, col, y)
}

// dotPair adds two tiles' products over the same columns [col, col+cols)
// into ya and yb, the same bits as two dotTile calls, walking both tiles
// at once where the kernel can (matvec_pairs.go).
func dotPair(ta, tb *quant.Tile, a *actVec, col int, ya, yb []float32) {
	quant.DotPair(ta, tb, a.v, col, ya, yb)
}

// Kernel is the dot-kernel path this engine runs (Options.Kernel or the
// default), for run's report and for callers that must know whether
// activations are rounded to int8.
func (e *Engine) Kernel() *quant.Kernel { return e.kernel }
