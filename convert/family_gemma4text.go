package convert

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/cflowfmt"
)

// gemma4_text: the real Gemma 4 text decoder (Gemma4ForCausalLM, and the
// text tower of Gemma4ForConditionalGeneration), transformers
// models/gemma4 and ../shared/spec/GEMMA4.md. What differs from Gemma 3:
//   - norms multiply by w as stored; V is RMS-normalised without a weight;
//     attention scale 1.0;
//   - sliding and full layers have their own head dim (head_dim,
//     global_head_dim) and, with attention_k_eq_v, KV-head count
//     (num_global_key_value_heads); full layers then have no v_proj: V is
//     the raw k_proj output (normed), K is k_norm of it, roped;
//   - full layers rotate with proportional RoPE (partial_rotary_factor of
//     the pairs, exponent over global_head_dim, the rest pass through);
//   - every layer has the dense MLP and (enable_moe_block) a MoE beside it:
//     router on rms(r)·router.scale·d^-½ of the post-attention residual r,
//     softmax over all experts, top-k renormalised, times per_expert_scale;
//     experts on pre_feedforward_layernorm_2(r); the MLP's and the MoE's
//     outputs each post-normed, summed and normed again; the layer's output
//     times layer_scalar;
//   - fused expert banks experts.gate_up_proj [E, 2·fe, d] (gate = first fe
//     rows) and experts.down_proj [E, d, fe], split per expert here;
//   - the last layer is full attention whatever layer_types says.
func init() {
	register(&family{name: "gemma4_text", aliases: []string{"gemma4forcausallm", "gemma4forconditionalgeneration"},
		combine: archspec.PreNorm, names: gemma4Names, textConfig: true, prepare: gemma4Prepare,
		newConfig: func() familyConfig { return &gemma4Config{} }})
}

var gemma4Names = hfNames.with(
	map[archspec.MatrixID]string{
		archspec.MatFFNNorm: "model.layers.%d.pre_feedforward_layernorm.weight",
		archspec.MatRouter:  "model.layers.%d.router.proj.weight",
	},
	map[archspec.MatrixID]string{
		archspec.MatExpertGate: "model.layers.%d.experts.%d.gate_proj",
		archspec.MatExpertUp:   "model.layers.%d.experts.%d.up_proj",
		archspec.MatExpertDown: "model.layers.%d.experts.%d.down_proj",
	},
	map[string]string{
		archspec.VecPostAttnNorm:  "model.layers.%d.post_attention_layernorm.weight",
		archspec.VecPostFFNNorm:   "model.layers.%d.post_feedforward_layernorm_1.weight",
		archspec.VecPostMoENorm:   "model.layers.%d.post_feedforward_layernorm_2.weight",
		archspec.VecFFNSumNorm:    "model.layers.%d.post_feedforward_layernorm.weight",
		archspec.VecExpertInNorm:  "model.layers.%d.pre_feedforward_layernorm_2.weight",
		archspec.VecRouterInScale: "model.layers.%d.router.scale",
		archspec.VecExpertScale:   "model.layers.%d.router.per_expert_scale",
		archspec.VecLayerScalar:   "model.layers.%d.layer_scalar",
	})

// gemma4Towers are the multimodal checkpoint's non-text parts, skipped.
var gemma4Towers = []string{"model.vision_tower.", "model.audio_tower.", "model.embed_vision.", "model.embed_audio.", "model.multi_modal_projector."}

// gemma4Prepare presents a multimodal checkpoint's tensors as the text
// decoder's (model.language_model.* as model.*, the towers left out with a
// note; the family reads text_config, textConfig) and splits the fused
// expert banks into per-expert views.
func gemma4Prepare(c *checkpoint) error {
	const lm = "model.language_model."
	skipped := 0
	names := make([]string, 0, len(c.tensors))
	for n := range c.tensors {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		t := c.tensors[n]
		if rest, ok := strings.CutPrefix(n, lm); ok {
			delete(c.tensors, n)
			c.tensors["model."+rest] = t
			continue
		}
		for _, p := range gemma4Towers {
			if strings.HasPrefix(n, p) {
				delete(c.tensors, n)
				skipped++
			}
		}
	}
	if skipped > 0 {
		c.notes = append(c.notes, fmt.Sprintf("%d tensors of the vision/audio towers skipped: only the text decoder is converted", skipped))
	}
	return splitExperts(c)
}

