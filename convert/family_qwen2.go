package convert

import "github.com/cflow-dev/cflow/archspec"

// qwen2: Qwen2ForCausalLM (Qwen2, Qwen2.5): Llama with biases on q, k and
// v (not o) (transformers models/qwen2).
func init() {
	register(&family{name: "qwen2", aliases: []string{"qwen2forcausallm"}, combine: archspec.PreNorm,
		newConfig: func() familyConfig { return &qwen2Config{} }})
}

type qwen2Config struct {
	llamaConfig
	qwenWindow
}

// qwenWindow: the published Qwen models ship sliding_window with
// use_sliding_window false, which means full attention everywhere.
type qwenWindow struct {
	UseSlidingWindow bool `json:"use_sliding_window"`
}

func (w qwenWindow) check(s *modelSpec) error {
	if w.UseSlidingWindow {
		return refuse(s, "use_sliding_window", true, "Qwen's windowed layers above max_window_layers")
	}
	return nil
}

func (c *qwen2Config) apply(s *modelSpec, ck *checkpoint) error {
	c.AttentionBias = false // Qwen2 always has q/k/v biases and never o
	if err := c.llamaConfig.apply(s, ck); err != nil {
		return err
	}
	if err := c.qwenWindow.check(s); err != nil {
		return err
	}
	return s.attnBiases(ck, archspec.VecQBias, archspec.VecKBias, archspec.VecVBias)
}
