package archspec

import (
	"fmt"
	"strings"
)

// Computation features of the Hugging Face families (docs/FORMAT.md,
// "Feature list"). A file that uses any of them sets cflowfmt.FlagFeatures
// and lists them, comma-separated, under cflowfmt.KeyFeatures; the values they need live in the
// metadata keys named beside each. A reader that does not know a listed
// feature must refuse the file: each one changes the computation.
const (
	// FeatBias: per-layer bias vectors LayerKey(l, VecQBias …) added after
	// the projections that have one.
	FeatBias = "bias"
	// FeatQKNorm: per-head RMSNorm of q and k (weights VecQNorm, VecKNorm,
	// head_dim values, already (1+w) for Gemma) after the projection and
	// before RoPE.
	FeatQKNorm = "qk_norm"
	// FeatPostNorms: RMSNorm of the attention output (VecPostAttnNorm) and of
	// the FFN output (VecPostFFNNorm) before each joins the residual.
	FeatPostNorms = "post_norms"
	// FeatAttnScale: attention logits are scaled by KeyAttnScale instead of
	// head_dim^-1/2.
	FeatAttnScale = "attn_scale"
	// FeatEmbedScale: FlagEmbedScale multiplies by KeyEmbedScale (√d rounded
	// to the checkpoint's dtype) instead of √d in f32.
	FeatEmbedScale = "embed_scale"
	// FeatRopeScaling: full-attention layers' inverse frequencies are scaled
	// per KeyRopeScaling ("linear" or "llama3") and its parameters.
	FeatRopeScaling = "rope_scaling"
	// FeatMoERouting: KeyMoERouting picks how router logits become expert
	// weights (softmax over all experts, then top-k, renormalised or not).
	FeatMoERouting = "moe_routing"
	// FeatKVHeadsPerKind: full-attention layers have KeyGlobalKVHeads KV
	// heads (Gemma 4's num_global_key_value_heads), sliding ones the
	// header's.
	FeatKVHeadsPerKind = "kv_heads_per_kind"
	// FeatMoEInputs: the router reads rms(x) ⊙ VecRouterInScale and the
	// experts rms(x) ⊙ VecExpertInNorm, both of the residual the FFN reads,
	// instead of the FFN's normalized input (Gemma 4).
	FeatMoEInputs = "moe_inputs"
	// FeatExpertScale: each selected expert's weight is multiplied by
	// VecExpertScale[e] (Gemma 4's per_expert_scale).
	FeatExpertScale = "expert_scale"
	// FeatFFNSumNorm: the MoE output is normed by VecPostMoENorm, the dense
	// FFN's (post-normed) and MoE's outputs are summed and normed by
	// VecFFNSumNorm before joining the residual (Gemma 4).
	FeatFFNSumNorm = "ffn_sum_norm"
	// FeatLayerScalar: x_out of layer l is multiplied by VecLayerScalar[0].
	FeatLayerScalar = "layer_scalar"
)

// KnownFeatures is every feature this version implements (a fresh slice,
// so no caller can change what the readers accept).
func KnownFeatures() []string {
	return []string{FeatBias, FeatQKNorm, FeatPostNorms, FeatAttnScale, FeatEmbedScale, FeatRopeScaling, FeatMoERouting,
		FeatKVHeadsPerKind, FeatMoEInputs, FeatExpertScale, FeatFFNSumNorm, FeatLayerScalar}
}

// ParseFeatures reads a comma-separated feature list (a file's
// cflow.features), refusing a name this version does not implement: each
// feature changes the computation, so an unknown one cannot be skipped.
func ParseFeatures(list string) (map[string]bool, error) {
	out := map[string]bool{}
	for _, f := range strings.Split(list, ",") {
		known := false
		for _, k := range KnownFeatures() {
			known = known || k == f
		}
		if !known {
			return nil, fmt.Errorf("lists %q, which this version of cflow does not implement", f)
		}
		out[f] = true
	}
	return out, nil
}

// Router weighting rules of KeyMoERouting. Without the key, the weights are
// a softmax over the k selected logits (Mixtral, the pipeline-native MoE).
const (
	RoutingSoftmaxTopK     = "softmax_topk"      // softmax over all E, top-k, raw probabilities
	RoutingSoftmaxTopKNorm = "softmax_topk_norm" // softmax over all E, top-k, renormalised over the k
)

// Per-layer f32 vectors of FeatBias, FeatQKNorm and FeatPostNorms.
const (
	VecQBias         = "q_bias"
	VecKBias         = "k_bias"
	VecVBias         = "v_bias"
	VecOBias         = "o_bias"
	VecGateBias      = "gate_bias"
	VecUpBias        = "up_bias"
	VecDownBias      = "down_bias"
	VecQNorm         = "q_norm"
	VecKNorm         = "k_norm"
	VecPostAttnNorm  = "post_attn_norm"
	VecPostFFNNorm   = "post_ffn_norm"
	VecRouterInScale = "router_in_scale"
	VecExpertInNorm  = "expert_in_norm"
	VecExpertScale   = "expert_scale"
	VecPostMoENorm   = "post_moe_norm"
	VecFFNSumNorm    = "ffn_sum_norm"
	VecLayerScalar   = "layer_scalar"
)
