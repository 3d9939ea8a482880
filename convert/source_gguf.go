package convert

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/cflow-dev/cflow/gguf"
	"github.com/cflow-dev/cflow/internal/fileio"
	"github.com/cflow-dev/cflow/quant"
)

// ggufArch is how one llama.cpp architecture maps back onto a Hugging Face
// one: the architectures/model_type config.json names, and whether the
// HF→GGUF converter permuted the q/k rows into adjacent-pair RoPE order
// (the llama architecture; NEOX ones keep HF's split-half order).
type ggufArch struct {
	hfArch, modelType string
	permuted          bool
}

// ggufArchs are the GGUF architectures cflow imports; any other is refused
// by name.
var ggufArchs = map[string]ggufArch{
	"llama": {"LlamaForCausalLM", "llama", true},
	"qwen2": {"Qwen2ForCausalLM", "qwen2", false},
	"qwen3": {"Qwen3ForCausalLM", "qwen3", false},
	// qwen3moe: llama.cpp's graph renormalizes the top-k weights after a
	// softmax (build_moe_ffn with norm_w), i.e. norm_topk_prob.
	"qwen3moe": {"Qwen3MoeForCausalLM", "qwen3_moe", false},
}

// ggufTensorNames map llama.cpp's per-layer tensor names (blk.N.X) back to
// Hugging Face's (model.layers.N.Y), and its global ones; a name not here
// is refused by name.
var ggufTensorNames = map[string]string{
	"attn_norm.weight":    "input_layernorm.weight",
	"attn_q.weight":       "self_attn.q_proj.weight",
	"attn_k.weight":       "self_attn.k_proj.weight",
	"attn_v.weight":       "self_attn.v_proj.weight",
	"attn_output.weight":  "self_attn.o_proj.weight",
	"attn_q.bias":         "self_attn.q_proj.bias",
	"attn_k.bias":         "self_attn.k_proj.bias",
	"attn_v.bias":         "self_attn.v_proj.bias",
	"attn_output.bias":    "self_attn.o_proj.bias",
	"attn_q_norm.weight":  "self_attn.q_norm.weight",
	"attn_k_norm.weight":  "self_attn.k_norm.weight",
	"ffn_norm.weight":     "post_attention_layernorm.weight",
	"ffn_gate.weight":     "mlp.gate_proj.weight",
	"ffn_up.weight":       "mlp.up_proj.weight",
	"ffn_down.weight":     "mlp.down_proj.weight",
	"ffn_gate_inp.weight": "mlp.gate.weight",
}

// ggufExpertNames are the stacked expert tensors (ne2 = experts), split
// into the expert bank's per-expert HF names.
var ggufExpertNames = map[string]string{
	"ffn_gate_exps.weight": "gate_proj.weight",
	"ffn_up_exps.weight":   "up_proj.weight",
	"ffn_down_exps.weight": "down_proj.weight",
}

var ggufGlobalNames = map[string]string{
	"token_embd.weight":  "model.embed_tokens.weight",
	"output_norm.weight": "model.norm.weight",
	"output.weight":      "lm_head.weight",
}

var ggufLayerName = regexp.MustCompile(`^blk\.(\d+)\.(.+)$`)

// ggufDtypes are the tensor types carried as they are; every other type
// is refused naming the tensor and the type.
var ggufDtypes = map[gguf.GGMLType]dtype{gguf.GGMLF32: dtF32, gguf.GGMLF16: dtF16, gguf.GGMLBF16: dtBF16,
	gguf.GGMLQ8_0: dtQ8_0, gguf.GGMLQ4_0: dtQ4_0}

// acceptsGGUF: a file that starts with GGUF's magic, whatever its name
// (ollama's blobs are sha256-HEX).
func acceptsGGUF(path string, st os.FileInfo) bool {
	return st != nil && st.Mode().IsRegular() && gguf.IsGGUF(path)
}

