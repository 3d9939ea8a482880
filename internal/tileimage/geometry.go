package tileimage

import (
	"fmt"

	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/quant"
)

// MaxInputWidth is the widest matrix input (columns) a file can hold:
// TileHeader.col_offset is a u16, so the last tile of a row must start
// below 65,536. Writers refuse wider inputs instead of wrapping offsets.
const MaxInputWidth = 1 << 16

// Geometry is the model shape the header and metadata state: the header's
// sizes, the full layers' KV heads (KeyGlobalKVHeads) and the per-layer
// attention kinds (KeyLayerKinds). A nil md means every layer is full
// attention with the header's KV heads. The shape rules themselves are
// archspec's.
func (h *Header) Geometry(md *Metadata) archspec.Geometry {
	g := archspec.Geometry{
		NumLayers:              int(h.NumLayers),
		HiddenSize:             int(h.HiddenSize),
		IntermediateSize:       int(h.IntermediateSize),
		VocabSize:              int(h.VocabSize),
		NumHeads:               int(h.NumHeads),
		NumKVHeads:             int(h.NumKVHeads),
		HeadDim:                int(h.HeadDim),
		GlobalHeadDim:          int(h.GlobalHeadDim),
		NumExperts:             int(h.NumExperts),
		ExpertIntermediateSize: int(h.ExpertIntermediateSize),
	}
	if md != nil {
		g.GlobalKVHeads = int(md.U32(KeyGlobalKVHeads, 0))
		g.LayerKinds = md.Bytes(KeyLayerKinds)
	}
	return g
}

// CheckWidths refuses geometry whose matrix inputs exceed MaxInputWidth
// (col_offset is a u16). Writers call it in Create so the problem is
// reported before any tile; readers at Open, as a FormatError naming the
// header field at fault.
func (h *Header) CheckWidths() error {
	hd := max(int(h.HeadDim), int(h.GlobalHeadDim))
	for _, w := range []struct {
		off   int64
		name  string
		width int
	}{
		{12, "hidden_size", int(h.HiddenSize)},
		{16, "intermediate_size", int(h.IntermediateSize)},
		{44, "expert_intermediate_size", int(h.ExpertIntermediateSize)},
		{32, "num_heads × head_dim", int(h.NumHeads) * hd},
	} {
		if w.width > MaxInputWidth {
			return &FormatError{Offset: w.off, What: fmt.Sprintf("%s %d is wider than col_offset (u16) can address (%d columns)", w.name, w.width, MaxInputWidth)}
		}
	}
	return nil
}

// SlotAllows reports whether matrix m may appear in stream slot `slot` of a
// layer entry (vocab false) or of the vocabulary entry (vocab true).
// FFN norm may sit in the MoE slot of models without a dense FFN (Mixtral).
func SlotAllows(slot int, vocab bool, m archspec.MatrixID) bool {
	if vocab {
		switch slot {
		case SlotEmbed:
			return m == archspec.MatEmbed
		case SlotLMHead:
			return m == archspec.MatLMHead
		case SlotFinalNorm:
			return m == archspec.MatFinalNorm
		}
		return false
	}
	switch slot {
	case SlotAttn:
		return m == archspec.MatAttnNorm || m == archspec.MatQ || m == archspec.MatK || m == archspec.MatV || m == archspec.MatO
	case SlotDense:
		return m == archspec.MatFFNNorm || m == archspec.MatGate || m == archspec.MatUp || m == archspec.MatDown
	case SlotMoE:
		return m == archspec.MatMoENorm || m == archspec.MatFFNNorm || m == archspec.MatRouter
	case SlotExpertBank:
		return m.IsExpert()
	}
	return false
}

