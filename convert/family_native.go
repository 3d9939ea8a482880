package convert

import (
	"fmt"
	"strings"

	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/cflowfmt"
)

// The report's pipeline-native architectures. Their checkpoints are cflow's
// own HF-layout files: config.json names the architecture and may state the
// combine style, delays, window and the gemma4-style features as keys.
// arch5 and gemma4 add their own facts in family_arch5.go and
// family_gemma4.go.

// nativeNames: HF attention/FFN names plus moe_norm, moe.router and
// moe.experts.
var nativeNames = hfNames.with(
	map[archspec.MatrixID]string{
		archspec.MatMoENorm: "model.layers.%d.moe_norm.weight",
		archspec.MatRouter:  "model.layers.%d.moe.router.weight",
	},
	map[archspec.MatrixID]string{
		archspec.MatExpertGate: "model.layers.%d.moe.experts.%d.gate_proj.weight",
		archspec.MatExpertUp:   "model.layers.%d.moe.experts.%d.up_proj.weight",
		archspec.MatExpertDown: "model.layers.%d.moe.experts.%d.down_proj.weight",
	}, nil)

func init() {
	for _, f := range []*family{
		{name: "arch1_decoupled_streams", aliases: []string{"arch1"}, combine: archspec.DecoupledStreams},
		{name: "arch2_4_combined", aliases: []string{"arch2_4", "arch2"}, combine: archspec.DelayedSum, denseDelay: 1, expertDelay: 2, needExperts: true},
		{name: "arch2_4_sync", combine: archspec.DelayedSum, denseDelay: 1, needExperts: true},
		{name: "arch3_pipeline_registers", aliases: []string{"arch3"}, combine: archspec.PipelineRegisters},
		{name: "arch4_async_experts", aliases: []string{"arch4"}, combine: archspec.AsyncExperts, expertDelay: 2, needExperts: true},
	} {
		f.names = nativeNames
		f.newConfig = func() familyConfig { return newNativeConfig(1e6, 1, false) }
		register(f)
	}
}

// detectNative picks a pipeline-native architecture from combine_style
// when the config names none.
func detectNative(id configIdentity) *family {
	if !id.CombineStyle.set {
		return nil
	}
	name := ""
	switch id.CombineStyle.style {
	case archspec.DelayedSum:
		name = "arch2_4_combined"
		if id.ExpertDelay != nil && *id.ExpertDelay == 0 {
			name = "arch2_4_sync"
		}
	case archspec.AsyncExperts:
		name = "arch4"
	case archspec.ParallelSqrt2:
		name = "gemma4"
	default:
		return nil
	}
	f, _ := lookupFamily(name)
	return f
}

// nativeConfig is a pipeline-native config.json: the combine style and
// delays may be stated, and the feature keys (all optional): embedding
// scale, V-norm, GeLU, final soft-cap, layer kinds with their global θ,
// head dim and partial RoPE, K = V, and arch1's merge interval.
type nativeConfig struct {
	baseConfig
	CombineStyle      combineValue `json:"combine_style"`
	DenseDelay        *int         `json:"dense_delay"`
	ExpertDelay       *int         `json:"expert_delay"`
	UseEmbeddingScale bool         `json:"use_embedding_scale"`
	UseVNorm          bool         `json:"use_v_norm"`
	HiddenAct         string       `json:"hidden_act"`
	HiddenActivation  string       `json:"hidden_activation"`
	FinalLogitSoftcap float64      `json:"final_logit_softcapping"`
	RopeThetaGlobal   *float64     `json:"rope_theta_global"`
	PartialRotary     *float64     `json:"partial_rotary_factor"`
	MergeInterval     int          `json:"merge_interval"`
	LayerTypes        []string     `json:"layer_types"`
	AttentionKEqV     *bool        `json:"attention_k_eq_v"`

	// The family's defaults of the global θ and the partial-rotary
	// factor, and whether they are written when the config omits them.
	thetaGlobal, partial float64
	always               bool
}