// splitExperts replaces every layer's experts.gate_up_proj [E, 2·fe, d] and
// experts.down_proj [E, d, fe] by per-expert 2-D views (no copy).
func splitExperts(c *checkpoint) error {
	for n, t := range c.tensors {
		l, ok := strings.CutSuffix(n, ".experts.gate_up_proj")
		if !ok {
			continue
		}
		dn, ok := c.tensors[l+".experts.down_proj"]
		if !ok {
			return fmt.Errorf("%s: tensor %s has no %s beside it", t.file, n, l+".experts.down_proj")
		}
		if len(t.shape) != 3 || len(dn.shape) != 3 || t.shape[1]%2 != 0 || dn.shape[0] != t.shape[0] ||
			dn.shape[1] != t.shape[2] || dn.shape[2] != t.shape[1]/2 || t.data == nil || dn.data == nil {
			return fmt.Errorf("%s: fused experts %s %v and down_proj %v: want [E, 2·fe, d] and [E, d, fe]", t.file, n, t.shape, dn.shape)
		}
		E, fe, d := t.shape[0], t.shape[1]/2, t.shape[2]
		es := t.dt.size()
		for e := 0; e < E; e++ {
			base := e * 2 * fe * d * es
			for i, part := range []string{"gate_proj", "up_proj"} {
				off := base + i*fe*d*es
				v, err := newTensor(fmt.Sprintf("%s (expert %d, %s rows)", n, e, part[:len(part)-5]), t.file, t.dt, []int{fe, d}, t.data[off:off+fe*d*es])
				if err == nil {
					err = v.checkFinite() // the 3-D bank skipped the reader's check
				}
				if err != nil {
					return err
				}
				c.tensors[fmt.Sprintf("%s.experts.%d.%s", l, e, part)] = v
			}
			off := e * d * fe * es
			v, err := newTensor(fmt.Sprintf("%s.experts.down_proj (expert %d)", l, e), dn.file, dn.dt, []int{d, fe}, dn.data[off:off+d*fe*es])
			if err == nil {
				err = v.checkFinite()
			}
			if err != nil {
				return err
			}
			c.tensors[fmt.Sprintf("%s.experts.%d.down_proj", l, e)] = v
		}
		delete(c.tensors, n)
		delete(c.tensors, l+".experts.down_proj")
	}
	return nil
}

type gemma4Config struct {
	baseConfig
	TopKExperts           int             `json:"top_k_experts"`
	MoeIntermediateSize   int             `json:"moe_intermediate_size"`
	SlidingWindow         *int            `json:"sliding_window"` // default 512
	HiddenActivation      string          `json:"hidden_activation"`
	AttentionKEqV         bool            `json:"attention_k_eq_v"`
	NumGlobalKVHeads      *int            `json:"num_global_key_value_heads"`
	EnableMoE             bool            `json:"enable_moe_block"`
	LayerTypes            []string        `json:"layer_types"`
	RopeParameters        ropeParameters  `json:"rope_parameters"`
	FinalLogitSoftcapping *float64        `json:"final_logit_softcapping"`
	PerLayerInput         *int            `json:"hidden_size_per_layer_input"`
	KVSharedLayers        int             `json:"num_kv_shared_layers"`
	DoubleWideMLP         bool            `json:"use_double_wide_mlp"`
	Bidirectional         any             `json:"use_bidirectional_attention"`
	AttentionBias         bool            `json:"attention_bias"`
	Dtype                 string          `json:"dtype"`
	TorchDtype            string          `json:"torch_dtype"`
	PerLayerConfig        json.RawMessage `json:"per_layer_config"`
}

// geometry: the experts (with enable_moe_block) under Gemma 4's own keys,
// the window's default, the full layers' head dim (head_dim when
// global_head_dim is absent).
func (c *gemma4Config) geometry(_ *family, g *geom) error {
	g.topK, g.Fe, g.window = c.TopKExperts, c.MoeIntermediateSize, 512
	if c.SlidingWindow != nil {
		g.window = *c.SlidingWindow
	}
	if g.ghd == 0 {
		g.ghd = g.hd
	}
	if !c.EnableMoE {
		g.E, g.topK, g.Fe = 0, 0, 0
	}
	return nil
}

