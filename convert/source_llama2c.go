package convert

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/cflow-dev/cflow/internal/fileio"
)

// llama2cHeader is the legacy llama2.c "version 0" header: seven int32.
// A negative vocab size means the file carries its own classifier (wcls).
type llama2cHeader struct {
	Dim, Hidden, Layers, Heads, KVHeads, Vocab, Seq int
	Shared                                          bool
}

const llama2cHeaderSize = 28

// parseLlama2cHeader checks the header against the file size, so a wrong
// or truncated file fails here instead of as an out-of-range read.
func parseLlama2cHeader(file string, b []byte) (llama2cHeader, error) {
	var h llama2cHeader
	if len(b) < llama2cHeaderSize {
		return h, fmt.Errorf("%s: %d bytes, shorter than the 28-byte llama2.c header", file, len(b))
	}
	v := make([]int, 7)
	for i := range v {
		v[i] = int(int32(binary.LittleEndian.Uint32(b[4*i:])))
	}
	h = llama2cHeader{Dim: v[0], Hidden: v[1], Layers: v[2], Heads: v[3], KVHeads: v[4], Vocab: v[5], Seq: v[6], Shared: v[5] > 0}
	if h.Vocab < 0 {
		h.Vocab = -h.Vocab
	}
	names := []string{"dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size", "seq_len"}
	lim := []int{1 << 17, 1 << 20, 4096, 1 << 15, 1 << 15, 1 << 22, 1 << 24}
	for i, x := range []int{h.Dim, h.Hidden, h.Layers, h.Heads, h.KVHeads, h.Vocab, h.Seq} {
		if x <= 0 || x > lim[i] {
			return h, fmt.Errorf("%s: offset %d: llama2.c header %s = %d outside 1..%d", file, 4*i, names[i], v[i], lim[i])
		}
	}
	if h.Dim%h.Heads != 0 || (h.Dim/h.Heads)%2 != 0 || h.Heads%h.KVHeads != 0 {
		return h, fmt.Errorf("%s: llama2.c header: dim %d, heads %d, kv heads %d do not give an even head dim shared by whole KV groups", file, h.Dim, h.Heads, h.KVHeads)
	}
	if want := llama2cFloats(h) * 4; int64(len(b)-llama2cHeaderSize) != want {
		return h, fmt.Errorf("%s: llama2.c file has %d bytes of weights, the header (dim %d, hidden %d, layers %d, heads %d/%d, vocab %d, seq %d, shared classifier %v) needs %d",
			file, len(b)-llama2cHeaderSize, h.Dim, h.Hidden, h.Layers, h.Heads, h.KVHeads, h.Vocab, h.Seq, h.Shared, want)
	}
	return h, nil
}

// llama2cTensors lists the file's tensors in order: HF name (or "" for the
// RoPE tables we skip) and shape. Layer-stacked arrays are split per layer.
func llama2cTensors(h llama2cHeader) []llama2cTensor {
	d, hd, L := h.Dim, h.Dim/h.Heads, h.Layers
	kv := h.KVHeads * hd
	var out []llama2cTensor
	add := func(name string, shape ...int) { out = append(out, llama2cTensor{name, shape}) }
	perLayer := func(suffix string, shape ...int) {
		for l := 0; l < L; l++ {
			add(fmt.Sprintf("model.layers.%d.%s", l, suffix), shape...)
		}
	}
	add("model.embed_tokens.weight", h.Vocab, d)
	perLayer("input_layernorm.weight", d)
	perLayer("self_attn.q_proj.weight", d, d)
	perLayer("self_attn.k_proj.weight", kv, d)
	perLayer("self_attn.v_proj.weight", kv, d)
	perLayer("self_attn.o_proj.weight", d, d)
	perLayer("post_attention_layernorm.weight", d)
	perLayer("mlp.gate_proj.weight", h.Hidden, d)
	perLayer("mlp.down_proj.weight", d, h.Hidden)
	perLayer("mlp.up_proj.weight", h.Hidden, d)
	add("model.norm.weight", d)
	add("", h.Seq, hd/2) // freq_cis_real
	add("", h.Seq, hd/2) // freq_cis_imag
	if !h.Shared {
		add("lm_head.weight", h.Vocab, d)
	}
	return out
}

