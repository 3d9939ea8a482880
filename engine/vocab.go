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
func (w *worker) embedRow(tok int, x []float32) {
	i := sort.Search(len(w.embed), func(i int) bool { return w.embed[i].row+w.embed[i].rows > tok })
	s := &w.embed[i]
	for _, t := range s.tiles {
		r := tok - int(t.RowOffset)
		if r < 0 || r >= t.Tile.Rows {
			continue
		}
		if w.readHook != nil {
			w.readHook(t.Offset, t.Matrix)
		}
		t.DequantRow(r, x[t.ColOffset:])
		w.stats.Last.Embed += int64(t.Type.ScaleBytes(1, t.Tile.Cols) + t.Type.DataBytes(1, t.Tile.Cols))
	}
	if w.h.Has(cflowfmt.FlagEmbedScale) {
		s := w.fx.embedScale
		for i := range x {
			x[i] *= s
		}
	}
}

// finalLogits applies the final norm and the LM head (and the logit
// soft-cap) to the final residual x, into the engine's logits buffer.
func (w *worker) finalLogits(x []float32) []float32 {
	b := &w.bf
	rmsNorm(b.xn, x, w.m.FinalNorm, w.eps)
	b.actD.set(b.xn)
	w.matvec(w.lm, b.actD, b.logits)
	w.stats.Last.LMHead += w.lm.bytes
	if c := w.h.FinalLogitSoftcap; c > 0 {
		for i, z := range b.logits {
			b.logits[i] = float32(math.Tanh(float64(z/c))) * c
		}
	}
	return b.logits
}