func (c *gemma4Config) apply(s *modelSpec, ck *checkpoint) error {
	h, md := &s.h, s.md
	act := c.HiddenActivation
	if act == "" {
		act = "gelu_pytorch_tanh"
	}
	if err := s.checkAct("hidden_activation", act, "gelu_pytorch_tanh"); err != nil {
		return err
	}
	switch {
	case c.PerLayerInput == nil:
		return refuse(s, "hidden_size_per_layer_input", "missing (transformers' default 256: per-layer embeddings)", "per-layer embeddings (E2B/E4B)")
	case *c.PerLayerInput > 0:
		return refuse(s, "hidden_size_per_layer_input", *c.PerLayerInput, "per-layer embeddings (E2B/E4B)")
	case c.KVSharedLayers > 0:
		return refuse(s, "num_kv_shared_layers", c.KVSharedLayers, "KV-shared layers")
	case c.DoubleWideMLP:
		return refuse(s, "use_double_wide_mlp", true, "the double-wide MLP of KV-shared layers")
	case c.Bidirectional == "all" || c.Bidirectional == true:
		return refuse(s, "use_bidirectional_attention", c.Bidirectional, "causal decode only")
	case c.AttentionBias:
		return refuse(s, "attention_bias", true, "Gemma 4 has no biases")
	case len(c.PerLayerConfig) > 0 && string(c.PerLayerConfig) != "null":
		return refuse(s, "per_layer_config", string(c.PerLayerConfig), "per-layer head sizes are read from head_dim, global_head_dim and num_global_key_value_heads")
	}
	h.FeatureFlags |= cflowfmt.FlagGELU | cflowfmt.FlagVNorm | cflowfmt.FlagEmbedScale
	if c.FinalLogitSoftcapping != nil {
		if !(*c.FinalLogitSoftcapping > 0) {
			return refuse(s, "final_logit_softcapping", *c.FinalLogitSoftcapping, "want > 0 or null")
		}
		h.FinalLogitSoftcap = float32(*c.FinalLogitSoftcapping)
	}
	if err := c.layerKinds(s); err != nil {
		return err
	}
	// K = V on full layers, with their own KV-head count.
	s.kEqV = c.AttentionKEqV
	md.SetU32(cflowfmt.KeyKEqV, b2u(s.kEqV))
	if s.kEqV && c.NumGlobalKVHeads != nil && *c.NumGlobalKVHeads != int(h.NumKVHeads) {
		n := *c.NumGlobalKVHeads
		if n <= 0 || n > int(h.NumKVHeads) || int(h.NumHeads)%n != 0 {
			return refuse(s, "num_global_key_value_heads", n, fmt.Sprintf("want 1..%d dividing %d heads", h.NumKVHeads, h.NumHeads))
		}
		md.SetU32(cflowfmt.KeyGlobalKVHeads, uint32(n))
		s.feature(archspec.FeatKVHeadsPerKind)
	}
	if err := c.rope(s); err != nil {
		return err
	}
	md.SetF32(cflowfmt.KeyAttnScale, 1)
	s.feature(archspec.FeatAttnScale)
	emb, err := ck.get(s.p.names.name(0, archspec.MatEmbed, -1))
	if err != nil {
		return err
	}
	dt := emb.dt
	if name := c.Dtype + c.TorchDtype; name != "" {
		if c.Dtype != "" {
			name = c.Dtype
		}
		var ok bool
		if dt, ok = map[string]dtype{"float32": dtF32, "float16": dtF16, "bfloat16": dtBF16}[name]; !ok {
			return refuse(s, "dtype", name, "the embedding scale is rounded to float32, float16 or bfloat16")
		}
	}
	d := int(h.HiddenSize)
	md.SetF32(cflowfmt.KeyEmbedScale, roundToDtype(float32(math.Sqrt(float64(d))), dt))
	s.feature(archspec.FeatEmbedScale)
	// Norms and vectors.
	if err := s.qkNorm(ck); err != nil {
		return err
	}
	for _, role := range []string{archspec.VecPostAttnNorm, archspec.VecLayerScalar} {
		n := map[string]int{archspec.VecPostAttnNorm: d, archspec.VecLayerScalar: 1}[role]
		if err := s.layerVectors(ck, role, n); err != nil {
			return err
		}
	}
	s.feature(archspec.FeatPostNorms)
	s.feature(archspec.FeatLayerScalar)
	if !c.EnableMoE {
		// MLP only: x = (r + post_feedforward_layernorm(MLP)) · layer_scalar,
		// the FFN's post-norm.
		return s.layerVectorsFrom(ck, archspec.VecPostFFNNorm, "model.layers.%d.post_feedforward_layernorm.weight", func(int) int { return d })
	}
	E := int(h.NumExperts)
	for _, v := range []struct {
		role string
		n    int
	}{
		{archspec.VecPostFFNNorm, d}, {archspec.VecPostMoENorm, d}, {archspec.VecFFNSumNorm, d},
		{archspec.VecExpertInNorm, d}, {archspec.VecRouterInScale, d}, {archspec.VecExpertScale, E},
	} {
		if err := s.layerVectors(ck, v.role, v.n); err != nil {
			return err
		}
	}
	// The router reads rms(r)·scale·d^-½: the constant joins the scale.
	c0 := float32(math.Pow(float64(d), -0.5))
	for l := 0; l < int(h.NumLayers); l++ {
		key := cflowfmt.LayerKey(l, archspec.VecRouterInScale)
		v := md.F32s(key)
		for i := range v {
			v[i] *= c0
		}
		md.SetF32s(key, v)
	}
	for _, f := range []string{archspec.FeatFFNSumNorm, archspec.FeatMoEInputs, archspec.FeatExpertScale, archspec.FeatMoERouting} {
		s.feature(f)
	}
	md.SetString(cflowfmt.KeyMoERouting, archspec.RoutingSoftmaxTopKNorm)
	return nil
}

