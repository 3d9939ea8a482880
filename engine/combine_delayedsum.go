package engine

import "github.com/cflow-dev/cflow/engine/plan"

// delayedSum is arch2_4's residual: the dense FFN of ℓ reads x_out(ℓ−δd)
// and its output waits in a ring slot; the experts read Nr(x_mid) and join
// x_out of their injection layer:
// x_out(ℓ) = x_mid + f(ℓ) + Σ queued e(j) with target ℓ.
type delayedSum struct {
	basicStyle
	withMid
}

// denseOut is layer st.Layer's ring slot: plan.Build runs that FFN right
// after layer st.Layer−δd, before st.Layer's own combine reads the slot.
func (delayedSum) denseOut(s *seq, st plan.Step) []float32 {
	return s.ring[st.Layer%len(s.ring)]
}

func (delayedSum) combine(w *worker, s *seq, pass int) []float32 {
	copy(s.x, s.xmid)
	if w.h.IntermediateSize > 0 {
		addTo(s.x, s.ring[pass%len(s.ring)])
	}
	w.inject(s, pass)
	return s.x
}
