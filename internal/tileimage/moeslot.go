package tileimage

import "github.com/cflow-dev/cflow/archspec"

// RouterNorm is the norm vector a layer's router input is normalized with:
// moe_norm for styles with their own MoE norm, else the FFN's ffn_norm.
func (h *Header) RouterNorm() archspec.MatrixID {
	if h.CombineStyle.OwnMoENorm() {
		return archspec.MatMoENorm
	}
	return archspec.MatFFNNorm
}

// MoESlotNorm is the norm vector stored at the head of a layer's MoE slot,
// before the router (ok false: none, the router shares the dense FFN's
// ffn_norm, stored in the dense slot). A MoE that replaces the dense FFN
// carries ffn_norm itself.
func (h *Header) MoESlotNorm() (id archspec.MatrixID, ok bool) {
	switch {
	case h.CombineStyle.OwnMoENorm():
		return archspec.MatMoENorm, true
	case h.IntermediateSize == 0:
		return archspec.MatFFNNorm, true
	}
	return 0, false
}
