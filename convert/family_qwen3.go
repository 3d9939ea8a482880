package convert

import "github.com/cflow-dev/cflow/cflowfmt"

// qwen3: Qwen3ForCausalLM: Llama attention with a per-head RMSNorm of q and
// k (q_norm, k_norm over head_dim) before RoPE, and an explicit head_dim
// that need not be hidden_size / heads (transformers models/qwen3).
func init() {
	register(&family{name: "qwen3", aliases: []string{"qwen3forcausallm"}, combine: cflowfmt.PreNorm,
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
	for _, r := range []string{cflowfmt.VecQNorm, cflowfmt.VecKNorm} {
		if err := s.layerVectorsBy(ck, r, s.headDim); err != nil {
			return err
		}
	}
	s.feature(cflowfmt.FeatQKNorm)
	return nil
}
