// Package tileimage is the tile-image core the two formats share: the
// GlobalHeader and TileHeader, the metadata section, tiles and their
// validation, the Model both readers build (ModelBuilder, LazyExperts), the
// whole-file check walk, weight checksums, descriptions, and the tile layer
// over the output sink (TileSink). cflowfmt (.cflow) and vflowfmt (.vflow)
// add their own tables and layouts on top; cflowfmt re-exports the format
// types everyone else uses, so the helpers that exist only for the two
// readers and writers stay inside the module.
package tileimage

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/quant"
)

// Magic opens every .cflow file (8 bytes).
const Magic = "CFLOW\x00\x00\x00"

// Version is the only GlobalHeader version this package reads and writes.
const Version = 5

// HeaderSize and TileHeaderSize are fixed by the report; tests pin them.
const (
	HeaderSize     = 88
	TileHeaderSize = 16
)

// TileAlign is the alignment of every tile start, so an F32 payload can be
// viewed as []float32 without misaligned pointers.
const TileAlign = 16

// Feature flag bits of GlobalHeader.FeatureFlags (the report's table).
const (
	FlagEmbedScale uint8 = 1 << 0 // x = E[tok]·√d
	FlagVNorm      uint8 = 1 << 1 // RMSNorm without weight on each value vector
	FlagTiedEmbed  uint8 = 1 << 2 // LM head is the embedding; no lm_head tiles
	FlagGELU       uint8 = 1 << 3 // gelu_tanh instead of silu in every FFN and expert
	// FlagFeatures: the metadata's cflow.features lists computation features
	// (features.go) a reader must implement; readers that predate the bit
	// refuse the file instead of silently computing something else.
	FlagFeatures   uint8 = 1 << 4
	knownFlagsMask uint8 = FlagEmbedScale | FlagVNorm | FlagTiedEmbed | FlagGELU | FlagFeatures
)

// Header is the decoded GlobalHeader: everything needed to size buffers and
// build the execution plan before any tile is read. Field order below is the
// on-disk order; see docs/FORMAT.md for offsets.
type Header struct {
	Version                uint32
	HiddenSize             uint32 // d
	IntermediateSize       uint32 // dense FFN width; 0 = no dense FFN
	VocabSize              uint32
	NumLayers              uint32 // unique layers (blocks, for block-iterated models)
	MaxSeqLen              uint32 // KV-cache capacity
	NumHeads               uint16 // query heads
	NumKVHeads             uint16
	HeadDim                uint16
	GlobalHeadDim          uint16 // head dim of full-attention layers in mixed models; 0 = HeadDim
	NumExperts             uint16 // 0 = no MoE
	TopK                   uint16
	ExpertIntermediateSize uint32
	TileRows               uint16
	TileCols               uint16
	SlidingWindow          uint32 // window of sliding layers; 0 = none
	QuantType              quant.Type
	_                      [3]byte
	MetadataOffset         uint64
	MetadataLength         uint32
	LayerTableOffset       uint64
	DenseDelay             uint8
	ExpertDelay            uint8
	CombineStyle           archspec.CombineStyle
	FeatureFlags           uint8
	FinalLogitSoftcap      float32 // 0 = off
}

// Has reports whether a feature flag is set.
func (h *Header) Has(flag uint8) bool { return h.FeatureFlags&flag != 0 }