// layerKinds: layer_types, else sliding unless (i+1) % 6 == 0; the last
// layer is full attention regardless.
func (c *gemma4Config) layerKinds(s *modelSpec) error {
	L := int(s.h.NumLayers)
	kinds := make([]byte, L)
	for i := range kinds {
		t := "full_attention"
		switch {
		case c.LayerTypes != nil && len(c.LayerTypes) != L:
			return refuse(s, "layer_types", len(c.LayerTypes), "want one entry per layer")
		case c.LayerTypes != nil:
			t = c.LayerTypes[i]
		case (i+1)%6 != 0:
			t = "sliding_attention"
		}
		switch t {
		case "full_attention":
		case "sliding_attention":
			kinds[i] = archspec.LayerSliding
		default:
			return refuse(s, "layer_types", t, "want full_attention or sliding_attention")
		}
	}
	kinds[L-1] = archspec.LayerFull
	if s.h.SlidingWindow == 0 {
		return refuse(s, "sliding_window", 0, "sliding layers need a window ≥ 1")
	}
	s.setLayerKinds(kinds)
	return nil
}

// rope reads rope_parameters per layer kind (defaults: sliding θ 1e4;
// full proportional, factor 0.25, θ 1e6).
func (c *gemma4Config) rope(s *modelSpec) error {
	byKind := map[string]*ropeScalingConfig{}
	if rp := c.RopeParameters; rp.set {
		if byKind = rp.byKind; byKind == nil {
			return refuse(s, "rope_parameters", rp.raw, "want sliding_attention and full_attention objects")
		}
	}
	sl, fu := byKind["sliding_attention"], byKind["full_attention"]
	if sl == nil {
		sl = &ropeScalingConfig{RopeType: "default"}
	}
	if fu == nil {
		fu = &ropeScalingConfig{RopeType: "proportional"}
	}
	for k := range byKind {
		if k != "sliding_attention" && k != "full_attention" {
			return refuse(s, "rope_parameters."+k, k, "want sliding_attention or full_attention")
		}
	}
	if sl.RopeType != "default" && sl.RopeType != "" {
		return refuse(s, "rope_parameters.sliding_attention.rope_type", sl.RopeType, "implemented: default")
	}
	thetaS, thetaF, partial := 1e4, 1e6, 0.25
	if sl.RopeTheta != nil {
		thetaS = *sl.RopeTheta
	}
	if fu.RopeTheta != nil {
		thetaF = *fu.RopeTheta
	}
	switch fu.RopeType {
	case "proportional":
		if fu.PartialRotaryFactor != nil {
			partial = *fu.PartialRotaryFactor
		}
	case "default", "":
		if s.h.GlobalHeadDim != 0 && s.h.GlobalHeadDim != s.h.HeadDim {
			return refuse(s, "rope_parameters.full_attention.rope_type", fu.RopeType, "default RoPE with global_head_dim ≠ head_dim")
		}
		partial = 1
	default:
		return refuse(s, "rope_parameters.full_attention.rope_type", fu.RopeType, "implemented: proportional, default")
	}
	switch {
	case !(thetaS > 0) || !(thetaF > 0):
		return refuse(s, "rope_parameters.*.rope_theta", []float64{thetaS, thetaF}, "want > 0")
	case !(partial > 0 && partial <= 1):
		return refuse(s, "rope_parameters.full_attention.partial_rotary_factor", partial, "want a value in (0, 1]")
	}
	s.md.SetF32(cflowfmt.KeyRopeTheta, float32(thetaS))
	s.md.SetF32(cflowfmt.KeyRopeThetaGlobal, float32(thetaF))
	s.md.SetF32(cflowfmt.KeyRopePartial, float32(partial))
	if fu.Factor != nil && *fu.Factor != 1 {
		f := *fu.Factor
		return s.applyRopeScaling("rope_parameters.full_attention", &ropeScalingConfig{RopeType: "linear", Factor: &f})
	}
	return nil
}
