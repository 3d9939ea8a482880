package gguf

import (
	"fmt"
	"math"
	"strings"

	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/cflowfmt"
)

// arch is how one cflow family maps onto a llama.cpp architecture: its
// name (the GGUF key prefix), whether llama.cpp rotates split-half pairs
// (NEOX, no q/k row permutation) or adjacent ones (llama: HF rows
// permuted, as convert_hf_to_gguf.py does), and which cflow features it
// can carry. llama.cpp's own names and keys: src/llama-arch.cpp and
// gguf-py/gguf/constants.py.
type arch struct {
	name      string
	neox      bool
	biases    bool // attn_q/k/v/output.bias, ffn_*.bias
	qkNorm    bool // attn_q_norm, attn_k_norm
	postNorms bool // post_attention_norm, post_ffw_norm
	sliding   bool // attention.sliding_window(_pattern), rope.freq_base_swa
	gelu      bool // the architecture's FFN is GeLU (gemma3), not SwiGLU
	embScale  bool // the graph multiplies the embedding by √d (gemma3)
	routings  []string
	// gemma4: llama.cpp's gemma4 — per-layer KV heads and SWA flags as
	// arrays, per-kind head sizes, the MLP beside the MoE, proportional
	// RoPE through rope_freqs (gemma4.go).
	gemma4 bool
}

// archs by cflow family (general.architecture). Files without a family
// name, and the llama2.c-derived ones, are llama.
var archs = map[string]*arch{
	"llama":       {name: "llama", biases: true},
	"mistral":     {name: "llama", biases: true},
	"mixtral":     {name: "llama"},
	"qwen2":       {name: "qwen2", neox: true, biases: true},
	"qwen3":       {name: "qwen3", neox: true, qkNorm: true},
	"qwen3_moe":   {name: "qwen3moe", neox: true, qkNorm: true, routings: []string{archspec.RoutingSoftmaxTopK, archspec.RoutingSoftmaxTopKNorm}},
	"gemma3_text": {name: "gemma3", neox: true, qkNorm: true, postNorms: true, sliding: true, gelu: true, embScale: true},
	"gemma4_text": {name: "gemma4", neox: true, qkNorm: true, postNorms: true, sliding: true, gelu: true, embScale: true, gemma4: true,
		routings: []string{archspec.RoutingSoftmaxTopKNorm}},
}

// archOf picks the llama.cpp architecture of a model: by its family name,
// else llama for any other PreNorm file (the pipeline-native llama-shaped
// fixtures), which Supported then checks feature by feature.
func archOf(m *cflowfmt.Model) *arch {
	if m.Meta != nil {
		if a, ok := archs[m.Meta.String(cflowfmt.KeyArchitecture, "")]; ok {
			return a
		}
	}
	return archs["llama"]
}

// Notes lists where llama.cpp will compute something else than cflow on
// purpose (HF_FAMILIES.md, "llama.cpp departs"), so the CLI can say so:
// a cross-check must allow for each.
func Notes(m *cflowfmt.Model) []string {
	a, h, md := archOf(m), &m.Header, m.Meta
	var out []string
	if a.name == "llama" && h.SlidingWindow != 0 {
		out = append(out, fmt.Sprintf("llama.cpp's llama graph has no sliding window: it attends to every position, cflow to the last %d (equal within the window)", h.SlidingWindow))
	}
	if a.embScale && md.String(cflowfmt.KeyFeatures, "") != "" && strings.Contains(md.String(cflowfmt.KeyFeatures, ""), archspec.FeatEmbedScale) {
		out = append(out, fmt.Sprintf("llama.cpp scales the embedding by √d = %g in f32; cflow by %g (√d rounded to the checkpoint's dtype, as transformers)", sqrtf(float32(h.HiddenSize)), md.F32(cflowfmt.KeyEmbedScale, 0)))
	}
	if a.gelu {
		out = append(out, "llama.cpp's CPU GeLU uses an f16 lookup table: logits differ by ~1e-3 relative")
	}
	if a.gemma4 && m.Header.NumExperts > 0 {
		out = append(out, "llama.cpp applies router.scale and d^-1/2 in its own order (cflow stores their product): router logits differ in the last bits")
	}
	if s := md.F32(cflowfmt.KeyAttnScale, 0); s != 0 && a.name == "gemma3" {
		out = append(out, fmt.Sprintf("llama.cpp's gemma3 fixes the attention scale at head_dim^-1/2 = %g (27B: (d/H)^-1/2); the file's query_pre_attn_scalar gives %g", 1/sqrtf(float32(h.HeadDim)), s))
	}
	if md.String(cflowfmt.KeyMoERouting, "") == archspec.RoutingSoftmaxTopK {
		out = append(out, "llama.cpp's qwen3moe always renormalises the top-k weights; this file does not (norm_topk_prob false)")
	}
	return out
}

