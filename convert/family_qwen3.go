package convert

import "github.com/cflow-dev/cflow/archspec"

// qwen3: Qwen3ForCausalLM: Llama attention with a per-head RMSNorm of q and
// k (q_norm, k_norm over head_dim) before RoPE, and an explicit head_dim
// that need not be hidden_size / heads (transformers models/qwen3).
func init() {
	register(&family{name: "qwen3", aliases: []string{"qwen3forcausallm"}, combine: archspec.PreNorm,
		newConfig: func() familyConfig { return &qwen3Config{} }})
}

type qwen3Config struct {
	llamaConfig
	qwenWindow
}

func (c *qwen3Config) apply(s *modelSpec, ck *checkpoint) error {
	if err := c.llamaConfig.apply(s, ck); err != nil {
		return err
	}
	if err := c.qwenWindow.check(s); err != nil {
		return err
	}
	return s.qkNorm(ck)
}

// qkNorm loads the per-head q/k RMSNorm weights (each layer's head dim).
func (s *modelSpec) qkNorm(ck *checkpoint) error {
	for _, r := range []string{archspec.VecQNorm, archspec.VecKNorm} {
		if err := s.layerVectorsBy(ck, r, s.headDim); err != nil {
			return err
		}
	}
	s.feature(archspec.FeatQKNorm)
	return nil
}
