package gguf

import (
	"math"

	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/cflowfmt"
)

// gemma4Keys writes what llama.cpp's gemma4 reads per layer kind
// (conversion/gemma.py, Gemma4Model): full layers' head size as
// key_length and rope.dimension_count (proportional RoPE runs through
// rope_freqs over the whole head), sliding layers' as the *_swa keys, the
// KV heads and SWA flags as per-layer arrays.
func gemma4Keys(l *kvList, p string, h *cflowfmt.Header, md *cflowfmt.Metadata) {
	kinds := md.Bytes(cflowfmt.KeyLayerKinds)
	full, swa := uint32(h.Geometry(md).HeadDimFor(true)), uint32(h.HeadDim)
	kv := make([]int32, h.NumLayers)
	isSWA := make([]bool, h.NumLayers)
	for i := range kv {
		isSWA[i] = kinds != nil && kinds[i] == archspec.LayerSliding
		kv[i] = int32(h.Geometry(md).KVHeads(!isSWA[i]))
	}
	l.i32s(p+"attention.head_count_kv", kv)
	l.bools(p+"attention.sliding_window_pattern", isSWA)
	l.u32(p+"attention.key_length", full)
	l.u32(p+"attention.value_length", full)
	l.u32(p+"attention.key_length_swa", swa)
	l.u32(p+"attention.value_length_swa", swa)
	l.u32(p+"rope.dimension_count", full)
	l.u32(p+"rope.dimension_count_swa", swa)
	l.u32(p+"attention.shared_kv_layers", 0)
	l.u32(p+"embedding_length_per_layer_input", 0)
}

// gemma4RopeFreqs is llama.cpp's rope_freqs for the full layers'
// proportional RoPE: factor 1 on the rotated pairs, 1e30 (angle 0) on the
// pass-through ones.
func gemma4RopeFreqs(h *cflowfmt.Header, md *cflowfmt.Metadata) []float32 {
	g := h.Geometry(md).HeadDimFor(true)
	n := int(md.F32(cflowfmt.KeyRopePartial, 1) * float32(g/2))
	out := make([]float32, g/2)
	for i := range out {
		out[i] = 1
		if i >= n {
			out[i] = 1e30
		}
	}
	return out
}

// gemma4Vectors are the per-layer vectors under llama.cpp's gemma4 names;
// the dense FFN's post-norm is post_ffw_norm when the layer has no MoE
// (then it is the only one), post_ffw_norm_1 beside the MoE.
func gemma4Vectors(moe bool) map[string]string {
	v := map[string]string{
		archspec.VecQNorm: "attn_q_norm.weight", archspec.VecKNorm: "attn_k_norm.weight",
		archspec.VecPostAttnNorm: "post_attention_norm.weight", archspec.VecLayerScalar: "layer_output_scale.weight",
		archspec.VecPostFFNNorm: "post_ffw_norm.weight",
	}
	if moe {
		v[archspec.VecPostFFNNorm] = "post_ffw_norm_1.weight"
		v[archspec.VecPostMoENorm] = "post_ffw_norm_2.weight"
		v[archspec.VecFFNSumNorm] = "post_ffw_norm.weight"
		v[archspec.VecExpertInNorm] = "pre_ffw_norm_2.weight"
		v[archspec.VecRouterInScale] = "ffn_gate_inp.scale"
		v[archspec.VecExpertScale] = "ffn_down_exps.scale"
	}
	return v
}

// gemma4Vector is one layer vector as llama.cpp wants it: router.scale
// without the d^-1/2 cflow folded in (llama.cpp applies it itself).
func gemma4Vector(h *cflowfmt.Header, role string, v []float32) []float32 {
	if role != archspec.VecRouterInScale {
		return v
	}
	out := make([]float32, len(v))
	s := float32(math.Sqrt(float64(h.HiddenSize)))
	for i, x := range v {
		out[i] = x * s
	}
	return out
}
