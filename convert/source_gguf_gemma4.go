package convert

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/cflow-dev/cflow/gguf"
)

// gemma4Keys: what llama.cpp's gemma4 reads (src/models/gemma4.cpp) as
// Gemma4TextConfig: per-layer SWA flags (bool array) as layer_types, the
// per-layer KV head counts as one count per layer kind, key_length for
// full layers and key_length_swa for sliding ones, full layers without
// attn_v as attention_k_eq_v, the full layers' proportional RoPE from
// rope_freqs (factor 1 on the rotated pairs, 1e30 on the others:
// partial_rotary_factor), the MoE beside the MLP from expert_count. The
// embedding scale is √d in f32, as llama.cpp computes it. Per-layer
// inputs and shared KV layers are refused.
func gemma4Keys(h *ggufHyper, cfg map[string]any) error {
	L := int(cfg["num_hidden_layers"].(int64))
	delete(cfg, "hidden_act")
	delete(cfg, "rope_theta")
	cfg["hidden_activation"] = "gelu_pytorch_tanh"
	cfg["torch_dtype"], cfg["dtype"] = "float32", "float32"
	cfg["attention_bias"], cfg["use_double_wide_mlp"] = false, false
	for _, k := range []string{"attention.shared_kv_layers", "embedding_length_per_layer_input"} {
		if v, err := h.int(k, 0, false); err != nil {
			return err
		} else if v != 0 {
			return fmt.Errorf("gguf: %s %d is not implemented (cflow's gemma4 has no shared KV layers and no per-layer inputs)", h.key(k), v)
		}
	}
	cfg["num_kv_shared_layers"], cfg["hidden_size_per_layer_input"] = 0, 0
	swa := make([]bool, L)
	if kv := h.f.Lookup(h.key("attention.sliding_window_pattern")); kv != nil {
		b, ok := kv.Value.Any().([]bool)
		if !ok || len(b) != L {
			return fmt.Errorf("gguf: %s is %s, want one bool per layer", kv.Key, kv.Value.TypeName())
		}
		swa = b
	}
	if swa[L-1] {
		return fmt.Errorf("gguf: %s makes the last layer sliding, which Gemma 4 (and cflow) never does", h.key("attention.sliding_window_pattern"))
	}
	kinds := make([]string, L)
	for i, s := range swa {
		kinds[i] = "full_attention"
		if s {
			kinds[i] = "sliding_attention"
		}
	}
	cfg["layer_types"] = kinds
	heads := make([]int64, L)
	kvKey := h.key("attention.head_count_kv")
	if kv := h.f.Lookup(kvKey); kv == nil {
		for i := range heads {
			heads[i] = cfg["num_attention_heads"].(int64)
		}
	} else if n, err := kv.Int(); err == nil {
		for i := range heads {
			heads[i] = n
		}
	} else if heads, err = kv.Ints(); err != nil || len(heads) != L {
		return fmt.Errorf("gguf: %s is %s, want a count or one per layer", kvKey, kv.Value.TypeName())
	}
	byKind := map[bool]int64{}
	for i, n := range heads {
		if prev, ok := byKind[swa[i]]; ok && prev != n {
			return fmt.Errorf("gguf: %s gives layers of one kind %d and %d KV heads, which cflow does not implement", kvKey, prev, n)
		}
		byKind[swa[i]] = n
	}
	full := cfg["head_dim"].(int64)
	cfg["global_head_dim"] = full
	sw, err := h.int("attention.key_length_swa", full, false)
	if err != nil {
		return err
	}
	for _, k := range []struct {
		key  string
		want int64
	}{{"attention.value_length_swa", sw}, {"rope.dimension_count_swa", sw}} {
		if v, err := h.int(k.key, k.want, false); err != nil {
			return err
		} else if v != k.want {
			return fmt.Errorf("gguf: %s %d differs from %d, which cflow does not implement", h.key(k.key), v, k.want)
		}
	}
	cfg["head_dim"] = sw
	if n, ok := byKind[true]; ok {
		cfg["num_key_value_heads"] = n
	} else {
		cfg["num_key_value_heads"] = byKind[false]
	}
	cfg["num_global_key_value_heads"] = byKind[false]
	keqv, err := gemma4KEqV(h.f, swa)
	if err != nil {
		return err
	}
	cfg["attention_k_eq_v"] = keqv
	w, err := h.int("attention.sliding_window", 0, true)
	if err != nil {
		return err
	}
	cfg["sliding_window"] = w
	fullTheta, err := h.float("rope.freq_base", 10000)
	if err != nil {
		return err
	}
	swaTheta, err := h.float("rope.freq_base_swa", 10000)
	if err != nil {
		return err
	}
	partial, err := gemma4Partial(h.f, int(full))
	if err != nil {
		return err
	}
	cfg["rope_parameters"] = map[string]any{
		"full_attention":    map[string]any{"rope_type": "proportional", "partial_rotary_factor": partial, "rope_theta": fullTheta},
		"sliding_attention": map[string]any{"rope_type": "default", "rope_theta": swaTheta},
	}
	if c, err := h.float("final_logit_softcapping", 0); err != nil {
		return err
	} else if c != 0 {
		cfg["final_logit_softcapping"] = c
	}
	E, err := h.int("expert_count", 0, false)
	if err != nil {
		return err
	}
	cfg["enable_moe_block"] = E > 0
	if E > 0 {
		if err := ggufExpertKeys(h, cfg, "num_experts", true); err != nil {
			return err
		}
		cfg["top_k_experts"] = cfg["num_experts_per_tok"]
		delete(cfg, "num_experts_per_tok")
	}
	return nil
}

// gemma4KEqV: full layers without attn_v (V is K's projection) in every
// full layer, or in none.
func gemma4KEqV(f *gguf.File, swa []bool) (bool, error) {
	seen := map[bool]bool{}
	for i, s := range swa {
		_, hasV := f.Tensor(fmt.Sprintf("blk.%d.attn_v.weight", i))
		if s && !hasV {
			return false, fmt.Errorf("gguf: sliding layer %d has no attn_v.weight", i)
		}
		if !s {
			seen[hasV] = true
		}
	}
	if len(seen) > 1 {
		return false, fmt.Errorf("gguf: some full layers have attn_v.weight and some do not, which cflow does not implement")
	}
	return seen[false], nil
}

// gemma4Partial reads rope_freqs (the full layers' pairs: factor 1 rotates,
// 1e30 holds the angle at 0) as partial_rotary_factor; no tensor: 1.
func gemma4Partial(f *gguf.File, full int) (float64, error) {
	ti, ok := f.Tensor(ggufRopeFreqs)
	if !ok {
		return 1, nil
	}
	if ti.Type != gguf.GGMLF32 || len(ti.Dims) != 1 || ti.Dims[0] != uint64(full/2) {
		return 0, fmt.Errorf("gguf: tensor %s is %s %v, want F32 [%d]", ggufRopeFreqs, ti.Type, ti.Dims, full/2)
	}
	data, err := f.TensorData(ti)
	if err != nil {
		return 0, err
	}
	n := 0
	for i := 0; i < full/2; i++ {
		v := math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
		switch {
		case v == 1 && n == i:
			n++
		case v >= 1e29 && n <= i:
		default:
			return 0, fmt.Errorf("gguf: tensor %s: factor %d is %g; cflow implements gemma4's proportional RoPE (1 on the first pairs, 1e30 on the rest)", ggufRopeFreqs, i, v)
		}
	}
	return float64(n) / float64(full/2), nil
}
