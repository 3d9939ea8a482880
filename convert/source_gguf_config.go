package convert

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/cflow-dev/cflow/gguf"
)

// ggufHyper is the ARCH.* keys a config is made of; each is read once
// and every other ARCH.* key is refused by name, as an unknown config.json
// key that changes the computation is.
type ggufHyper struct {
	f     *gguf.File
	arch  string
	taken map[string]bool
}

func (h *ggufHyper) key(k string) string { h.taken[h.arch+"."+k] = true; return h.arch + "." + k }

func (h *ggufHyper) int(k string, def int64, required bool) (int64, error) {
	key := h.key(k)
	if required && h.f.Lookup(key) == nil {
		return 0, fmt.Errorf("gguf: %s is missing", key)
	}
	return h.f.IntOr(key, def)
}

func (h *ggufHyper) float(k string, def float64) (float64, error) { return h.f.FloatOr(h.key(k), def) }

// ggufConfig synthesizes the config.json the family reads from the ARCH.*
// keys, with llama.cpp's defaults (src/llama-model.cpp and the
// architecture's src/models/ARCH.cpp) where a key is absent.
func (s *source) ggufConfig(f *gguf.File) error {
	archName, err := f.StringOr("general.architecture", "")
	if err != nil {
		return err
	}
	a, ok := ggufArchs[archName]
	if !ok {
		return fmt.Errorf("gguf: general.architecture %q is not imported (cflow imports llama, qwen2, qwen3, qwen3moe, gemma3, gemma4)", archName)
	}
	if archName == "llama" && f.Lookup("llama.expert_count") != nil {
		a = ggufMixtral
	}
	h := &ggufHyper{f: f, arch: archName, taken: map[string]bool{}}
	cfg := map[string]any{"architectures": []string{a.hfArch}, "model_type": a.modelType, "hidden_act": "silu", "torch_dtype": "float32"}
	for _, k := range []struct {
		gguf, hf string
		req      bool
	}{
		{"embedding_length", "hidden_size", true}, {"feed_forward_length", "intermediate_size", true},
		{"block_count", "num_hidden_layers", true}, {"attention.head_count", "num_attention_heads", true},
		{"context_length", "max_position_embeddings", false},
	} {
		v, err := h.int(k.gguf, 0, k.req)
		if err != nil {
			return err
		}
		if v > 0 {
			cfg[k.hf] = v
		}
	}
	heads := cfg["num_attention_heads"].(int64)
	kv := heads // gemma4: per layer (gemma4Keys)
	if archName != "gemma4" {
		if kv, err = h.int("attention.head_count_kv", heads, false); err != nil {
			return err
		}
	}
	cfg["num_key_value_heads"] = kv
	if heads <= 0 || kv <= 0 || cfg["hidden_size"].(int64)%heads != 0 {
		return fmt.Errorf("gguf: %d heads, %d KV heads for a width of %d", heads, kv, cfg["hidden_size"])
	}
	hd := cfg["hidden_size"].(int64) / heads
	kl, err := h.int("attention.key_length", hd, false)
	if err != nil {
		return err
	}
	vl, err := h.int("attention.value_length", kl, false)
	if err != nil {
		return err
	}
	if kl != vl {
		return fmt.Errorf("gguf: %s %d differs from %s %d, which cflow does not implement", h.key("attention.key_length"), kl, h.key("attention.value_length"), vl)
	}
	if kl != hd || archName == "qwen3" || archName == "gemma3" || archName == "gemma4" {
		cfg["head_dim"] = kl
	}
	rot, err := h.int("rope.dimension_count", kl, false)
	if err != nil {
		return err
	}
	if rot != kl {
		return fmt.Errorf("gguf: %s %d rotates part of a head of %d, which cflow does not implement", h.key("rope.dimension_count"), rot, kl)
	}
	eps, err := h.float("attention.layer_norm_rms_epsilon", 0)
	if err != nil {
		return err
	}
	if eps <= 0 {
		return fmt.Errorf("gguf: %s is missing", h.key("attention.layer_norm_rms_epsilon"))
	}
	cfg["rms_norm_eps"] = eps
	theta, err := h.float("rope.freq_base", 10000)
	if err != nil {
		return err
	}
	cfg["rope_theta"] = theta
	if err := ggufRopeConfig(h, cfg, theta, int(kl)); err != nil {
		return err
	}
	if v, err := h.int("vocab_size", 0, false); err != nil {
		return err
	} else if v > 0 {
		cfg["vocab_size"] = v
	}
	emb, ok := f.Tensor("token_embd.weight")
	if !ok || len(emb.Dims) != 2 {
		return fmt.Errorf("gguf: no 2-D token_embd.weight")
	}
	if v, ok := cfg["vocab_size"]; ok && uint64(v.(int64)) != emb.Dims[1] {
		return fmt.Errorf("gguf: %s %d, but token_embd.weight has %d rows", h.key("vocab_size"), v, emb.Dims[1])
	}
	cfg["vocab_size"] = emb.Dims[1]
	_, hasOutput := f.Tensor("output.weight")
	cfg["tie_word_embeddings"] = !hasOutput
	if archName == "llama" {
		_, bias := f.Tensor("blk.0.attn_q.bias")
		_, mlpBias := f.Tensor("blk.0.ffn_up.bias")
		cfg["attention_bias"], cfg["mlp_bias"] = bias, mlpBias
	}
	if archName == "qwen2" || archName == "qwen3" || archName == "qwen3moe" {
		cfg["use_sliding_window"] = false
	}
	if a.keys != nil {
		if err := a.keys(h, cfg); err != nil {
			return err
		}
	}
	for _, k := range []struct{ gguf, hf string }{{"tokenizer.ggml.bos_token_id", "bos_token_id"}, {"tokenizer.ggml.eos_token_id", "eos_token_id"}} {
		if kv := f.Lookup(k.gguf); kv != nil {
			id, err := kv.Int()
			if err != nil {
				return err
			}
			cfg[k.hf] = id
		}
	}
	// general.name is the model's name, which convert stores as the
	// checkpoint's hub id.
	if name, err := f.StringOr("general.name", ""); err != nil {
		return err
	} else if name != "" && !strings.ContainsAny(name, "/\\") {
		cfg["_name_or_path"] = name
	}
	for _, kv := range f.KVs {
		if strings.HasPrefix(kv.Key, archName+".") && !h.taken[kv.Key] {
			return fmt.Errorf("gguf: metadata %s is not implemented (it may change the computation)", kv.Key)
		}
	}
	js, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	s.config = configDoc{file: s.path + " (ARCH.* keys)", json: js}
	s.ggufArch = a
	s.ggufHeads, s.ggufKVHeads, s.ggufHeadDim = int(heads), int(kv), int(kl)
	return nil
}