// openGGUF maps a GGUF and presents it as a Hugging Face checkpoint: its
// tensors under HF names (the llama architecture's q/k rows viewed back in
// split-half order through rowOf, lossless), a config.json synthesized from
// the ARCH.* keys, and the tokenizer its tokenizer.ggml keys describe.
func openGGUF(path string, mapped func(string)) (s *source, err error) {
	s = &source{path: path, tensors: map[string]*tensor{}}
	defer func() {
		if err != nil {
			s.close()
			s = nil
		}
	}()
	m, err := mapFile(path)
	if err != nil {
		return s, err
	}
	s.maps = append(s.maps, m)
	if mapped != nil {
		mapped(path)
	}
	var f *gguf.File
	err = fileio.GuardFaultIn(s.locate, func() (err error) {
		if f, err = gguf.Parse(m.data); err != nil {
			return err
		}
		if err = s.ggufConfig(f); err != nil {
			return err
		}
		if err = s.ggufTensors(f); err != nil {
			return err
		}
		s.tokenizer, err = f.TokenizerSource()
		if errors.Is(err, gguf.ErrNoVocab) {
			s.tokenizer, err = nil, nil
		}
		return err
	})
	if err != nil {
		return s, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

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

func (s *source) ggufConfig(f *gguf.File) error {
	archName, err := f.StringOr("general.architecture", "")
	if err != nil {
		return err
	}
	a, ok := ggufArchs[archName]
	if !ok {
		return fmt.Errorf("gguf: general.architecture %q is not imported (cflow imports llama, qwen2, qwen3, qwen3moe)", archName)
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
	kv, err := h.int("attention.head_count_kv", heads, false)
	if err != nil {
		return err
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
	if kl != hd || archName == "qwen3" {
		cfg["head_dim"] = kl
	}
	rot, err := h.int("rope.dimension_count", kl, false)
	if err != nil {
		return err
	}
	if rot != kl {
		return fmt.Errorf("gguf: %s %d rotates part of a head of %d, which cflow does not implement", h.key("rope.dimension_count"), rot, kl)
	}
	eps, err := f.FloatOr(h.key("attention.layer_norm_rms_epsilon"), 0)
	if err != nil {
		return err
	}
	if eps <= 0 {
		return fmt.Errorf("gguf: %s is missing", h.key("attention.layer_norm_rms_epsilon"))
	}
	cfg["rms_norm_eps"] = eps
	theta, err := f.FloatOr(h.key("rope.freq_base"), 10000)
	if err != nil {
		return err
	}
	cfg["rope_theta"] = theta
	scaling, err := f.StringOr(h.key("rope.scaling.type"), "none")
	if err != nil {
		return err
	}
	switch scaling {
	case "none":
	case "linear":
		factor, err := f.FloatOr(h.key("rope.scaling.factor"), 0)
		if err != nil {
			return err
		}
		cfg["rope_scaling"] = map[string]any{"type": "linear", "factor": factor}
	default:
		return fmt.Errorf("gguf: %s %q is not implemented (none and linear are)", h.key("rope.scaling.type"), scaling)
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
		cfg["attention_bias"] = bias
		cfg["mlp_bias"] = false
	}
	if archName == "qwen2" || archName == "qwen3" || archName == "qwen3moe" {
		cfg["use_sliding_window"] = false
	}
	if archName == "qwen3moe" {
		for _, k := range []struct{ gguf, hf string }{{"expert_count", "num_experts"}, {"expert_used_count", "num_experts_per_tok"},
			{"expert_feed_forward_length", "moe_intermediate_size"}} {
			v, err := h.int(k.gguf, 0, true)
			if err != nil {
				return err
			}
			cfg[k.hf] = v
		}
		cfg["norm_topk_prob"], cfg["decoder_sparse_step"], cfg["mlp_only_layers"] = true, 1, []int{}
		if sc, err := f.FloatOr(h.key("expert_weights_scale"), 1); err != nil {
			return err
		} else if sc != 1 {
			return fmt.Errorf("gguf: %s %g is not implemented", h.key("expert_weights_scale"), sc)
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
	s.ggufPermuted = a.permuted
	s.ggufHeads, s.ggufKVHeads, s.ggufHeadDim = int(heads), int(kv), int(kl)
	return nil
}

func (s *source) ggufTensors(f *gguf.File) error {
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		dt, ok := ggufDtypes[ti.Type]
		if !ok {
			return fmt.Errorf("gguf: tensor %s is %s, which cflow does not import yet (F32, F16, BF16, Q8_0 and Q4_0 are carried as they are)", ti.Name, ti.Type)
		}
		data, err := f.TensorData(ti)
		if err != nil {
			return err
		}
		if layer, ok := isExperts(ti.Name); ok {
			if err := s.splitExperts(ti, layer, dt, data); err != nil {
				return err
			}
			continue
		}
		name, err := hfNameOf(ti.Name)
		if err != nil {
			return err
		}
		var shape []int
		switch len(ti.Dims) {
		case 1:
			shape = []int{int(ti.Dims[0])}
		case 2:
			shape = []int{int(ti.Dims[1]), int(ti.Dims[0])}
		default:
			return fmt.Errorf("gguf: tensor %s has %d dimensions %v, which only stacked experts may have", ti.Name, len(ti.Dims), ti.Dims)
		}
		t, err := newTensor(name, s.path, dt, shape, data)
		if err != nil {
			return err
		}
		if s.ggufPermuted && (strings.HasSuffix(ti.Name, ".attn_q.weight") || strings.HasSuffix(ti.Name, ".attn_k.weight")) {
			heads := s.ggufHeads
			if strings.HasSuffix(ti.Name, ".attn_k.weight") {
				heads = s.ggufKVHeads
			}
			if t.rows != heads*s.ggufHeadDim {
				return fmt.Errorf("gguf: tensor %s has %d rows, %d heads of %d need %d", ti.Name, t.rows, heads, s.ggufHeadDim, heads*s.ggufHeadDim)
			}
			t.rowOf = splitHalfRow(s.ggufHeadDim)
		}
		if err := t.checkFinite(); err != nil {
			return err
		}
		s.tensors[name] = t
	}
	return nil
}

// hfNameOf maps a GGUF tensor name to the Hugging Face name the families'
// naming tables use.
func hfNameOf(name string) (string, error) {
	if hf, ok := ggufGlobalNames[name]; ok {
		return hf, nil
	}
	if m := ggufLayerName.FindStringSubmatch(name); m != nil {
		if hf, ok := ggufTensorNames[m[2]]; ok {
			return "model.layers." + m[1] + "." + hf, nil
		}
	}
	return "", fmt.Errorf("gguf: tensor %s has no Hugging Face counterpart cflow imports", name)
}

// checkNoRequant refuses a conversion that would requantize a tensor the
// input holds quantized: its blocks are carried only into tiles of their
// own codec, so --quant must name it (one codec for the file's matrices).
func checkNoRequant(s *source, q quant.Type) error {
	for _, t := range s.tensors {
		if t.dt.blocks() && t.dt.codec() != q {
			return fmt.Errorf("%s: tensor %s is %s, which --quant %s would requantize; --quant %s carries it as it is", s.path, t.name, t.dt, q, t.dt.codec())
		}
	}
	return nil
}

// isExperts reports a stacked expert tensor and its layer's HF prefix.
func isExperts(name string) (string, bool) {
	m := ggufLayerName.FindStringSubmatch(name)
	if m == nil {
		return "", false
	}
	_, ok := ggufExpertNames[m[2]]
	return "model.layers." + m[1], ok
}

// splitExperts cuts a stacked expert tensor ([in, out, experts]) of the
// layer with HF prefix layer into one 2-D tensor per expert, each a view of
// its contiguous slice.
func (s *source) splitExperts(ti *gguf.TensorInfo, layer string, dt dtype, data []byte) error {
	if len(ti.Dims) != 3 || ti.Dims[2] == 0 {
		return fmt.Errorf("gguf: stacked expert tensor %s has dimensions %v, want [in, out, experts]", ti.Name, ti.Dims)
	}
	experts := int(ti.Dims[2])
	part := ggufExpertNames[ggufLayerName.FindStringSubmatch(ti.Name)[2]]
	per := len(data) / experts
	for e := 0; e < experts; e++ {
		n := fmt.Sprintf("%s.mlp.experts.%d.%s", layer, e, part)
		t, err := newTensor(n, s.path, dt, []int{int(ti.Dims[1]), int(ti.Dims[0])}, data[e*per:(e+1)*per])
		if err != nil {
			return err
		}
		if err := t.checkFinite(); err != nil {
			return err
		}
		s.tensors[n] = t
	}
	return nil
}