// checkArch refuses what the architecture cannot carry: a feature or
// layout llama.cpp would silently compute differently.
func checkArch(m *cflowfmt.Model, a *arch) error {
	h, md := &m.Header, m.Meta
	bad := func(format string, args ...any) error {
		return fmt.Errorf("gguf: cannot export as %s: "+format, append([]any{a.name}, args...)...)
	}
	feats, err := cflowfmt.Features(h, md)
	if err != nil {
		return bad("%v", err)
	}
	allowed := map[string]bool{
		archspec.FeatBias: a.biases, archspec.FeatQKNorm: a.qkNorm, archspec.FeatPostNorms: a.postNorms,
		archspec.FeatEmbedScale: a.embScale, archspec.FeatAttnScale: a.name == "gemma3" || a.gemma4,
		archspec.FeatRopeScaling: !a.gemma4, archspec.FeatMoERouting: len(a.routings) > 0,
		archspec.FeatKVHeadsPerKind: a.gemma4, archspec.FeatMoEInputs: a.gemma4, archspec.FeatExpertScale: a.gemma4,
		archspec.FeatFFNSumNorm: a.gemma4, archspec.FeatLayerScalar: a.gemma4,
	}
	for f := range feats {
		if !allowed[f] {
			return bad("feature %q has no %s equivalent", f, a.name)
		}
	}
	if flags := h.FeatureFlags &^ (cflowfmt.FlagTiedEmbed | cflowfmt.FlagFeatures); a.gemma4 {
		if flags != cflowfmt.FlagGELU|cflowfmt.FlagEmbedScale|cflowfmt.FlagVNorm {
			return bad("feature flags %#x: gemma4 is GeLU with the embedding scale and the V-norm", h.FeatureFlags)
		}
		if s := md.F32(cflowfmt.KeyAttnScale, 1); s != 1 {
			return bad("attention scale %v (llama.cpp's gemma4 uses 1)", s)
		}
		return nil
	} else if a.gelu {
		if flags != cflowfmt.FlagGELU|cflowfmt.FlagEmbedScale {
			return bad("feature flags %#x: %s is GeLU with the embedding scale", h.FeatureFlags, a.name)
		}
	} else if flags != 0 {
		return bad("feature flags %#x (embedding scale, V-norm and GELU have no %s equivalent)", flags, a.name)
	}
	if h.GlobalHeadDim != 0 && h.GlobalHeadDim != h.HeadDim {
		return bad("mixed head dims %d/%d", h.HeadDim, h.GlobalHeadDim)
	}
	if h.FinalLogitSoftcap != 0 && a.name != "gemma3" {
		return bad("final logit soft-cap %g", h.FinalLogitSoftcap)
	}
	if md.String(cflowfmt.KeyRopeScaling, "") == "llama3" && a.neox {
		return bad("llama3 rope scaling (llama.cpp reads its factors on llama only)")
	}
	kinds := md.Bytes(cflowfmt.KeyLayerKinds)
	if a.sliding {
		if _, err := swaPeriod(kinds); err != nil {
			return bad("%v", err)
		}
	} else if kinds != nil && a.name != "llama" {
		return bad("sliding-window layers")
	} else if kinds != nil {
		// llama: only Mistral's window on every layer, which Notes states.
		for _, k := range kinds {
			if k != archspec.LayerSliding {
				return bad("a mix of sliding and full layers")
			}
		}
	}
	if md.F32(cflowfmt.KeyRopeThetaGlobal, 0) != 0 && !a.sliding {
		if kinds == nil || md.F32(cflowfmt.KeyRopeThetaGlobal, 0) != md.F32(cflowfmt.KeyRopeTheta, 10000) {
			// a global θ only matters for full layers of mixed models
			for _, k := range kinds {
				if k == archspec.LayerFull {
					return bad("per-layer-kind RoPE bases")
				}
			}
		}
	}
	return nil
}

// swaPeriod is llama.cpp's sliding_window_pattern: layer i slides unless
// (i+1) % period == 0. Kinds that follow no such period cannot be stated.
func swaPeriod(kinds []byte) (int, error) {
	if kinds == nil {
		return 0, fmt.Errorf("no layer kinds")
	}
	period := len(kinds) + 1 // every layer sliding
	for i, k := range kinds {
		if k == archspec.LayerFull {
			period = i + 1
			break
		}
	}
	for i, k := range kinds {
		want := byte(archspec.LayerSliding)
		if (i+1)%period == 0 {
			want = archspec.LayerFull
		}
		if k != want {
			return 0, fmt.Errorf("layer kinds %v follow no sliding_window_pattern (llama.cpp: layer i is full iff (i+1) %% pattern == 0)", kinds)
		}
	}
	return period, nil
}

func sqrtf(x float32) float32 { return float32(math.Sqrt(float64(x))) }
