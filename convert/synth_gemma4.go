package convert

import (
	"fmt"
	"sort"
)

// Gemma4Geometry is a gemma4_text (Gemma 4 MoE) model size for synthetic
// checkpoints: sliding and full layers with their own head size and
// KV-head count (full layers K = V), every layer the dense MLP beside a
// routed expert bank, tied embeddings.
type Gemma4Geometry struct {
	Hidden, Layers, Heads, Vocab int
	// HeadDim and KVHeads are the sliding layers'; GlobalHeadDim and
	// GlobalKVHeads the full layers' (one K = V projection).
	HeadDim, KVHeads             int
	GlobalHeadDim, GlobalKVHeads int
	FFN                          int // the dense MLP beside the experts
	Experts, TopK, ExpertFFN     int
	SlidingWindow                int
}

// gemma4Geometries are the gemma4_text sizes `cflowc dev synth --geometry`
// accepts. "gemma4_26b_a4b_6l" is docs/PERFORMANCE.md's Gemma 4 benchmark:
// every per-layer shape of the real 26B-A4B (transformers'
// convert_gemma4_weights.py variant gemma-4-26b-a4b, ../shared/spec/
// GEMMA4.md; the vocabulary is its 262,144-token tokenizer) but 6 of its 30
// layers, one period of its 5 sliding : 1 full pattern, so the f16
// checkpoint (~11 GB) and the Q4_0 files (~3.3 GB each) fit a 24 GiB
// machine. "gemma4_tiny" has the same structure at test size.
var gemma4Geometries = map[string]Gemma4Geometry{
	"gemma4_26b_a4b_6l": {Hidden: 2816, Layers: 6, Heads: 16, Vocab: 262144, HeadDim: 256, KVHeads: 8,
		GlobalHeadDim: 512, GlobalKVHeads: 2, FFN: 2112, Experts: 128, TopK: 8, ExpertFFN: 704, SlidingWindow: 1024},
	"gemma4_tiny": {Hidden: 64, Layers: 6, Heads: 4, Vocab: 512, HeadDim: 16, KVHeads: 2,
		GlobalHeadDim: 32, GlobalKVHeads: 1, FFN: 96, Experts: 16, TopK: 4, ExpertFFN: 32, SlidingWindow: 8},
}

// Gemma4GeometryByName looks up a gemma4_text size `cflowc dev synth
// --geometry` accepts (Gemma4GeometryNames lists them).
func Gemma4GeometryByName(name string) (Gemma4Geometry, bool) {
	g, ok := gemma4Geometries[name]
	return g, ok
}

