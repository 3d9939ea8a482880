// Package vflowfmt is the .vflow format: tiles grouped by execution stage
// across the layers of a vertical group (all attention of a group, then all
// its dense FFN, then its norms and routers), plus a random-access expert
// bank indexed by (layer, expert) in O(1). The reader returns the same
// *cflowfmt.Model as the .cflow reader. docs/FORMAT.md gives every byte.
package vflowfmt

import (
	"encoding/binary"
	"fmt"

	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/quant"
)

// Magic opens every .vflow file.
const Magic = "VFLOW\x00\x00\x00"

// Version is the only VFlowHeader version this package reads and writes.
const Version = 1

// Sizes fixed by the format; tests pin them.
const (
	HeaderSize     = 64
	GroupDescSize  = 80
	VocabDescSize  = 3 * 16 // embed, lm_head, final_norm ranges after the groups
	IndexEntrySize = 16     // (u64 offset, u64 length) per (layer, expert)
)

// Stages of a group, in file order. The values equal the .cflow slots
// (cflowfmt.SlotAttn, SlotDense, SlotMoE) so slot rules are shared.
const (
	StageAttn  = cflowfmt.SlotAttn  // every layer's attn_norm, Q/K/V, O
	StageDense = cflowfmt.SlotDense // every layer's ffn_norm, gate/up, down
	StageMoE   = cflowfmt.SlotMoE   // every layer's moe_norm / ffn_norm, router
	NumStages  = 3
)

var stageNames = [NumStages]string{"attn", "dense", "moe"}

// StageName is the name inspect prints for a stage.
func StageName(s int) string {
	if s >= 0 && s < NumStages {
		return stageNames[s]
	}
	return fmt.Sprintf("stage(%d)", s)
}

// Header is the 64-byte VFlowHeader: enough geometry to recognise the
// model and the offsets of the other sections. The full execution header
// (a cflowfmt.Header) lives in the metadata under cflowfmt.KeyExecHeader,
// so the runtime has one source of semantics; the reader checks the two
// agree.
type Header struct {
	Version           uint32
	HiddenSize        uint32
	NumLayers         uint32
	VocabSize         uint32
	NumHeads          uint16
	NumKVHeads        uint16
	NumExperts        uint16
	GroupCount        uint16
	QuantType         quant.Type
	CombineStyle      archspec.CombineStyle
	_                 uint16
	MetadataLength    uint32
	MetadataOffset    uint64
	GroupTableOffset  uint64
	ExpertIndexOffset uint64 // 0 when NumExperts == 0
}

// MarshalBinary encodes exactly HeaderSize bytes.
func (h *Header) MarshalBinary() ([]byte, error) {
	b := make([]byte, HeaderSize)
	le := binary.LittleEndian
	copy(b, Magic)
	le.PutUint32(b[8:], h.Version)
	le.PutUint32(b[12:], h.HiddenSize)
	le.PutUint32(b[16:], h.NumLayers)
	le.PutUint32(b[20:], h.VocabSize)
	le.PutUint16(b[24:], h.NumHeads)
	le.PutUint16(b[26:], h.NumKVHeads)
	le.PutUint16(b[28:], h.NumExperts)
	le.PutUint16(b[30:], h.GroupCount)
	b[32] = byte(h.QuantType)
	b[33] = byte(h.CombineStyle)
	le.PutUint32(b[36:], h.MetadataLength)
	le.PutUint64(b[40:], h.MetadataOffset)
	le.PutUint64(b[48:], h.GroupTableOffset)
	le.PutUint64(b[56:], h.ExpertIndexOffset)
	return b, nil
}

func errAt(off int64, format string, a ...any) error {
	return &cflowfmt.FormatError{Offset: off, What: fmt.Sprintf(format, a...)}
}

// UnmarshalBinary decodes the header and checks what it can alone: magic,
// version, reserved bytes and known enums. Offsets are checked by Open.
func (h *Header) UnmarshalBinary(b []byte) error {
	if len(b) < HeaderSize {
		return errAt(int64(len(b)), "file is %d bytes, shorter than the %d-byte .vflow header", len(b), HeaderSize)
	}
	if string(b[0:8]) != Magic {
		return errAt(0, "bad magic %q, want %q", b[0:8], Magic)
	}
	le := binary.LittleEndian
	*h = Header{
		Version: le.Uint32(b[8:]), HiddenSize: le.Uint32(b[12:]), NumLayers: le.Uint32(b[16:]),
		VocabSize: le.Uint32(b[20:]), NumHeads: le.Uint16(b[24:]), NumKVHeads: le.Uint16(b[26:]),
		NumExperts: le.Uint16(b[28:]), GroupCount: le.Uint16(b[30:]),
		QuantType: quant.Type(b[32]), CombineStyle: archspec.CombineStyle(b[33]),
		MetadataLength: le.Uint32(b[36:]), MetadataOffset: le.Uint64(b[40:]),
		GroupTableOffset: le.Uint64(b[48:]), ExpertIndexOffset: le.Uint64(b[56:]),
	}
	switch {
	case h.Version != Version:
		return errAt(8, "version %d, this reader handles %d", h.Version, Version)
	case le.Uint16(b[34:]) != 0:
		return errAt(34, "reserved bytes are %#x, want 0", le.Uint16(b[34:]))
	case !h.QuantType.Valid():
		return errAt(32, "unknown quant type %d", h.QuantType)
	case !h.CombineStyle.Valid():
		return errAt(33, "unknown combine style %d", h.CombineStyle)
	case h.GroupCount == 0 || uint32(h.GroupCount) > h.NumLayers:
		return errAt(30, "group count %d outside 1..%d layers", h.GroupCount, h.NumLayers)
	}
	return nil
}

// agrees reports the first field where the 64-byte header and the
// execution header disagree, with its offset.
func (h *Header) agrees(x *cflowfmt.Header) error {
	type field struct {
		off      int64
		name     string
		got, req uint64
	}
	for _, f := range []field{
		{12, "hidden_size", uint64(h.HiddenSize), uint64(x.HiddenSize)},
		{16, "num_layers", uint64(h.NumLayers), uint64(x.NumLayers)},
		{20, "vocab_size", uint64(h.VocabSize), uint64(x.VocabSize)},
		{24, "num_heads", uint64(h.NumHeads), uint64(x.NumHeads)},
		{26, "num_kv_heads", uint64(h.NumKVHeads), uint64(x.NumKVHeads)},
		{28, "num_experts", uint64(h.NumExperts), uint64(x.NumExperts)},
		{32, "quant_type", uint64(h.QuantType), uint64(x.QuantType)},
		{33, "combine_style", uint64(h.CombineStyle), uint64(x.CombineStyle)},
	} {
		if f.got != f.req {
			return errAt(f.off, "%s is %d here but %d in the execution header (%s)", f.name, f.got, f.req, cflowfmt.KeyExecHeader)
		}
	}
	return nil
}

// headerFor derives the 64-byte header's geometry from the execution
// header.
func headerFor(x *cflowfmt.Header, groups int) Header {
	return Header{Version: Version, HiddenSize: x.HiddenSize, NumLayers: x.NumLayers,
		VocabSize: x.VocabSize, NumHeads: x.NumHeads, NumKVHeads: x.NumKVHeads,
		NumExperts: x.NumExperts, GroupCount: uint16(groups), QuantType: x.QuantType,
		CombineStyle: x.CombineStyle}
}
