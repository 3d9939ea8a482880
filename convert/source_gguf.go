package convert

import (
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
// one: the architectures/model_type config.json names, whether the
// HF→GGUF converter permuted the q/k rows into adjacent-pair RoPE order
// (the llama architecture; NEOX ones keep HF's split-half order), the
// per-layer names that differ from ggufTensorNames, whether the converter
// stored every norm weight as 1 + w (Gemma: conversion/gemma.py's
// norm_shift, which the family would otherwise add), and the
// architecture's own ARCH.* keys (source_gguf_config.go).
type ggufArch struct {
	hfArch, modelType string
	permuted          bool
	names             map[string]string
	normsShifted      bool
	keys              func(h *ggufHyper, cfg map[string]any) error
}

// ggufArchs are the GGUF architectures cflow imports; any other is refused
// by name. A llama file with llama.expert_count is Mixtral (ggufMixtral).
var ggufArchs = map[string]ggufArch{
	"llama": {hfArch: "LlamaForCausalLM", modelType: "llama", permuted: true},
	"qwen2": {hfArch: "Qwen2ForCausalLM", modelType: "qwen2"},
	"qwen3": {hfArch: "Qwen3ForCausalLM", modelType: "qwen3"},
	// qwen3moe: llama.cpp's graph renormalizes the top-k weights after a
	// softmax (build_moe_ffn with norm_w), i.e. norm_topk_prob.
	"qwen3moe": {hfArch: "Qwen3MoeForCausalLM", modelType: "qwen3_moe", keys: qwen3moeKeys},
	// gemma3: the four norms under Gemma's names, stored as 1 + w.
	"gemma3": {hfArch: "Gemma3ForCausalLM", modelType: "gemma3_text", normsShifted: true, keys: gemma3Keys,
		names: map[string]string{
			"ffn_norm.weight":            "pre_feedforward_layernorm.weight",
			"post_attention_norm.weight": "post_attention_layernorm.weight",
			"post_ffw_norm.weight":       "post_feedforward_layernorm.weight",
		}},
	// gemma4 (text): norms as stored, Gemma 4's names for the MLP's and
	// the MoE's norms, the router and the per-layer scalar; the experts
	// split per expert under the family's names (gemma4Names).
	"gemma4": {hfArch: "Gemma4ForCausalLM", modelType: "gemma4_text", keys: gemma4Keys,
		names: map[string]string{
			"ffn_norm.weight":            "pre_feedforward_layernorm.weight",
			"post_attention_norm.weight": "post_attention_layernorm.weight",
			"post_ffw_norm.weight":       "post_feedforward_layernorm.weight",
			"post_ffw_norm_1.weight":     "post_feedforward_layernorm_1.weight",
			"post_ffw_norm_2.weight":     "post_feedforward_layernorm_2.weight",
			"pre_ffw_norm_2.weight":      "pre_feedforward_layernorm_2.weight",
			"ffn_gate_inp.weight":        "router.proj.weight",
			"ffn_gate_inp.scale":         "router.scale",
			"ffn_down_exps.scale":        "router.per_expert_scale",
			"layer_output_scale.weight":  "layer_scalar",
			"ffn_gate_exps.weight":       "experts.%d.gate_proj",
			"ffn_up_exps.weight":         "experts.%d.up_proj",
			"ffn_down_exps.weight":       "experts.%d.down_proj",
			"ffn_gate_up_exps.weight":    "experts.%d.gate_proj|experts.%d.up_proj",
		}},
}

// ggufMixtral is the llama architecture with experts (llama.cpp's llama
// graph runs build_moe_ffn with a softmax and renormalized top-k weights,
// Mixtral's routing): the router and the experts under Mixtral's names.
var ggufMixtral = ggufArch{hfArch: "MixtralForCausalLM", modelType: "mixtral", permuted: true, keys: mixtralKeys,
	names: map[string]string{
		"ffn_gate_inp.weight":  "block_sparse_moe.gate.weight",
		"ffn_gate_exps.weight": "block_sparse_moe.experts.%d.w1.weight",
		"ffn_up_exps.weight":   "block_sparse_moe.experts.%d.w3.weight",
		"ffn_down_exps.weight": "block_sparse_moe.experts.%d.w2.weight",
	}}

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
	"ffn_gate.bias":       "mlp.gate_proj.bias",
	"ffn_up.bias":         "mlp.up_proj.bias",
	"ffn_down.bias":       "mlp.down_proj.bias",
	"ffn_gate_inp.weight": "mlp.gate.weight",
}