// MarshalBinary encodes the header into exactly HeaderSize bytes.
func (h *Header) MarshalBinary() ([]byte, error) {
	b := make([]byte, HeaderSize)
	le := binary.LittleEndian
	copy(b[0:8], Magic)
	le.PutUint32(b[8:], h.Version)
	le.PutUint32(b[12:], h.HiddenSize)
	le.PutUint32(b[16:], h.IntermediateSize)
	le.PutUint32(b[20:], h.VocabSize)
	le.PutUint32(b[24:], h.NumLayers)
	le.PutUint32(b[28:], h.MaxSeqLen)
	le.PutUint16(b[32:], h.NumHeads)
	le.PutUint16(b[34:], h.NumKVHeads)
	le.PutUint16(b[36:], h.HeadDim)
	le.PutUint16(b[38:], h.GlobalHeadDim)
	le.PutUint16(b[40:], h.NumExperts)
	le.PutUint16(b[42:], h.TopK)
	le.PutUint32(b[44:], h.ExpertIntermediateSize)
	le.PutUint16(b[48:], h.TileRows)
	le.PutUint16(b[50:], h.TileCols)
	le.PutUint32(b[52:], h.SlidingWindow)
	b[56] = byte(h.QuantType)
	// b[57:60] reserved, zero
	le.PutUint64(b[60:], h.MetadataOffset)
	le.PutUint32(b[68:], h.MetadataLength)
	le.PutUint64(b[72:], h.LayerTableOffset)
	b[80] = h.DenseDelay
	b[81] = h.ExpertDelay
	b[82] = byte(h.CombineStyle)
	b[83] = h.FeatureFlags
	le.PutUint32(b[84:], math.Float32bits(h.FinalLogitSoftcap))
	return b, nil
}

// UnmarshalBinary decodes and validates a header; errors are FormatErrors
// naming the offending offset.
func (h *Header) UnmarshalBinary(b []byte) error {
	if len(b) < HeaderSize {
		return &FormatError{Offset: int64(len(b)), What: fmt.Sprintf("file is %d bytes, shorter than the %d-byte header", len(b), HeaderSize)}
	}
	if string(b[0:8]) != Magic {
		return &FormatError{Offset: 0, What: fmt.Sprintf("bad magic %q, want %q", b[0:8], Magic)}
	}
	le := binary.LittleEndian
	*h = Header{
		Version:                le.Uint32(b[8:]),
		HiddenSize:             le.Uint32(b[12:]),
		IntermediateSize:       le.Uint32(b[16:]),
		VocabSize:              le.Uint32(b[20:]),
		NumLayers:              le.Uint32(b[24:]),
		MaxSeqLen:              le.Uint32(b[28:]),
		NumHeads:               le.Uint16(b[32:]),
		NumKVHeads:             le.Uint16(b[34:]),
		HeadDim:                le.Uint16(b[36:]),
		GlobalHeadDim:          le.Uint16(b[38:]),
		NumExperts:             le.Uint16(b[40:]),
		TopK:                   le.Uint16(b[42:]),
		ExpertIntermediateSize: le.Uint32(b[44:]),
		TileRows:               le.Uint16(b[48:]),
		TileCols:               le.Uint16(b[50:]),
		SlidingWindow:          le.Uint32(b[52:]),
		QuantType:              quant.Type(b[56]),
		MetadataOffset:         le.Uint64(b[60:]),
		MetadataLength:         le.Uint32(b[68:]),
		LayerTableOffset:       le.Uint64(b[72:]),
		DenseDelay:             b[80],
		ExpertDelay:            b[81],
		CombineStyle:           archspec.CombineStyle(b[82]),
		FeatureFlags:           b[83],
		FinalLogitSoftcap:      math.Float32frombits(le.Uint32(b[84:])),
	}
	return h.Validate()
}

// MaxExperts is the largest expert count: TileHeader.expert_id is a u8 and
// 0xFF (NoExpert) marks non-expert tiles.
const MaxExperts = 254