// CheckTile validates a tile header against the file header alone: known
// matrix, layer/expert ids, tile geometry within the header's tile size,
// quant_group matching the tile's type, 32-aligned col_offset, and the tile
// inside the matrix's largest shape. Callers wrap the error with an offset.
func (h *Header) CheckTile(th *TileHeader) error {
	m := th.Matrix
	if !m.Valid() {
		return fmt.Errorf("unknown matrix id %d", uint8(m))
	}
	switch {
	case m.IsVocab() && int(th.Layer) != int(h.NumLayers):
		return fmt.Errorf("%s tile has layer_id %d, want %d (the vocabulary entry)", m, th.Layer, h.NumLayers)
	case !m.IsVocab() && int(th.Layer) >= int(h.NumLayers):
		return fmt.Errorf("%s tile has layer_id %d, model has %d layers", m, th.Layer, h.NumLayers)
	case m.IsExpert() && int(th.Expert) >= int(h.NumExperts):
		return fmt.Errorf("%s tile has expert_id %d, model has %d experts", m, th.Expert, h.NumExperts)
	case !m.IsExpert() && th.Expert != NoExpert:
		return fmt.Errorf("%s tile has expert_id %d, want 0xFF", m, th.Expert)
	case th.Rows == 0 || th.Rows > h.TileRows || th.Cols == 0 || th.Cols > h.TileCols:
		return fmt.Errorf("%s tile is %dx%d, limits 1..%dx1..%d", m, th.Rows, th.Cols, h.TileRows, h.TileCols)
	case th.ColOffset%quant.GroupSize != 0:
		return fmt.Errorf("%s tile col_offset %d is not a multiple of %d", m, th.ColOffset, quant.GroupSize)
	}
	want := uint16(quant.GroupSize)
	if TileQuant(m, h.QuantType) == quant.F32 {
		want = 0
	}
	if th.QuantGroup != want {
		return fmt.Errorf("%s tile quant_group %d, want %d", m, th.QuantGroup, want)
	}
	rows, cols := h.Geometry(nil).MatrixBounds(m)
	if int64(th.RowOffset)+int64(th.Rows) > int64(rows) || int(th.ColOffset)+int(th.Cols) > cols {
		return fmt.Errorf("%s tile rows %d+%d cols %d+%d outside the %dx%d matrix", m, th.RowOffset, th.Rows, th.ColOffset, th.Cols, rows, cols)
	}
	return nil
}

// ParseTile decodes and validates the tile at off, which must end by end,
// returning it (slices aliasing data, capacity clipped) and the aligned
// offset of the next tile. Both readers walk their regions with it.
func ParseTile(data []byte, off, end int64, h *Header) (MappedTile, int64, error) {
	bad := func(at int64, format string, a ...any) (MappedTile, int64, error) {
		return MappedTile{}, 0, &FormatError{Offset: at, What: fmt.Sprintf(format, a...)}
	}
	if off%TileAlign != 0 {
		return bad(off, "tile at unaligned offset")
	}
	if end > int64(len(data)) || off < 0 || end-off < TileHeaderSize {
		return bad(off, "tile header runs past the end of its region (%d)", end)
	}
	th := ParseTileHeader(data[off:])
	if err := h.CheckTile(&th); err != nil {
		return bad(off, "%v", err)
	}
	q := TileQuant(th.Matrix, h.QuantType)
	rows, cols := int(th.Rows), int(th.Cols)
	size := int64(TileSize(q, rows, cols))
	if end-off < size {
		return bad(off, "%s tile of %d bytes runs past the end of its region (%d)", th.Matrix, size, end)
	}
	s0 := off + TileHeaderSize
	s1 := s0 + int64(q.ScaleBytes(rows, cols))
	d1 := off + size
	mt := MappedTile{TileHeader: th, Offset: off, Tile: quant.Tile{
		Type: q, Rows: rows, Cols: cols,
		Scales: data[s0:s1:s1],
		Data:   data[s1:d1:d1],
	}}
	return mt, AlignUp(d1), nil
}

// CheckTileData is CheckTile plus agreement between the header and the
// tile bytes about to be written: type, geometry and array sizes.
func (h *Header) CheckTileData(th *TileHeader, t *quant.Tile) error {
	if err := h.CheckTile(th); err != nil {
		return err
	}
	if want := TileQuant(th.Matrix, h.QuantType); t.Type != want {
		return fmt.Errorf("%s tile is %s, want %s", th.Matrix, t.Type, want)
	}
	if t.Rows != int(th.Rows) || t.Cols != int(th.Cols) {
		return fmt.Errorf("%s tile header says %dx%d, tile is %dx%d", th.Matrix, th.Rows, th.Cols, t.Rows, t.Cols)
	}
	return t.Check()
}