// ggufExpertNames are the stacked expert tensors (ne2 = experts), split
// into the expert bank's per-expert HF names (%d: the expert).
var ggufExpertNames = map[string]string{
	"ffn_gate_exps.weight": "mlp.experts.%d.gate_proj.weight",
	"ffn_up_exps.weight":   "mlp.experts.%d.up_proj.weight",
	"ffn_down_exps.weight": "mlp.experts.%d.down_proj.weight",
	// gemma4's fused gate and up banks ([in, 2·fe, experts], gate first);
	// only architectures that name it (ggufArch.names) take it.
	"ffn_gate_up_exps.weight": "",
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

func (s *source) ggufTensors(f *gguf.File) error {
	var scan []*tensor
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		dt, ok := ggufDtypes[ti.Type]
		var requant quant.Type // F32: carried as it is
		if !ok {
			requant, ok = ggufRequantable[ti.Type]
		}
		if !ok {
			return fmt.Errorf("gguf: tensor %s is %s, which cflow does not import yet (F32, F16, BF16, Q8_0 and Q4_0 are carried as they are; --requant reads %s)", ti.Name, ti.Type, ggufTypeList(ggufRequantable))
		}
		data, err := f.TensorData(ti)
		if err != nil {
			return err
		}
		if ti.Name == ggufRopeFreqs {
			continue // the llama3 scaling it states is in the config (ggufRopeScaling)
		}
		if layer, ok := isExperts(ti.Name); ok {
			if err := s.splitExperts(ti, layer, dt, requant, data, &scan); err != nil {
				return err
			}
			continue
		}
		name, err := s.ggufArch.hfName(ti.Name)
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
		t, err := s.ggufTensor(name, ti, dt, requant, shape, data)
		if err != nil {
			return err
		}
		t.normShifted = s.ggufArch.normsShifted && strings.HasSuffix(name, "norm.weight")
		if q, k := strings.Contains(ti.Name, ".attn_q."), strings.Contains(ti.Name, ".attn_k."); s.ggufArch.permuted && (q || k) {
			heads := s.ggufHeads
			if k {
				heads = s.ggufKVHeads
			}
			n := t.rows
			if len(ti.Dims) == 1 {
				n = t.cols // a bias, permuted as the rows it adds to
			}
			if n != heads*s.ggufHeadDim {
				return fmt.Errorf("gguf: tensor %s has %d rows, %d heads of %d need %d", ti.Name, n, heads, s.ggufHeadDim, heads*s.ggufHeadDim)
			}
			if len(ti.Dims) == 1 && t.foreign == nil {
				t.data = unpermuteVector(t.data, t.dt.size(), splitHalfRow(s.ggufHeadDim))
			} else if len(ti.Dims) == 1 {
				return fmt.Errorf("gguf: bias %s is %s, which --requant does not read", ti.Name, ti.Type)
			} else {
				t.rowOf = splitHalfRow(s.ggufHeadDim)
			}
		}
		if err := s.ggufFinite(t, &scan); err != nil {
			return err
		}
		s.tensors[name] = t
	}
	// The float tensors' scan runs on every core (a GGUF's weights are
	// mostly F16 or BF16: a serial scan was a fifth of an import).
	return checkFiniteAll(scan, s.locate)
}

// ggufFinite checks a block tensor's scales now and queues a float one
// for checkFiniteAll; requantized ones are checked once dequantized.
func (s *source) ggufFinite(t *tensor, scan *[]*tensor) error {
	switch {
	case t.foreign != nil:
	case t.dt.blocks():
		return t.checkFinite()
	default:
		*scan = append(*scan, t)
	}
	return nil
}

// ggufTensor is one tensor, carried (dt) or, of a type only --requant
// reads (requant set), held as blocks (requantForeign).
func (s *source) ggufTensor(name string, ti *gguf.TensorInfo, dt dtype, requant quant.Type, shape []int, data []byte) (*tensor, error) {
	if requant != quant.F32 {
		return foreignTensor(name, s.path, ti, requant, shape, data)
	}
	return newTensor(name, s.path, dt, shape, data)
}

// hfName maps a GGUF tensor name to the Hugging Face name the family's
// naming table uses: the architecture's own names first.
func (a *ggufArch) hfName(name string) (string, error) {
	if hf, ok := ggufGlobalNames[name]; ok {
		return hf, nil
	}
	if m := ggufLayerName.FindStringSubmatch(name); m != nil {
		if hf, ok := a.names[m[2]]; ok {
			return "model.layers." + m[1] + "." + hf, nil
		}
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
func (s *source) splitExperts(ti *gguf.TensorInfo, layer string, dt dtype, requant quant.Type, data []byte, scan *[]*tensor) error {
	if len(ti.Dims) != 3 || ti.Dims[2] == 0 {
		return fmt.Errorf("gguf: stacked expert tensor %s has dimensions %v, want [in, out, experts]", ti.Name, ti.Dims)
	}
	experts := int(ti.Dims[2])
	kind := ggufLayerName.FindStringSubmatch(ti.Name)[2]
	part, ok := s.ggufArch.names[kind]
	if !ok {
		part = ggufExpertNames[kind]
	}
	if part == "" {
		return fmt.Errorf("gguf: tensor %s has no Hugging Face counterpart cflow imports", ti.Name)
	}
	// A fused bank ("gate|up") holds each expert's gate rows, then its up
	// rows: two views per expert.
	parts := strings.Split(part, "|")
	rows := int(ti.Dims[1]) / len(parts)
	if rows*len(parts) != int(ti.Dims[1]) {
		return fmt.Errorf("gguf: fused expert tensor %s has %d rows, not %d equal parts", ti.Name, ti.Dims[1], len(parts))
	}
	per := len(data) / experts / len(parts)
	for e := 0; e < experts; e++ {
		for k, p := range parts {
			n := layer + "." + fmt.Sprintf(p, e)
			off := (e*len(parts) + k) * per
			t, err := s.ggufTensor(n, ti, dt, requant, []int{rows, int(ti.Dims[0])}, data[off:off+per])
			if err != nil {
				return err
			}
			if err := s.ggufFinite(t, scan); err != nil {
				return err
			}
			s.tensors[n] = t
		}
	}
	return nil
}

// unpermuteVector is a bias of the rows rowOf views back: element r of the
// copy is element rowOf(r) of data (es bytes each).
func unpermuteVector(data []byte, es int, rowOf func(int) int) []byte {
	out := make([]byte, len(data))
	for r := 0; r < len(data)/es; r++ {
		copy(out[r*es:(r+1)*es], data[rowOf(r)*es:])
	}
	return out
}