type llama2cTensor struct {
	name  string
	shape []int
}

func llama2cFloats(h llama2cHeader) int64 {
	var n int64
	for _, t := range llama2cTensors(h) {
		k := int64(1)
		for _, s := range t.shape {
			k *= int64(s)
		}
		n += k
	}
	return n
}

// splitHalfRow maps a destination row (HF split-half RoPE order) to the
// llama2.c row (adjacent-pair order), the inverse view of HF's permute:
// within each head, destination row i·(hd/2)... is source row 2i (first
// half) or 2i+1 (second half).
func splitHalfRow(hd int) func(int) int {
	half := hd / 2
	return func(r int) int {
		head, j := r/hd, r%hd
		if j < half {
			return head*hd + 2*j
		}
		return head*hd + 2*(j-half) + 1
	}
}

// openLlama2c maps a llama2.c legacy checkpoint and presents it as an HF
// Llama checkpoint: tensors under HF names, q/k rows permuted to split-half
// order, and a synthesized config (rms eps 1e-5, tied unless the file has a
// classifier, no tokenizer: llama2.c keeps it in a separate file).
func openLlama2c(path string, mapped func(string)) (c *source, err error) {
	m, err := mapFile(path)
	if err != nil {
		return nil, err
	}
	c = &source{path: path, tensors: map[string]*tensor{}, maps: []*mapping{m}}
	defer func() {
		if err != nil {
			c.close()
			c = nil
		}
	}()
	if mapped != nil {
		mapped(path)
	}
	// Every read of the mapping while opening (the header, each
	// tensor's finiteness scan) is guarded: a file truncated meanwhile is
	// a FormatError naming it, not a SIGBUS crash.
	var h llama2cHeader
	if err := fileio.GuardFaultIn(c.locate, func() (err error) { h, err = c.addLlama2cTensors(m.data); return err }); err != nil {
		return c, err
	}
	cfg := map[string]any{
		"architectures":           []string{"LlamaForCausalLM"},
		"model_type":              "llama",
		"hidden_size":             h.Dim,
		"intermediate_size":       h.Hidden,
		"num_hidden_layers":       h.Layers,
		"num_attention_heads":     h.Heads,
		"num_key_value_heads":     h.KVHeads,
		"vocab_size":              h.Vocab,
		"max_position_embeddings": h.Seq,
		"rms_norm_eps":            1e-5,
		"rope_theta":              10000.0,
		"tie_word_embeddings":     h.Shared,
		"hidden_act":              "silu",
		"bos_token_id":            1,
		"eos_token_id":            2,
		"_name_or_path":           "llama2c:" + path,
	}
	b, err := json.Marshal(cfg)
	c.config = configDoc{file: path + " (llama2.c header)", json: b}
	return c, err
}

func isQK(name string) bool {
	return strings.HasSuffix(name, ".self_attn.q_proj.weight") || strings.HasSuffix(name, ".self_attn.k_proj.weight")
}

// addLlama2cTensors parses the header of b, the mapped file, and adds its
// tensors under HF names, each checked for non-finite values (in file
// order, on every core).
func (c *source) addLlama2cTensors(b []byte) (llama2cHeader, error) {
	h, err := parseLlama2cHeader(c.path, b)
	if err != nil {
		return h, err
	}
	hd := h.Dim / h.Heads
	off := int64(llama2cHeaderSize)
	var scan []*tensor
	for _, lt := range llama2cTensors(h) {
		n := int64(4)
		for _, s := range lt.shape {
			n *= int64(s)
		}
		if lt.name != "" {
			t, err := newTensor(lt.name, c.path, dtF32, lt.shape, b[off:off+n])
			if err != nil {
				return h, err
			}
			scan = append(scan, t)
			if isQK(lt.name) {
				t.rowOf = splitHalfRow(hd)
			}
			c.tensors[lt.name] = t
		}
		off += n
	}
	return h, checkFiniteAll(scan, c.locate)
}
