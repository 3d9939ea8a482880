package engine

// pipelineRegisters is arch3's residual: attention advances its own
// register, attn_reg(ℓ) = attn_reg(ℓ−1) + Attn(Na(attn_reg(ℓ−1))), while the
// FFN reads the previous layer's xfm_reg (in x); xfm_reg(ℓ) = attn_reg(ℓ) + f.
type pipelineRegisters struct {
	basicStyle
	noMid
}

func (pipelineRegisters) combine(w *worker, s *seq, pass int) []float32 {
	addTo(s.sA, s.m)
	copy(s.x, s.sA)
	if s.hasF {
		addTo(s.x, s.f)
	}
	if s.hasE {
		addTo(s.x, s.e)
	}
	return s.x
}
