package convert

import (
	"fmt"
	"strings"

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
	map[cflowfmt.MatrixID]string{
		cflowfmt.MatMoENorm: "model.layers.%d.moe_norm.weight",
		cflowfmt.MatRouter:  "model.layers.%d.moe.router.weight",
	},
	map[cflowfmt.MatrixID]string{
		cflowfmt.MatExpertGate: "model.layers.%d.moe.experts.%d.gate_proj.weight",
		cflowfmt.MatExpertUp:   "model.layers.%d.moe.experts.%d.up_proj.weight",
		cflowfmt.MatExpertDown: "model.layers.%d.moe.experts.%d.down_proj.weight",
	}, nil)

func init() {
	for _, f := range []*family{
		{name: "arch1_decoupled_streams", aliases: []string{"arch1"}, combine: cflowfmt.DecoupledStreams},
		{name: "arch2_4_combined", aliases: []string{"arch2_4", "arch2"}, combine: cflowfmt.DelayedSum, denseDelay: 1, expertDelay: 2, needExperts: true},
		{name: "arch2_4_sync", combine: cflowfmt.DelayedSum, denseDelay: 1, needExperts: true},
		{name: "arch3_pipeline_registers", aliases: []string{"arch3"}, combine: cflowfmt.PipelineRegisters},
		{name: "arch4_async_experts", aliases: []string{"arch4"}, combine: cflowfmt.AsyncExperts, expertDelay: 2, needExperts: true},
	} {
		f.names = nativeNames
		f.configure = nativeConfigure
		register(f)
	}
}

// detectNative picks a pipeline-native architecture from combine_style
// when the config names none.
func detectNative(c cfgMap) (*family, error) {
	cs, ok, err := configCombine(c)
	if err != nil || !ok {
		return nil, err
	}
	ed, err := c.int("expert_delay", -1)
	if err != nil {
		return nil, err
	}
	name := ""
	switch cs {
	case cflowfmt.DelayedSum:
		name = "arch2_4_combined"
		if ed == 0 {
			name = "arch2_4_sync"
		}
	case cflowfmt.AsyncExperts:
		name = "arch4"
	case cflowfmt.ParallelSqrt2:
		name = "gemma4"
	default:
		return nil, nil
	}
	f, _ := lookupFamily(name)
	return f, nil
}

// nativeDelays reads the delays and checks combine_style against the
// family's.
func nativeDelays(cfg cfgMap, p *family) (dd, ed int, err error) {
	if cs, ok, err := configCombine(cfg); err != nil {
		return 0, 0, err
	} else if ok && cs != p.combine {
		return 0, 0, fmt.Errorf("%s: combine_style %s contradicts architecture %s (%s)", cfg.file, cs, p.name, p.combine)
	}
	if dd, err = cfg.int("dense_delay", p.denseDelay); err != nil {
		return 0, 0, err
	}
	if ed, err = cfg.int("expert_delay", p.expertDelay); err != nil {
		return 0, 0, err
	}
	return dd, ed, nil
}

// nativeConfigure reads the feature keys a pipeline-native config may carry
// (all optional): embedding scale, V-norm, GeLU, final soft-cap, layer
// kinds with their global θ, head dim and partial RoPE, K = V, and arch1's
// merge interval.
func nativeConfigure(s *modelSpec, c *checkpoint) error {
	return nativeFeatures(s, c, 1e6, 1, false)
}

// nativeFeatures is nativeConfigure with the defaults of the global θ and
// the partial-rotary factor, and whether they are always written.
func nativeFeatures(s *modelSpec, c *checkpoint, thetaGlobal, partial float64, always bool) error {
	cfg, h, md := c.cfg, &s.h, s.md
	var err error
	flag := func(key string, bit uint8) {
		if err != nil {
			return
		}
		var on bool
		if on, err = cfg.boolean(key, false); on {
			h.FeatureFlags |= bit
		}
	}
	flag("use_embedding_scale", cflowfmt.FlagEmbedScale)
	flag("use_v_norm", cflowfmt.FlagVNorm)
	if err != nil {
		return err
	}
	switch act := strings.ToLower(cfg.str("hidden_act") + cfg.str("hidden_activation")); act {
	case "", "silu", "swish":
	case "gelu_pytorch_tanh", "gelu_tanh":
		h.FeatureFlags |= cflowfmt.FlagGELU
	default:
		return fmt.Errorf("%s: hidden_act %q is not implemented (silu or gelu_pytorch_tanh)", cfg.file, act)
	}
	sc, err := cfg.float("final_logit_softcapping", 0)
	if err != nil {
		return err
	}
	h.FinalLogitSoftcap = float32(sc)
	fl := func(key, cfgKey string, def float64) float64 {
		if err != nil || !(always || cfg.present(cfgKey)) {
			return def
		}
		var v float64
		v, err = cfg.float(cfgKey, def)
		md.SetF32(key, float32(v))
		return v
	}
	if tg := fl(cflowfmt.KeyRopeThetaGlobal, "rope_theta_global", thetaGlobal); err == nil && !(tg > 0) {
		return fmt.Errorf("%s: rope_theta_global = %v, want > 0", cfg.file, tg)
	}
	if pf := fl(cflowfmt.KeyRopePartial, "partial_rotary_factor", partial); err == nil && !(pf > 0 && pf <= 1) {
		return fmt.Errorf("%s: partial_rotary_factor = %v, want a value in (0, 1]", cfg.file, pf)
	}
	if err != nil {
		return err
	}
	if s.p.combine.MergesStreams() {
		mi, err := cfg.int("merge_interval", 3)
		if err != nil {
			return err
		}
		if mi == 0 || mi > int(h.NumLayers) {
			return fmt.Errorf("%s: merge_interval %d must be in 1..%d", cfg.file, mi, h.NumLayers)
		}
		md.SetU32(cflowfmt.KeyMergeInterval, uint32(mi))
	}
	if err := readLayerTypes(s, cfg); err != nil {
		return err
	}
	if s.kEqV, err = cfg.boolean("attention_k_eq_v", false); err != nil {
		return err
	}
	if cfg.present("attention_k_eq_v") {
		md.SetU32(cflowfmt.KeyKEqV, b2u(s.kEqV))
	}
	return nil
}

// readLayerTypes stores config "layer_types" as attn.layer_kinds.
func readLayerTypes(s *modelSpec, cfg cfgMap) error {
	lt, err := cfg.strings("layer_types")
	if err != nil || lt == nil {
		return err
	}
	if len(lt) != int(s.h.NumLayers) {
		return fmt.Errorf("%s: layer_types has %d entries for %d layers", cfg.file, len(lt), s.h.NumLayers)
	}
	kinds := make([]byte, len(lt))
	for i, k := range lt {
		switch k {
		case "full_attention":
			kinds[i] = cflowfmt.LayerFull
		case "sliding_attention":
			kinds[i] = cflowfmt.LayerSliding
		default:
			return fmt.Errorf("%s: layer_types[%d] = %q, want full_attention or sliding_attention", cfg.file, i, k)
		}
	}
	s.setLayerKinds(kinds)
	return nil
}
