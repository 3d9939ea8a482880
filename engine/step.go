package engine

import (
	"fmt"
	"runtime/debug"

	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/engine/plan"
)

// Step feeds token tok at position Pos() and returns the logits for the
// next position. The slice is reused by the next Step. Going past
// Header.MaxSeqLen returns ErrContextFull; any error leaves the engine as
// it was before the call.
func (e *Engine) Step(tok int) (logits []float32, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer e.faultAsError(&e.seq, &logits, &err)
	return e.step(&e.seq, tok)
}

// checkToken refuses a token outside the vocabulary or a sequence whose
// cache is full, before anything is computed.
func (e *Engine) checkToken(s *seq, tok int) error {
	if tok < 0 || tok >= int(e.h.VocabSize) {
		return fmt.Errorf("runtime: token %d outside the vocabulary 0..%d", tok, e.h.VocabSize-1)
	}
	if s.pos >= int(e.h.MaxSeqLen) {
		return fmt.Errorf("%w: the model's KV cache holds %d positions", ErrContextFull, e.h.MaxSeqLen)
	}
	return nil
}

// step is Step on sequence s: one token through every layer, one weight
// pass for this token alone.
func (e *Engine) step(s *seq, tok int) ([]float32, error) {
	if err := e.checkToken(s, tok); err != nil {
		return nil, err
	}
	e.stats.Last = StreamBytes{}
	e.embedRow(tok, s.x)
	if err := e.runPlan(s); err != nil {
		s.truncate(s.pos)
		return nil, err
	}
	e.obs.PreLMHeadNorm = norm2(s.x)
	logits := e.finalLogits(s.x)
	s.pos++
	e.countToken()
	return logits, nil
}

// countToken adds the last token's byte counts to the totals.
func (e *Engine) countToken() {
	e.stats.Tokens++
	l, t := &e.stats.Last, &e.stats.Total
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
func (e *Engine) runPlan(s *seq) error {
	style, c := e.h.CombineStyle, e.style
	e.startToken(s)
	for _, st := range e.steps {
		lp := e.layers[st.Layer]
		switch st.Stream {
		case plan.Attn:
			e.closePass(s)
			s.open, s.hasF, s.hasE, s.hasH = st.Pass, false, false, false
			c.preAttention(e, s, st.Pass)
			e.attention(s, st.Pass, lp, s.residual(style.AttentionReads()), s.m)
			c.postAttention(s)
		case plan.Dense:
			out := c.denseOut(s, st)
			if st.ZeroInput {
				clear(out) // FFN of the zero vector
				continue
			}
			if style.FFNReads() == cflowfmt.ResidualDelayed {
				e.closePass(s) // the FFN reads x_out of the layer just run
			}
			e.ffn(lp, e.ffnInput(s, lp), out)
		case plan.MoE:
			if err := e.experts(s, st.Pass, lp); err != nil {
				return err
			}
		}
	}
	e.closePass(s)
	c.finish(e, s)
	return e.stagedErr()
}

// closePass combines s's open pass into x_out by its combine style and
// records ‖x_out‖₂.
func (e *Engine) closePass(s *seq) {
	p := s.open
	if p < 0 {
		return
	}
	s.open = -1
	e.obs.ResidualNorms[p] = norm2(e.style.combine(e, s, p))
}
