package engine

// parallelSqrt2 is Gemma 4's residual: the dense FFN and the MoE both read
// h = Nf(x_mid) and join scaled, x_out = x_mid + (FFN(h) + MoE(h))/√2.
type parallelSqrt2 struct {
	basicStyle
	withMid
}

func (parallelSqrt2) combine(w *worker, s *seq, pass int) []float32 {
	r2 := sqrtf(2)
	for i := range s.x {
		var t float32
		if s.hasF {
			t = s.f[i]
		}
		if s.hasE {
			t += s.e[i]
		}
		s.x[i] = s.xmid[i] + t/r2
	}
	return s.x
}