// Validate rejects geometry the runtime cannot execute safely: zero or
// absurd sizes, heads that do not divide, unknown enums. Limits are generous
// (a 1M-wide hidden size is refused, a 262,144-token vocab is not).
//
// It does not look at metadata_offset, metadata_length or
// layer_table_offset: their meaning depends on the container (a .cflow file
// checks them against its size in Open; the execution header a .vflow stores
// in its metadata has them zero), so the layout checks live in the readers.
func (h *Header) Validate() error {
	bad := func(off int64, format string, a ...any) error {
		return &FormatError{Offset: off, What: fmt.Sprintf(format, a...)}
	}
	switch {
	case h.Version != Version:
		return bad(8, "version %d, this reader handles %d", h.Version, Version)
	case h.HiddenSize == 0 || h.HiddenSize > 1<<17:
		return bad(12, "hidden size %d outside 1..131072", h.HiddenSize)
	case h.IntermediateSize > 1<<20:
		return bad(16, "intermediate size %d too large", h.IntermediateSize)
	case h.VocabSize == 0 || h.VocabSize > 1<<22:
		return bad(20, "vocab size %d outside 1..4194304", h.VocabSize)
	case h.NumLayers == 0 || h.NumLayers > 4096:
		return bad(24, "layer count %d outside 1..4096", h.NumLayers)
	case h.MaxSeqLen == 0 || h.MaxSeqLen > 1<<24:
		return bad(28, "max sequence length %d outside 1..16777216", h.MaxSeqLen)
	case h.NumHeads == 0 || h.NumKVHeads == 0 || h.NumKVHeads > h.NumHeads || h.NumHeads%h.NumKVHeads != 0:
		return bad(32, "heads %d / kv heads %d: kv heads must divide query heads", h.NumHeads, h.NumKVHeads)
	case h.HeadDim == 0 || h.HeadDim%2 != 0 || h.GlobalHeadDim%2 != 0:
		return bad(36, "head dims %d/%d must be even and non-zero", h.HeadDim, h.GlobalHeadDim)
	case h.NumExperts > MaxExperts || h.NumExperts > 0 && (h.TopK == 0 || h.TopK > h.NumExperts):
		return bad(40, "experts %d top-k %d: experts at most %d (expert_id is a u8, 0xFF = none), top-k in 1..experts", h.NumExperts, h.TopK, MaxExperts)
	case h.NumExperts > 0 && (h.ExpertIntermediateSize == 0 || h.ExpertIntermediateSize > 1<<20):
		return bad(44, "expert intermediate size %d outside 1..1048576", h.ExpertIntermediateSize)
	case h.TileRows == 0 || h.TileRows > quant.MaxTileRows || h.TileCols == 0 || h.TileCols > quant.MaxTileCols || h.TileCols%quant.GroupSize != 0:
		return bad(48, "tile %dx%d: rows 1..128, cols a multiple of 32 up to 256", h.TileRows, h.TileCols)
	case !h.QuantType.Valid():
		return bad(56, "unknown quant type %d", h.QuantType)
	case !h.CombineStyle.Valid():
		return bad(82, "unknown combine style %d", h.CombineStyle)
	case h.FeatureFlags&^knownFlagsMask != 0:
		return bad(83, "unknown feature flags %#x", h.FeatureFlags&^knownFlagsMask)
	case math.IsNaN(float64(h.FinalLogitSoftcap)) || h.FinalLogitSoftcap < 0 || math.IsInf(float64(h.FinalLogitSoftcap), 0):
		return bad(84, "final logit softcap %v must be finite and ≥ 0", h.FinalLogitSoftcap)
	}
	return nil
}

// FormatError is what every reader in cflow returns for malformed input:
// which file, which byte offset, and what was wrong there. A file
// truncated under an open reader is one too, its Err the
// *fileio.FaultError of the read that faulted.
type FormatError struct {
	File   string
	Offset int64
	What   string
	Err    error // the underlying cause, when there is one
}

// Unwrap is the underlying cause (nil for bad bytes).
func (e *FormatError) Unwrap() error { return e.Err }

func (e *FormatError) Error() string {
	if e.File != "" {
		return fmt.Sprintf("%s: offset %d: %s", e.File, e.Offset, e.What)
	}
	return fmt.Sprintf("offset %d: %s", e.Offset, e.What)
}
