package convert

import (
	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/cflowfmt"
)

// llama: LlamaForCausalLM (Llama 2, Llama 3.x, TinyLlama, SmolLM, llama2.c
// checkpoints), the base the other dense HF families embed
// (transformers models/llama/modeling_llama.py).
func init() {
	register(&family{name: "llama", aliases: []string{"llamaforcausallm", "llama2c", "stories"},
		combine: archspec.PreNorm, defaultEps: 1e-6, newConfig: func() familyConfig { return &llamaConfig{} }})
}

// llamaConfig is LlamaConfig: the geometry every family shares
// (baseConfig) and what else changes the computation.
type llamaConfig struct {
	baseConfig
	HiddenAct      string             `json:"hidden_act"`
	AttentionBias  bool               `json:"attention_bias"`
	MLPBias        bool               `json:"mlp_bias"`
	RopeScaling    *ropeScalingConfig `json:"rope_scaling"`
	RopeParameters ropeParameters     `json:"rope_parameters"`
	PartialRotary  *float64           `json:"partial_rotary_factor"`
}

// geometry: a dense HF family has no experts, no second head dim, and no
// window unless a variant sets one.
func (c *llamaConfig) geometry(_ *family, g *geom) error {
	g.E, g.topK, g.Fe, g.ghd, g.window = 0, 0, 0, g.hd, 0
	return nil
}

func (c *llamaConfig) apply(s *modelSpec, ck *checkpoint) error {
	if c.HiddenAct == "" {
		c.HiddenAct = "silu"
	}
	if err := s.checkAct("hidden_act", c.HiddenAct, "silu"); err != nil {
		return err
	}
	if c.PartialRotary != nil && *c.PartialRotary != 1 {
		return refuse(s, "partial_rotary_factor", *c.PartialRotary, "Llama-style models rotate the whole head")
	}
	if err := c.applyRope(s); err != nil {
		return err
	}
	if c.AttentionBias {
		if err := s.attnBiases(ck, archspec.VecQBias, archspec.VecKBias, archspec.VecVBias, archspec.VecOBias); err != nil {
			return err
		}
	}
	if c.MLPBias {
		if err := s.attnBiases(ck, archspec.VecGateBias, archspec.VecUpBias, archspec.VecDownBias); err != nil {
			return err
		}
	}
	return nil
}

// applyRope maps rope_scaling, or the newer flat rope_parameters (which
// also carries rope_theta), onto the metadata.
func (c *llamaConfig) applyRope(s *modelSpec) error {
	key, r := "rope_scaling", c.RopeScaling
	if rp := c.RopeParameters; rp.set {
		key, r = "rope_parameters", rp.flat
		if r == nil {
			return refuse(s, key, rp.raw, "want one object with rope_type and rope_theta")
		}
		if r.RopeTheta != nil {
			if !(*r.RopeTheta > 0) {
				return refuse(s, key+".rope_theta", *r.RopeTheta, "want > 0")
			}
			s.md.SetF32(cflowfmt.KeyRopeTheta, float32(*r.RopeTheta))
		}
	}
	return s.applyRopeScaling(key, r)
}
