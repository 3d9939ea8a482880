package convert

import (
	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/cflowfmt"
)

// mistral: MistralForCausalLM, Llama with a sliding window on every layer
// when sliding_window is set (transformers models/mistral).
func init() {
	register(&family{name: "mistral", aliases: []string{"mistralforcausallm"}, combine: archspec.PreNorm,
		newConfig: func() familyConfig { return &mistralConfig{} }})
}

type mistralConfig struct {
	llamaConfig
	SlidingWindow *int `json:"sliding_window"`
}

// geometry keeps sliding_window as the window of every layer.
func (c *mistralConfig) geometry(p *family, g *geom) error {
	w := g.window
	err := c.llamaConfig.geometry(p, g)
	g.window = w
	return err
}

func (c *mistralConfig) apply(s *modelSpec, ck *checkpoint) error {
	if err := c.llamaConfig.apply(s, ck); err != nil {
		return err
	}
	return s.everyLayerSliding("sliding_window", c.SlidingWindow)
}

// everyLayerSliding makes every layer a sliding layer of window w (nil:
// full attention everywhere). Rope scaling applies to full layers only, so
// the two together are refused.
func (s *modelSpec) everyLayerSliding(key string, w *int) error {
	if w == nil {
		s.h.SlidingWindow = 0
		return nil
	}
	if *w <= 0 {
		return refuse(s, key, *w, "a window must hold at least the current position")
	}
	if s.md.String(cflowfmt.KeyRopeScaling, "") != "" {
		return refuse(s, "rope_scaling", s.md.String(cflowfmt.KeyRopeScaling, ""), "with a sliding window on every layer")
	}
	s.h.SlidingWindow = uint32(*w)
	kinds := make([]byte, s.h.NumLayers)
	for i := range kinds {
		kinds[i] = archspec.LayerSliding
	}
	s.setLayerKinds(kinds)
	return nil
}
