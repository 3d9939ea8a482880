package convert

import (
	"math"
	"strings"

	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/cflowfmt"
)

// gemma3_text: Gemma3ForCausalLM (Gemma 3 1B, the text tower of the larger
// ones) (transformers models/gemma3/modeling_gemma3.py):
//   - every RMSNorm multiplies by (1 + w), in f32: the converter stores
//     1 + w, which is what the runtime's plain norm then computes;
//   - four norms per layer: input_layernorm (attention), post_attention_
//     layernorm (on the attention output), pre_feedforward_layernorm (the
//     FFN's input), post_feedforward_layernorm (on the FFN output);
//   - q/k RMSNorm per head as Qwen3, with (1 + w);
//   - attention scale query_pre_attn_scalar^-1/2;
//   - embedding × √hidden_size rounded to the weights' dtype;
//   - layer kinds from layer_types, else layer i slides unless
//     (i+1) % sliding_window_pattern == 0; sliding layers use
//     rope_local_base_freq unscaled, full layers rope_theta with
//     rope_scaling;
//   - GeLU-tanh gate, tied embeddings, optional final soft-cap.
func init() {
	register(&family{name: "gemma3_text", aliases: []string{"gemma3forcausallm", "gemma3"}, combine: archspec.PreNorm,
		names: gemma3Names, newConfig: func() familyConfig { return &gemma3Config{} }})
}

var gemma3Names = hfNames.with(
	map[archspec.MatrixID]string{archspec.MatFFNNorm: "model.layers.%d.pre_feedforward_layernorm.weight"}, nil,
	map[string]string{
		archspec.VecPostAttnNorm: "model.layers.%d.post_attention_layernorm.weight",
		archspec.VecPostFFNNorm:  "model.layers.%d.post_feedforward_layernorm.weight",
	})

type gemma3Config struct {
	baseConfig
	HiddenActivation      string             `json:"hidden_activation"`
	HiddenAct             string             `json:"hidden_act"`
	QueryPreAttnScalar    *float64           `json:"query_pre_attn_scalar"`
	SlidingWindow         *int               `json:"sliding_window"`
	SlidingWindowPattern  *int               `json:"sliding_window_pattern"`
	LayerTypes            []string           `json:"layer_types"`
	RopeLocalBaseFreq     *float64           `json:"rope_local_base_freq"`
	RopeScaling           *ropeScalingConfig `json:"rope_scaling"`
	RopeParameters        ropeParameters     `json:"rope_parameters"`
	AttnLogitSoftcapping  *float64           `json:"attn_logit_softcapping"`
	FinalLogitSoftcapping *float64           `json:"final_logit_softcapping"`
	AttentionBias         bool               `json:"attention_bias"`
	Bidirectional         bool               `json:"use_bidirectional_attention"`
	TorchDtype            string             `json:"torch_dtype"`
	Dtype                 string             `json:"dtype"`
	FullRopeTheta         *float64           `json:"rope_theta"` // the full layers' θ; default 1e6
}

// geometry: dense, one head dim, the window as read (layerKinds settles
// it).
func (c *gemma3Config) geometry(_ *family, g *geom) error {
	g.E, g.topK, g.Fe, g.ghd = 0, 0, 0, g.hd
	return nil
}

