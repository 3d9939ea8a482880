package engine

import (
	"math"
	"sort"

	"github.com/cflow-dev/cflow/cflowfmt"
)

// The two ends of a token's pass, shared by Step and the batched paths
// (batch.go): its embedding row in, the logits out.

// embedRow dequantizes row tok of the embedding into x (one row from each
// column tile of the stripe that holds it) and applies the embedding scale.
func (e *Engine) embedRow(tok int, x []float32) {
	i := sort.Search(len(e.embed), func(i int) bool { return e.embed[i].row+e.embed[i].rows > tok })
	s := &e.embed[i]
	for _, t := range s.tiles {
		r := tok - int(t.RowOffset)
		if r < 0 || r >= t.Tile.Rows {
			continue
		}
		if e.readHook != nil {
			e.readHook(t.Offset, t.Matrix)
		}
		t.DequantRow(r, x[t.ColOffset:])
		e.stats.Last.Embed += int64(t.Type.ScaleBytes(1, t.Tile.Cols) + t.Type.DataBytes(1, t.Tile.Cols))
	}
	if e.h.Has(cflowfmt.FlagEmbedScale) {
		s := e.fx.embedScale
		for i := range x {
			x[i] *= s
		}
	}
}

// finalLogits applies the final norm and the LM head (and the logit
// soft-cap) to the final residual x, into the engine's logits buffer.
func (e *Engine) finalLogits(x []float32) []float32 {
	b := &e.bf
	rmsNorm(b.xn, x, e.m.FinalNorm, e.eps)
	b.actD.set(b.xn)
	e.matvec(e.lm, b.actD, b.logits)
	e.stats.Last.LMHead += e.lm.bytes
	if c := e.h.FinalLogitSoftcap; c > 0 {
		for i, z := range b.logits {
			b.logits[i] = float32(math.Tanh(float64(z/c))) * c
		}
	}
	return b.logits
}
