package gguf

import (
	"fmt"

	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/quant"
)

// Options tunes an export.
type Options struct {
	// F32 writes every matrix as F32 (exact dequantized values), so
	// llama.cpp's f32 matmuls can be compared with cflow's quantized ones
	// without ggml's activation quantization in the way.
	F32 bool
	// Name overrides general.name (default: the model's metadata name).
	Name string
}

// Supported reports why a model cannot be exported (nil when it can): GGUF's
// llama architecture is the standard pre-norm transformer with SwiGLU and
// full causal attention, and llama.cpp would silently compute something
// else for any other combine style or feature.
func Supported(m *cflowfmt.Model) error {
	h := &m.Header
	bad := func(format string, a ...any) error {
		return fmt.Errorf("gguf: cannot export as llama: "+format, a...)
	}
	switch {
	case !h.CombineStyle.Standard():
		return bad("combine style %s (only the standard pre-norm residual maps to llama/mixtral)", h.CombineStyle)
	case m.Meta != nil && m.Meta.U32(cflowfmt.KeyBlockIterations, 1) > 1:
		return bad("block iterations %d", m.Meta.U32(cflowfmt.KeyBlockIterations, 1))
	case h.DenseDelay != 0 || h.ExpertDelay != 0:
		return bad("dense/expert delays %d/%d", h.DenseDelay, h.ExpertDelay)
	case h.FeatureFlags&^cflowfmt.FlagTiedEmbed != 0:
		return bad("feature flags %#x (embedding scale, V-norm and GELU have no llama equivalent)", h.FeatureFlags&^cflowfmt.FlagTiedEmbed)
	case h.SlidingWindow != 0 || h.GlobalHeadDim != 0 && h.GlobalHeadDim != h.HeadDim:
		return bad("sliding-window or mixed head-dim attention")
	case h.FinalLogitSoftcap != 0:
		return bad("final logit soft-cap %g", h.FinalLogitSoftcap)
	case (h.IntermediateSize > 0) == (h.NumExperts > 0):
		return bad("need exactly one of a dense FFN (%d) and experts (%d)", h.IntermediateSize, h.NumExperts)
	case len(m.Layers) != int(h.NumLayers):
		return bad("model has %d layers, header says %d", len(m.Layers), h.NumLayers)
	case h.NumExperts > 0 && m.ExpertTiles == nil:
		return bad("model has experts but no ExpertTiles reader")
	}
	return nil
}

// fileType is general.file_type: llama_ftype of the dominant matrix type.
func fileType(q quant.Type, forceF32 bool) uint32 {
	switch {
	case forceF32:
		return 0
	case q == quant.Q4_0:
		return 2
	case q == quant.Q8_0:
		return 7
	}
	return 0
}

// metadata builds the llama KV section, the tokenizer included.
func metadata(m *cflowfmt.Model, opt Options) kvList {
	h := &m.Header
	md := m.Meta
	if md == nil {
		md = cflowfmt.NewMetadata()
	}
	name := opt.Name
	if name == "" {
		name = md.String(cflowfmt.KeyName, "cflow-export")
	}
	var l kvList
	l.str("general.architecture", "llama")
	l.str("general.name", name)
	l.u32("general.alignment", Alignment)
	l.u32("general.file_type", fileType(h.QuantType, opt.F32))
	l.u32("llama.vocab_size", h.VocabSize)
	l.u32("llama.context_length", h.MaxSeqLen)
	l.u32("llama.embedding_length", h.HiddenSize)
	l.u32("llama.block_count", h.NumLayers)
	ffn := h.IntermediateSize
	if h.NumExperts > 0 {
		ffn = h.ExpertIntermediateSize
	}
	l.u32("llama.feed_forward_length", ffn)
	l.u32("llama.attention.head_count", uint32(h.NumHeads))
	l.u32("llama.attention.head_count_kv", uint32(h.NumKVHeads))
	l.u32("llama.attention.key_length", uint32(h.HeadDim))
	l.u32("llama.attention.value_length", uint32(h.HeadDim))
	l.u32("llama.rope.dimension_count", uint32(h.HeadDim))
	// Defaults are the runtime's, so both engines see the same numbers.
	l.f32("llama.attention.layer_norm_rms_epsilon", md.F32(cflowfmt.KeyRMSEps, 1e-6))
	l.f32("llama.rope.freq_base", md.F32(cflowfmt.KeyRopeTheta, 10000))
	if h.NumExperts > 0 {
		l.u32("llama.expert_count", uint32(h.NumExperts))
		l.u32("llama.expert_used_count", uint32(h.TopK))
	}
	placeholderVocab(&l, int(h.VocabSize), md.U32(cflowfmt.KeyBOS, 1), md.U32(cflowfmt.KeyEOS, 2))
	return l
}
