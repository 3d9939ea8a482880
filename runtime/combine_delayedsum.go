package runtime

import (
	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/runtime/plan"
)

// delayedSum is arch2_4's residual: the dense FFN of ℓ reads x_out(ℓ−δd)
// (its output waits in the ring), the experts read Nr(x_mid) and join
// x_out of their injection layer:
// x_out(ℓ) = x_mid + f(ℓ) + Σ queued e(j) with target ℓ.
type delayedSum struct {
	midAttention
	doneAtLastPass
}

// dense computes FFN(Nf(x_out(ℓ−δd))) for layer st.Layer into its ring
// slot; plan.Build puts it right after layer ℓ−δd, so that layer is
// combined first. The first δd layers' FFNs read the zero vector.
func (delayedSum) dense(e *Engine, s *seq, st plan.Step, lp *layerPlan) {
	slot := s.ring[st.Layer%len(s.ring)]
	if st.ZeroInput {
		clear(slot)
		return
	}
	e.closePass(s)
	rmsNorm(e.bf.hn, s.residual(cflowfmt.ResidualDelayed), lp.ffnNorm, e.eps)
	e.ffn(lp, e.bf.hn, slot)
}

func (delayedSum) combine(e *Engine, s *seq, pass int) []float32 {
	copy(s.x, s.xmid)
	if e.h.IntermediateSize > 0 {
		addTo(s.x, s.ring[pass%len(s.ring)])
	}
	e.inject(s, pass)
	return s.x
}
