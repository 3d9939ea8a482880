package cflowfmt

import (
	"fmt"
	"strings"
)

// Computation features of the Hugging Face families (docs/FORMAT.md,
// "Feature list"). A file that uses any of them sets FlagFeatures and lists
// them, comma-separated, under KeyFeatures; the values they need live in the
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

// Metadata keys of the features above.
const (
	KeyFeatures            = "cflow.features"        // string: comma-separated feature names
	KeyAttnScale           = "attn.scale"            // f32
	KeyEmbedScale          = "embed.scale"           // f32
	KeyRopeScaling         = "rope.scaling"          // string: linear, llama3
	KeyRopeScalingFactor   = "rope.scaling_factor"   // f32
	KeyRopeLowFreqFactor   = "rope.low_freq_factor"  // f32, llama3
	KeyRopeHighFreqFactor  = "rope.high_freq_factor" // f32, llama3
	KeyRopeOriginalContext = "rope.original_context" // u32, llama3
	KeyMoERouting          = "moe.routing"           // string: see RoutingSoftmaxTopK…
	KeyGlobalKVHeads       = "attn.global_kv_heads"  // u32, full layers' KV heads
	keyLayerPrefix         = "layer."                // layer.<l>.<vector>
)

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

// KVHeads is the KV-head count of a layer of the given kind: the
// header's, or KeyGlobalKVHeads on full layers when set.
func KVHeads(h *Header, md *Metadata, full bool) int {
	if full && md != nil {
		if n := md.U32(KeyGlobalKVHeads, 0); n > 0 {
			return int(n)
		}
	}
	return int(h.NumKVHeads)
}

// LayerKey is the metadata key of layer l's vector (an f32 array).
func LayerKey(l int, vec string) string { return fmt.Sprintf("%s%d.%s", keyLayerPrefix, l, vec) }

// Features returns the feature list of a file, refusing names this version
// does not implement. Without FlagFeatures it is empty.
func Features(h *Header, md *Metadata) (map[string]bool, error) {
	out := map[string]bool{}
	if !h.Has(FlagFeatures) {
		return out, nil
	}
	list := md.String(KeyFeatures, "")
	if list == "" {
		return nil, fmt.Errorf("feature flag %#x set but metadata %s is empty", FlagFeatures, KeyFeatures)
	}
	for _, f := range strings.Split(list, ",") {
		known := false
		for _, k := range KnownFeatures() {
			known = known || k == f
		}
		if !known {
			return nil, fmt.Errorf("%s lists %q, which this version of cflow does not implement", KeyFeatures, f)
		}
		out[f] = true
	}
	return out, nil
}

// featureKeyTypes are the types of the feature keys; a key of another type
// would be read as absent.
var featureKeyTypes = map[string]MetaType{
	KeyFeatures: MetaString, KeyAttnScale: MetaF32, KeyEmbedScale: MetaF32, KeyRopeScaling: MetaString,
	KeyRopeScalingFactor: MetaF32, KeyRopeLowFreqFactor: MetaF32, KeyRopeHighFreqFactor: MetaF32,
	KeyRopeOriginalContext: MetaU32, KeyMoERouting: MetaString, KeyGlobalKVHeads: MetaU32,
}

// checkFeatures is CheckMetadata's part for the features: a known feature
// list, typed keys, and per-layer vectors only as f32 arrays of layers
// that exist.
func checkFeatures(h *Header, md *Metadata) error {
	if _, err := Features(h, md); err != nil {
		return err
	}
	for key, want := range featureKeyTypes {
		if t, ok := md.Type(key); ok && t != want {
			return fmt.Errorf("metadata %s has type %d, want %d", key, t, want)
		}
	}
	if g, ok := md.Type(KeyGlobalKVHeads); ok && g == MetaU32 {
		n := md.U32(KeyGlobalKVHeads, 0)
		if n == 0 || n > uint32(h.NumKVHeads) || uint32(h.NumHeads)%n != 0 {
			return fmt.Errorf("metadata %s %d: want 1..%d dividing the %d query heads", KeyGlobalKVHeads, n, h.NumKVHeads, h.NumHeads)
		}
	}
	for _, k := range md.Keys() {
		rest, ok := strings.CutPrefix(k, keyLayerPrefix)
		if !ok {
			continue
		}
		var l int
		var vec string
		if n, err := fmt.Sscanf(strings.Replace(rest, ".", " ", 1), "%d %s", &l, &vec); n != 2 || err != nil || l < 0 || l >= int(h.NumLayers) {
			return fmt.Errorf("metadata %s: want layer.<0..%d>.<vector>", k, h.NumLayers-1)
		}
		if t, _ := md.Type(k); t != MetaF32s {
			return fmt.Errorf("metadata %s has type %d, want %d (f32 array)", k, t, MetaF32s)
		}
	}
	return nil
}
