package convert

import (
	"github.com/cflow-dev/cflow/archspec"
)

// mixtral: MixtralForCausalLM: Llama attention and a MoE in place of the
// MLP under block_sparse_moe (gate; experts w1 = gate, w3 = up, w2 =
// down); softmax over all experts, top-k, renormalised — the softmax over
// the k selected logits, the runtime's default weighting. Its
// intermediate_size is the expert width (transformers models/mixtral).
func init() {
	register(&family{name: "mixtral", aliases: []string{"mixtralforcausallm"}, combine: archspec.PreNorm,
		needExperts: true, noDense: true, defaultEps: 1e-5, names: mixtralNames,
		newConfig: func() familyConfig { return &mixtralConfig{} }})
}

var mixtralNames = hfNames.with(
	map[archspec.MatrixID]string{archspec.MatRouter: "model.layers.%d.block_sparse_moe.gate.weight"},
	map[archspec.MatrixID]string{
		archspec.MatExpertGate: "model.layers.%d.block_sparse_moe.experts.%d.w1.weight",
		archspec.MatExpertUp:   "model.layers.%d.block_sparse_moe.experts.%d.w3.weight",
		archspec.MatExpertDown: "model.layers.%d.block_sparse_moe.experts.%d.w2.weight",
	}, nil)

type mixtralConfig struct {
	mistralConfig
}

// geometry: the experts' width is intermediate_size unless the config
// names expert_intermediate_size; the window stays as read.
func (c *mixtralConfig) geometry(_ *family, g *geom) error {
	if c.ExpertIntermediateSize == 0 {
		g.Fe = g.F
	}
	g.ghd = g.hd
	return nil
}