// qwen3moeKeys: the expert bank's sizes; llama.cpp's qwen3moe always
// renormalizes the top-k weights.
func qwen3moeKeys(h *ggufHyper, cfg map[string]any) error {
	if err := ggufExpertKeys(h, cfg, "num_experts", true); err != nil {
		return err
	}
	cfg["norm_topk_prob"], cfg["decoder_sparse_step"], cfg["mlp_only_layers"] = true, 1, []int{}
	if sc, err := h.float("expert_weights_scale", 1); err != nil {
		return err
	} else if sc != 1 {
		return fmt.Errorf("gguf: %s %g is not implemented", h.key("expert_weights_scale"), sc)
	}
	return nil
}

// mixtralKeys: llama with experts, whose feed_forward_length is the
// experts' width (Mixtral's intermediate_size).
func mixtralKeys(h *ggufHyper, cfg map[string]any) error {
	return ggufExpertKeys(h, cfg, "num_local_experts", false)
}

func ggufExpertKeys(h *ggufHyper, cfg map[string]any, experts string, width bool) error {
	keys := []struct{ gguf, hf string }{{"expert_count", experts}, {"expert_used_count", "num_experts_per_tok"}}
	if width {
		keys = append(keys, struct{ gguf, hf string }{"expert_feed_forward_length", "moe_intermediate_size"})
	}
	for _, k := range keys {
		v, err := h.int(k.gguf, 0, true)
		if err != nil {
			return err
		}
		cfg[k.hf] = v
	}
	return nil
}

// gemma3Keys: what llama.cpp's gemma3 reads (src/models/gemma3.cpp): a
// sliding window with sliding_window_pattern (default 6) and the sliding
// layers' own unscaled base (default 10000), or no window at all; the
// attention scale fixed at key_length^-1/2 (27B, 62 layers: (d/H)^-1/2);
// the embedding scaled by √d in f32; GeLU-tanh.
func gemma3Keys(h *ggufHyper, cfg map[string]any) error {
	delete(cfg, "hidden_act")
	cfg["hidden_activation"] = "gelu_pytorch_tanh"
	cfg["torch_dtype"] = "float32" // √d unrounded, as llama.cpp's f32 scale
	cfg["attention_bias"] = false
	qs := cfg["head_dim"].(int64)
	if cfg["num_hidden_layers"].(int64) == 62 {
		qs = cfg["hidden_size"].(int64) / cfg["num_attention_heads"].(int64)
	}
	cfg["query_pre_attn_scalar"] = qs
	w, err := h.int("attention.sliding_window", 0, false)
	if err != nil {
		return err
	}
	if w > 0 {
		cfg["sliding_window"] = w
		p, err := h.int("attention.sliding_window_pattern", 6, false)
		if err != nil {
			return fmt.Errorf("%w (cflow reads gemma3's pattern as one period)", err)
		}
		cfg["sliding_window_pattern"] = p
		local, err := h.float("rope.freq_base_swa", 10000)
		if err != nil {
			return err
		}
		cfg["rope_local_base_freq"] = local
	} else {
		kinds := make([]string, cfg["num_hidden_layers"].(int64))
		for i := range kinds {
			kinds[i] = "full_attention"
		}
		cfg["layer_types"] = kinds
	}
	if c, err := h.float("final_logit_softcapping", 0); err != nil {
		return err
	} else if c != 0 {
		cfg["final_logit_softcapping"] = c
	}
	return nil
}