// Gemma4GeometryNames lists the gemma4_text geometries' names for help text.
func Gemma4GeometryNames() []string {
	var out []string
	for k := range gemma4Geometries {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// LayerFull reports whether layer l is full attention: transformers'
// default pattern (every sixth layer) with the last layer forced full.
func (g Gemma4Geometry) LayerFull(l int) bool {
	return (l+1)%6 == 0 || l == g.Layers-1
}

func (g Gemma4Geometry) check() error {
	pos := []int{g.Hidden, g.Layers, g.Heads, g.Vocab, g.HeadDim, g.KVHeads, g.GlobalHeadDim, g.GlobalKVHeads,
		g.FFN, g.Experts, g.TopK, g.ExpertFFN, g.SlidingWindow}
	for _, v := range pos {
		if v <= 0 {
			return fmt.Errorf("synth: bad gemma4 geometry %+v", g)
		}
	}
	if g.Heads%g.KVHeads != 0 || g.Heads%g.GlobalKVHeads != 0 || g.TopK > g.Experts || g.Experts > 255 {
		return fmt.Errorf("synth: bad gemma4 geometry %+v (heads must divide by both KV-head counts, top-k ≤ experts ≤ 255)", g)
	}
	return nil
}

// Gemma4SynthTensors lists the tensors SynthesizeGemma4 writes for g, in
// the real checkpoint's names and shapes (fused expert banks included),
// each filled lazily from its seed: tests read the shapes without writing
// gigabytes.
func Gemma4SynthTensors(g Gemma4Geometry, dtype string, seed uint64) ([]STTensor, error) {
	if err := g.check(); err != nil {
		return nil, err
	}
	dt, err := synthDType(dtype)
	if err != nil {
		return nil, err
	}
	var ts []STTensor
	add := func(name string, norm bool, shape ...int) {
		ts = append(ts, randomTensor(name, dt, seed, norm, shape...))
	}
	d, H := g.Hidden, g.Heads
	add("model.embed_tokens.weight", false, g.Vocab, d)
	for l := 0; l < g.Layers; l++ {
		p := fmt.Sprintf("model.layers.%d.", l)
		hd, kv := g.HeadDim, g.KVHeads
		if g.LayerFull(l) {
			hd, kv = g.GlobalHeadDim, g.GlobalKVHeads
		}
		for _, n := range []string{"input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
			"post_feedforward_layernorm", "pre_feedforward_layernorm_2", "post_feedforward_layernorm_1", "post_feedforward_layernorm_2"} {
			add(p+n+".weight", true, d)
		}
		add(p+"self_attn.q_proj.weight", false, H*hd, d)
		add(p+"self_attn.k_proj.weight", false, kv*hd, d)
		if !g.LayerFull(l) { // full layers: V is the k_proj output
			add(p+"self_attn.v_proj.weight", false, kv*hd, d)
		}
		add(p+"self_attn.o_proj.weight", false, d, H*hd)
		add(p+"self_attn.q_norm.weight", true, hd)
		add(p+"self_attn.k_norm.weight", true, hd)
		add(p+"mlp.gate_proj.weight", false, g.FFN, d)
		add(p+"mlp.up_proj.weight", false, g.FFN, d)
		add(p+"mlp.down_proj.weight", false, d, g.FFN)
		add(p+"router.proj.weight", false, g.Experts, d)
		add(p+"router.scale", true, d)
		add(p+"router.per_expert_scale", true, g.Experts)
		add(p+"experts.gate_up_proj", false, g.Experts, 2*g.ExpertFFN, d)
		add(p+"experts.down_proj", false, g.Experts, d, g.ExpertFFN)
		add(p+"layer_scalar", true, 1)
	}
	add("model.norm.weight", true, d)
	return ts, nil
}

// SynthesizeGemma4 writes config.json and seeded random weights for a
// text-only Gemma4ForCausalLM (gemma4_text, tied embeddings, MoE on every
// layer) into dir, with Synthesize's value recipe: norms, scales and the
// layer scalar drawn in [1, 2), matrices ±[2^-7, 2^-3). o.Geometry is
// ignored; g sets the size. It exercises conversion and decode throughput
// on the real shapes, not model quality.
func SynthesizeGemma4(dir string, g Gemma4Geometry, o SynthOptions) error {
	ts, err := Gemma4SynthTensors(g, o.DType, o.Seed)
	if err != nil {
		return err
	}
	withProgress(ts, o.Progress)
	types := make([]string, g.Layers)
	for l := range types {
		types[l] = map[bool]string{false: "sliding_attention", true: "full_attention"}[g.LayerFull(l)]
	}
	cfg := map[string]any{
		"architectures": []string{"Gemma4ForCausalLM"}, "model_type": "gemma4_text",
		"hidden_size": g.Hidden, "num_hidden_layers": g.Layers, "num_attention_heads": g.Heads,
		"head_dim": g.HeadDim, "num_key_value_heads": g.KVHeads,
		"global_head_dim": g.GlobalHeadDim, "num_global_key_value_heads": g.GlobalKVHeads, "attention_k_eq_v": true,
		"intermediate_size": g.FFN, "enable_moe_block": true, "num_experts": g.Experts, "top_k_experts": g.TopK,
		"moe_intermediate_size": g.ExpertFFN, "layer_types": types, "sliding_window": g.SlidingWindow,
		"rope_parameters": map[string]any{
			"sliding_attention": map[string]any{"rope_type": "default", "rope_theta": 10000.0},
			"full_attention":    map[string]any{"rope_type": "proportional", "partial_rotary_factor": 0.25, "rope_theta": 1000000.0},
		},
		"vocab_size": g.Vocab, "rms_norm_eps": 1e-6, "hidden_activation": "gelu_pytorch_tanh",
		"final_logit_softcapping": 30.0, "tie_word_embeddings": true, "hidden_size_per_layer_input": 0,
		"num_kv_shared_layers": 0, "use_double_wide_mlp": false, "use_bidirectional_attention": "vision",
		"attention_bias": false, "max_position_embeddings": 262144, "bos_token_id": 2, "eos_token_id": 1, "pad_token_id": 0,
		"dtype":         map[string]string{"F16": "float16", "BF16": "bfloat16", "F32": "float32"}[ts[0].DType],
		"_name_or_path": fmt.Sprintf("synthetic-gemma4_text-seed%d", o.Seed),
	}
	return writeCheckpoint(dir, cfg, ts, o.Shards)
}
