package engine

import (
	"errors"

	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/engine/plan"
)

// Step feeds token tok at position Pos() and returns the logits for the
// next position: Forward of one column of the default sequence. The slice
// is reused by the next Step. Going past Header.MaxSeqLen returns
// ErrContextFull; any error leaves the engine as it was before the call.
func (e *Engine) Step(tok int) ([]float32, error) {
	b := &e.stepB
	b.Seqs = append(b.Seqs[:0], e.def)
	b.Tokens = append(b.Tokens[:0], tok)
	b.Positions = append(b.Positions[:0], e.def.s.pos)
	b.Want = append(b.Want[:0], true)
	if err := e.Forward(b); err != nil {
		var be *batchErr
		if errors.As(err, &be) {
			return nil, be.err // one column: the error is the token's
		}
		return nil, err
	}
	return b.logits[0], nil
}

// countToken adds the last token's byte counts to the totals.
func (w *worker) countToken() {
	w.stats.Tokens++
	l, t := &w.stats.Last, &w.stats.Total
	t.Attn += l.Attn
	t.Dense += l.Dense
	t.Router += l.Router
	t.Experts += l.Experts
	t.Embed += l.Embed
	t.LMHead += l.LMHead
}

// runPlan executes the plan's steps for one token of s, leaving the final
// residual (before the final norm) in s.x. Every stream reads the residual
// its combine style names; the style's combiner (e.style) does the
// arithmetic around the streams; this loop keeps the plan's order and
// closes each pass before the next one's attention.
func (w *worker) runPlan(s *seq) error {
	style, c := w.h.CombineStyle, w.style
	w.startToken(s)
	for _, st := range w.steps {
		lp := w.layers[st.Layer]
		switch st.Stream {
		case plan.Attn:
			w.closePass(s)
			s.open, s.hasF, s.hasE, s.hasH = st.Pass, false, false, false
			c.preAttention(w, s, st.Pass)
			w.attention(s, st.Pass, lp, s.residual(style.AttentionReads()), s.m)
			c.postAttention(s)
		case plan.Dense:
			out := c.denseOut(s, st)
			if st.ZeroInput {
				clear(out) // FFN of the zero vector
				continue
			}
			if style.FFNReads() == archspec.ResidualDelayed {
				w.closePass(s) // the FFN reads x_out of the layer just run
			}
			w.ffn(lp, w.ffnInput(s, lp), out)
		case plan.MoE:
			if err := w.experts(s, st.Pass, lp); err != nil {
				return err
			}
		}
	}
	w.closePass(s)
	c.finish(w, s)
	return w.stagedErr()
}

// closePass combines s's open pass into x_out by its combine style and
// records ‖x_out‖₂.
func (w *worker) closePass(s *seq) {
	p := s.open
	if p < 0 {
		return
	}
	s.open = -1
	w.obs.ResidualNorms[p] = norm2(w.style.combine(w, s, p))
}
