package convert

import (
	"fmt"

	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/cflowfmt"
)

// qwen3_moe: Qwen3MoeForCausalLM: Qwen3 attention, and on every layer a MoE
// in place of the MLP: router mlp.gate, experts mlp.experts.{e}.*_proj;
// softmax over all experts, top-k, renormalised over the k when
// norm_topk_prob (transformers models/qwen3_moe).
func init() {
	register(&family{name: "qwen3_moe", aliases: []string{"qwen3moeforcausallm", "qwen3moe"}, combine: archspec.PreNorm,
		needExperts: true, noDense: true, names: qwen3MoeNames,
		newConfig: func() familyConfig { return &qwen3MoeConfig{} }})
}

var qwen3MoeNames = hfNames.with(
	map[archspec.MatrixID]string{archspec.MatRouter: "model.layers.%d.mlp.gate.weight"},
	map[archspec.MatrixID]string{
		archspec.MatExpertGate: "model.layers.%d.mlp.experts.%d.gate_proj.weight",
		archspec.MatExpertUp:   "model.layers.%d.mlp.experts.%d.up_proj.weight",
		archspec.MatExpertDown: "model.layers.%d.mlp.experts.%d.down_proj.weight",
	}, nil)

type qwen3MoeConfig struct {
	qwen3Config
	NormTopKProb        bool  `json:"norm_topk_prob"`
	DecoderSparseStep   *int  `json:"decoder_sparse_step"`
	MLPOnlyLayers       []int `json:"mlp_only_layers"`
	SharedExpertWidth   int   `json:"shared_expert_intermediate_size"`
	MoeIntermediateSize int   `json:"moe_intermediate_size"`
}

// geometry: the expert width is moe_intermediate_size;
// intermediate_size is the MLP of mlp_only_layers, which are refused.
// Dense layers among the MoE ones are refused here, before the weights are
// looked for, so the message names the key rather than a missing router.
func (c *qwen3MoeConfig) geometry(_ *family, g *geom) error {
	switch {
	case c.DecoderSparseStep != nil && *c.DecoderSparseStep != 1:
		return fmt.Errorf("%s: decoder_sparse_step = %d is not implemented for qwen3_moe (dense layers among MoE layers; every published Qwen3-MoE has 1); refusing rather than computing something else", c.file, *c.DecoderSparseStep)
	case len(c.MLPOnlyLayers) > 0:
		return fmt.Errorf("%s: mlp_only_layers = %v is not implemented for qwen3_moe (dense layers among MoE layers; every published Qwen3-MoE has []); refusing rather than computing something else", c.file, c.MLPOnlyLayers)
	}
	g.Fe, g.ghd, g.window = c.MoeIntermediateSize, g.hd, 0
	return nil
}

func (c *qwen3MoeConfig) apply(s *modelSpec, ck *checkpoint) error {
	if err := c.qwen3Config.apply(s, ck); err != nil {
		return err
	}
	switch {
	case c.MoeIntermediateSize == 0:
		return refuse(s, "moe_intermediate_size", c.MoeIntermediateSize, "the experts need a width")
	case c.SharedExpertWidth > 0:
		return refuse(s, "shared_expert_intermediate_size", c.SharedExpertWidth, "no shared expert")
	}
	r := archspec.RoutingSoftmaxTopK
	if c.NormTopKProb {
		r = archspec.RoutingSoftmaxTopKNorm
	}
	s.md.SetString(cflowfmt.KeyMoERouting, r)
	s.feature(archspec.FeatMoERouting)
	return nil
}
