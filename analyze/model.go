package analyze

import (
	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/engine/plan"
)

// FromModel costs a file by what a token really reads: tile bytes (header,
// scales, data) of attention (Q/K/V, O), dense FFN (gate/up, down) and the
// MoE stream (router plus top-k experts of average size). Norm vectors are
// left out: they are re-read from cache, not streamed.
func FromModel(m *cflowfmt.Model) Model {
	h := &m.Header
	iters := 1
	if m.Meta != nil {
		iters = int(m.Meta.U32(cflowfmt.KeyBlockIterations, 1))
	}
	out := Model{Name: m.Path, Quant: h.QuantType.String(), Params: plan.FromHeader(h, iters)}
	if !h.CombineStyle.IteratesBlocks() {
		out.Params.BlockIterations = 1
	}
	var kinds []byte
	if m.Meta != nil {
		kinds = m.Meta.Bytes(cflowfmt.KeyLayerKinds)
	}
	for l, layer := range m.Layers {
		var b StreamBytes
		b.Attn = tileBytes(layer.QKV) + tileBytes(layer.O)
		b.Dense = tileBytes(layer.GateUp) + tileBytes(layer.Down)
		if n := len(layer.Experts); n > 0 {
			var bank float64
			for _, r := range layer.Experts {
				bank += float64(r.Length)
			}
			b.Expert = tileBytes(layer.Router) + bank/float64(n)*float64(h.TopK)
		}
		out.Layers = append(out.Layers, b)
		kind := "full"
		if l < len(kinds) && kinds[l] == archspec.LayerSliding {
			kind = "sliding"
		}
		out.Kinds = append(out.Kinds, kind)
	}
	return out
}

func tileBytes(ts []cflowfmt.MappedTile) float64 {
	var n int
	for i := range ts {
		n += ts[i].Bytes()
	}
	return float64(n)
}
