package engine

import "math"

// asyncExperts is arch4's residual: experts routed at ℓ join x_in(ℓ+δe),
// added before that layer's attention (or to the final residual when
// ℓ+δe ≥ L); one pre-norm of x_in feeds the FFN and the router, and
// x_out = x_in + m + f.
type asyncExperts struct {
	basicStyle
	noMid
}

func (asyncExperts) preAttention(w *worker, s *seq, pass int) { w.inject(s, pass) }

func (asyncExperts) combine(w *worker, s *seq, pass int) []float32 {
	addTo(s.x, s.m)
	if s.hasF {
		addTo(s.x, s.f)
	}
	return s.x
}

// finish adds the outputs targeted past the last layer to the final
// residual, before the final norm.
func (asyncExperts) finish(w *worker, s *seq) { w.inject(s, math.MaxInt) }