func newNativeConfig(thetaGlobal, partial float64, always bool) *nativeConfig {
	return &nativeConfig{MergeInterval: 3, thetaGlobal: thetaGlobal, partial: partial, always: always}
}

// geometry takes the delays from the config (the family's when absent) and
// checks combine_style against the family's.
func (c *nativeConfig) geometry(p *family, g *geom) error {
	if cs := c.CombineStyle; cs.set && cs.style != p.combine {
		return fmt.Errorf("%s: combine_style %s contradicts architecture %s (%s)", c.file, cs.style, p.name, p.combine)
	}
	if c.DenseDelay != nil {
		g.dd = *c.DenseDelay
	}
	if c.ExpertDelay != nil {
		g.ed = *c.ExpertDelay
	}
	return nil
}

func (c *nativeConfig) apply(s *modelSpec, _ *checkpoint) error {
	h, md := &s.h, s.md
	if c.UseEmbeddingScale {
		h.FeatureFlags |= cflowfmt.FlagEmbedScale
	}
	if c.UseVNorm {
		h.FeatureFlags |= cflowfmt.FlagVNorm
	}
	switch act := strings.ToLower(c.HiddenAct + c.HiddenActivation); act {
	case "", "silu", "swish":
	case "gelu_pytorch_tanh", "gelu_tanh":
		h.FeatureFlags |= cflowfmt.FlagGELU
	default:
		return fmt.Errorf("%s: hidden_act %q is not implemented (silu or gelu_pytorch_tanh)", c.file, act)
	}
	h.FinalLogitSoftcap = float32(c.FinalLogitSoftcap)
	tg, writeTG := c.thetaGlobal, c.always
	if c.RopeThetaGlobal != nil {
		tg, writeTG = *c.RopeThetaGlobal, true
	}
	if writeTG {
		md.SetF32(cflowfmt.KeyRopeThetaGlobal, float32(tg))
	}
	if !(tg > 0) {
		return fmt.Errorf("%s: rope_theta_global = %v, want > 0", c.file, tg)
	}
	pf, writePF := c.partial, c.always
	if c.PartialRotary != nil {
		pf, writePF = *c.PartialRotary, true
	}
	if writePF {
		md.SetF32(cflowfmt.KeyRopePartial, float32(pf))
	}
	if !(pf > 0 && pf <= 1) {
		return fmt.Errorf("%s: partial_rotary_factor = %v, want a value in (0, 1]", c.file, pf)
	}
	if s.p.combine.MergesStreams() {
		mi := c.MergeInterval
		if mi == 0 || mi > int(h.NumLayers) {
			return fmt.Errorf("%s: merge_interval %d must be in 1..%d", c.file, mi, h.NumLayers)
		}
		md.SetU32(cflowfmt.KeyMergeInterval, uint32(mi))
	}
	if err := c.layerKinds(s); err != nil {
		return err
	}
	if c.AttentionKEqV != nil {
		s.kEqV = *c.AttentionKEqV
		md.SetU32(cflowfmt.KeyKEqV, b2u(s.kEqV))
	}
	return nil
}

// layerKinds stores config "layer_types" as attn.layer_kinds.
func (c *nativeConfig) layerKinds(s *modelSpec) error {
	lt := c.LayerTypes
	if lt == nil {
		return nil
	}
	if len(lt) != int(s.h.NumLayers) {
		return fmt.Errorf("%s: layer_types has %d entries for %d layers", c.file, len(lt), s.h.NumLayers)
	}
	kinds := make([]byte, len(lt))
	for i, k := range lt {
		switch k {
		case "full_attention":
			kinds[i] = archspec.LayerFull
		case "sliding_attention":
			kinds[i] = archspec.LayerSliding
		default:
			return fmt.Errorf("%s: layer_types[%d] = %q, want full_attention or sliding_attention", c.file, i, k)
		}
	}
	s.setLayerKinds(kinds)
	return nil
}