func (c *gemma3Config) apply(s *modelSpec, ck *checkpoint) error {
	h, md := &s.h, s.md
	act := c.HiddenActivation
	if act == "" {
		act = c.HiddenAct
	}
	if act == "" {
		act = "gelu_pytorch_tanh"
	}
	if err := s.checkAct("hidden_activation", act, "gelu_pytorch_tanh"); err != nil {
		return err
	}
	h.FeatureFlags |= cflowfmt.FlagGELU
	switch {
	case c.AttnLogitSoftcapping != nil:
		return refuse(s, "attn_logit_softcapping", *c.AttnLogitSoftcapping, "Gemma 3 checkpoints set it to null")
	case c.AttentionBias:
		return refuse(s, "attention_bias", true, "Gemma 3 has no biases")
	case c.Bidirectional:
		return refuse(s, "use_bidirectional_attention", true, "causal decode only")
	}
	if err := c.ropeParameters(s); err != nil {
		return err
	}
	if c.FinalLogitSoftcapping != nil {
		if !(*c.FinalLogitSoftcapping > 0) {
			return refuse(s, "final_logit_softcapping", *c.FinalLogitSoftcapping, "want > 0 or null")
		}
		h.FinalLogitSoftcap = float32(*c.FinalLogitSoftcapping)
	}
	// Norms: every *norm.weight of the checkpoint is stored as 1 + w
	// (a Gemma GGUF holds 1 + w already).
	for name, t := range ck.tensors {
		if strings.HasSuffix(name, "norm.weight") {
			t.plusOne = !t.normShifted
		}
	}
	if err := s.qkNorm(ck); err != nil {
		return err
	}
	d := int(h.HiddenSize)
	for _, r := range []string{archspec.VecPostAttnNorm, archspec.VecPostFFNNorm} {
		if err := s.layerVectors(ck, r, d); err != nil {
			return err
		}
	}
	s.feature(archspec.FeatPostNorms)
	// Attention scale.
	qs := 256.0 // Gemma3TextConfig's default
	if c.QueryPreAttnScalar != nil {
		qs = *c.QueryPreAttnScalar
	}
	if !(qs > 0) {
		return refuse(s, "query_pre_attn_scalar", qs, "want > 0")
	}
	md.SetF32(cflowfmt.KeyAttnScale, float32(math.Pow(qs, -0.5)))
	s.feature(archspec.FeatAttnScale)
	// Embedding scale, rounded to the model's dtype: config torch_dtype
	// (newer: dtype), else the embedding tensor's.
	emb, err := ck.get(s.p.names.name(0, archspec.MatEmbed, -1))
	if err != nil {
		return err
	}
	dt := emb.dt
	if name := c.TorchDtype + c.Dtype; name != "" {
		var ok bool
		if dt, ok = map[string]dtype{"float32": dtF32, "float16": dtF16, "bfloat16": dtBF16}[name]; !ok {
			return refuse(s, "torch_dtype", name, "the embedding scale is rounded to float32, float16 or bfloat16")
		}
	}
	h.FeatureFlags |= cflowfmt.FlagEmbedScale
	md.SetF32(cflowfmt.KeyEmbedScale, roundToDtype(float32(math.Sqrt(float64(d))), dt))
	s.feature(archspec.FeatEmbedScale)
	// Layer kinds, window and the two RoPE bases.
	if err := c.layerKinds(s); err != nil {
		return err
	}
	theta := 1e6 // Gemma3TextConfig's default
	if c.FullRopeTheta != nil {
		theta = *c.FullRopeTheta
	}
	local := 10000.0
	if c.RopeLocalBaseFreq != nil {
		local = *c.RopeLocalBaseFreq
	}
	if !(local > 0) {
		return refuse(s, "rope_local_base_freq", local, "want > 0")
	}
	md.SetF32(cflowfmt.KeyRopeTheta, float32(local))
	md.SetF32(cflowfmt.KeyRopeThetaGlobal, float32(theta))
	return s.applyRopeScaling("rope_scaling", c.RopeScaling)
}

func (c *gemma3Config) layerKinds(s *modelSpec) error {
	L := int(s.h.NumLayers)
	kinds := make([]byte, L)
	switch {
	case c.LayerTypes != nil:
		if len(c.LayerTypes) != L {
			return refuse(s, "layer_types", len(c.LayerTypes), "want one entry per layer")
		}
		for i, k := range c.LayerTypes {
			switch k {
			case "full_attention":
			case "sliding_attention":
				kinds[i] = archspec.LayerSliding
			default:
				return refuse(s, "layer_types", k, "want full_attention or sliding_attention")
			}
		}
	default:
		p := 6
		if c.SlidingWindowPattern != nil {
			p = *c.SlidingWindowPattern
		}
		if p <= 0 {
			return refuse(s, "sliding_window_pattern", p, "want ≥ 1")
		}
		for i := range kinds {
			if (i+1)%p != 0 {
				kinds[i] = archspec.LayerSliding
			}
		}
	}
	sliding := false
	for _, k := range kinds {
		sliding = sliding || k == archspec.LayerSliding
	}
	if sliding {
		w := 4096 // Gemma3TextConfig's default
		if c.SlidingWindow != nil {
			w = *c.SlidingWindow
		}
		if w <= 0 {
			return refuse(s, "sliding_window", w, "sliding layers need a window ≥ 1")
		}
		s.h.SlidingWindow = uint32(w)
	} else {
		s.h.SlidingWindow = 0
	}
	s.setLayerKinds(kinds)
	return nil
}

// ropeParameters reads the newer per-layer-type form, {"sliding_attention":
// {...}, "full_attention": {...}}, into the older keys: the sliding
// layers' rope_theta is rope_local_base_freq and must be unscaled; the full
// layers' gives rope_theta and rope_scaling.
func (c *gemma3Config) ropeParameters(s *modelSpec) error {
	if !c.RopeParameters.set {
		return nil
	}
	byKind := c.RopeParameters.byKind
	if byKind["full_attention"] == nil || byKind["sliding_attention"] == nil {
		return refuse(s, "rope_parameters", c.RopeParameters.raw, "want sliding_attention and full_attention objects")
	}
	for kind, r := range byKind {
		switch {
		case kind != "full_attention" && kind != "sliding_attention":
			return refuse(s, "rope_parameters."+kind, kind, "want sliding_attention or full_attention")
		case r.RopeTheta == nil:
			return refuse(s, "rope_parameters."+kind+".rope_theta", nil, "each layer kind needs its base")
		}
	}
	if k := byKind["sliding_attention"].kind(); k != "default" {
		return refuse(s, "rope_parameters.sliding_attention.rope_type", k, "sliding layers rotate unscaled")
	}
	c.RopeLocalBaseFreq = byKind["sliding_attention"].RopeTheta
	c.FullRopeTheta = byKind["full_attention"].RopeTheta
	full := *byKind["full_attention"]
	full.RopeTheta = nil
	c.RopeScaling = &full
	return nil
}
