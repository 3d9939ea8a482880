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
	// Progress, when set, is called after each tensor with the data bytes
	// written so far and the total (the CLI draws a bar from it).
	Progress func(done, total int64)
}

// Supported reports why a model cannot be exported (nil when it can): each
// cflow family maps to llama.cpp's own architecture (arch.go), which is a
// pre-norm transformer; llama.cpp would silently compute something else for
// any other combine style, and for any feature its architecture lacks.
func Supported(m *cflowfmt.Model) error {
	h := &m.Header
	a := archOf(m)
	bad := func(format string, args ...any) error {
		return fmt.Errorf("gguf: cannot export as %s: "+format, append([]any{a.name}, args...)...)
	}
	switch {
	case !h.CombineStyle.Standard():
		return bad("combine style %s (only the standard pre-norm residual maps to llama.cpp's architectures)", h.CombineStyle)
	case m.Meta != nil && m.Meta.U32(cflowfmt.KeyBlockIterations, 1) > 1:
		return bad("block iterations %d", m.Meta.U32(cflowfmt.KeyBlockIterations, 1))
	case h.DenseDelay != 0 || h.ExpertDelay != 0:
		return bad("dense/expert delays %d/%d", h.DenseDelay, h.ExpertDelay)
	case (h.IntermediateSize > 0) == (h.NumExperts > 0) && !a.gemma4:
		return bad("need exactly one of a dense FFN (%d) and experts (%d)", h.IntermediateSize, h.NumExperts)
	case len(m.Layers) != int(h.NumLayers):
		return bad("model has %d layers, header says %d", len(m.Layers), h.NumLayers)
	case h.NumExperts > 0 && m.ExpertTiles == nil:
		return bad("model has experts but no ExpertTiles reader")
	}
	if m.Meta == nil {
		if h.FeatureFlags&^cflowfmt.FlagTiedEmbed != 0 || h.SlidingWindow != 0 || h.FinalLogitSoftcap != 0 {
			return bad("features without metadata")
		}
		return nil
	}
	return checkArch(m, a)
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

// metadata builds the architecture's KV section, the tokenizer included.
func metadata(m *cflowfmt.Model, opt Options) (kvList, error) {
	h := &m.Header
	md := m.Meta
	if md == nil {
		md = cflowfmt.NewMetadata()
	}
	a := archOf(m)
	name := opt.Name
	if name == "" {
		name = md.String(cflowfmt.KeyName, "cflow-export")
	}
	p := a.name + "."
	var l kvList
	l.str("general.architecture", a.name)
	l.str("general.name", name)
	l.u32("general.alignment", Alignment)
	l.u32("general.file_type", fileType(h.QuantType, opt.F32))
	l.u32(p+"vocab_size", h.VocabSize)
	l.u32(p+"context_length", h.MaxSeqLen)
	l.u32(p+"embedding_length", h.HiddenSize)
	l.u32(p+"block_count", h.NumLayers)
	ffn := h.IntermediateSize
	if h.NumExperts > 0 && !a.gemma4 {
		ffn = h.ExpertIntermediateSize
	}
	l.u32(p+"feed_forward_length", ffn)
	l.u32(p+"attention.head_count", uint32(h.NumHeads))
	if a.gemma4 {
		gemma4Keys(&l, p, h, md)
	} else {
		l.u32(p+"attention.head_count_kv", uint32(h.NumKVHeads))
		l.u32(p+"attention.key_length", uint32(h.HeadDim))
		l.u32(p+"attention.value_length", uint32(h.HeadDim))
		l.u32(p+"rope.dimension_count", uint32(h.HeadDim))
	}
	// Defaults are the runtime's, so both engines see the same numbers.
	l.f32(p+"attention.layer_norm_rms_epsilon", md.F32(cflowfmt.KeyRMSEps, 1e-6))
	theta := md.F32(cflowfmt.KeyRopeTheta, 10000)
	if a.sliding {
		// rope.theta is the sliding layers' base, rope.theta_global the
		// full layers'.
		l.f32(p+"rope.freq_base", md.F32(cflowfmt.KeyRopeThetaGlobal, theta))
		l.f32(p+"rope.freq_base_swa", theta)
		l.u32(p+"attention.sliding_window", h.SlidingWindow)
		if !a.gemma4 {
			period, _ := swaPeriod(md.Bytes(cflowfmt.KeyLayerKinds))
			l.u32(p+"attention.sliding_window_pattern", uint32(period))
		}
	} else {
		l.f32(p+"rope.freq_base", theta)
	}
	if md.String(cflowfmt.KeyRopeScaling, "") == "linear" {
		l.str(p+"rope.scaling.type", "linear")
		l.f32(p+"rope.scaling.factor", md.F32(cflowfmt.KeyRopeScalingFactor, 1))
	}
	if h.FinalLogitSoftcap != 0 {
		l.f32(p+"final_logit_softcapping", h.FinalLogitSoftcap)
	}
	if h.NumExperts > 0 {
		l.u32(p+"expert_count", uint32(h.NumExperts))
		l.u32(p+"expert_used_count", uint32(h.TopK))
		l.u32(p+"expert_feed_forward_length", h.ExpertIntermediateSize)
	}
	err := writeVocab(&l, md, int(h.VocabSize))
	return l, err
}
