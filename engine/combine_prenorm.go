package engine

// preNorm is the standard pre-norm residual (llama, Mixtral, arch5):
// x_out = x_mid + FFN(Nf(x_mid)) [+ MoE(Nf(x_mid))].
type preNorm struct {
	basicStyle
	withMid
}

func (preNorm) combine(w *worker, s *seq, pass int) []float32 {
	if w.sumFFN(w.layers[pass/w.iters], s) {
		return s.x
	}
	copy(s.x, s.xmid)
	if s.hasF {
		addTo(s.x, s.f)
	}
	if s.hasE {
		addTo(s.x, s.e)
	}
	return s.x
}
