package tileimage

import (
	"encoding/binary"

	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/quant"
)

// NoExpert is TileHeader.Expert for tiles outside an expert bank.
const NoExpert = 0xFF

// TileHeader is the report's 16-byte tile header, field for field.
// QuantGroup is 32 for quantized tiles and 0 for F32 tiles, which makes
// every tile self-describing given the file's quant type.
type TileHeader struct {
	Layer      uint16
	Matrix     archspec.MatrixID
	Expert     uint8
	RowOffset  uint32
	ColOffset  uint16
	Rows       uint16
	Cols       uint16
	QuantGroup uint16
}

// Put encodes h into b[:16].
func (h *TileHeader) Put(b []byte) {
	le := binary.LittleEndian
	le.PutUint16(b[0:], h.Layer)
	b[2] = byte(h.Matrix)
	b[3] = h.Expert
	le.PutUint32(b[4:], h.RowOffset)
	le.PutUint16(b[8:], h.ColOffset)
	le.PutUint16(b[10:], h.Rows)
	le.PutUint16(b[12:], h.Cols)
	le.PutUint16(b[14:], h.QuantGroup)
}

// ParseTileHeader decodes b[:16]; it does not validate.
func ParseTileHeader(b []byte) TileHeader {
	le := binary.LittleEndian
	return TileHeader{
		Layer: le.Uint16(b[0:]), Matrix: archspec.MatrixID(b[2]), Expert: b[3],
		RowOffset: le.Uint32(b[4:]), ColOffset: le.Uint16(b[8:]),
		Rows: le.Uint16(b[10:]), Cols: le.Uint16(b[12:]), QuantGroup: le.Uint16(b[14:]),
	}
}

// TileQuant is the quant type of a tile in a file of type fileQuant.
func TileQuant(m archspec.MatrixID, fileQuant quant.Type) quant.Type {
	if m.AlwaysF32() {
		return quant.F32
	}
	return fileQuant
}

// TileSize is the on-disk size of a tile (header, scales, data), before the
// padding that aligns the next tile to TileAlign.
func TileSize(q quant.Type, rows, cols int) int {
	return TileHeaderSize + q.ScaleBytes(rows, cols) + q.DataBytes(rows, cols)
}

// AlignUp rounds off up to the next multiple of TileAlign.
func AlignUp(off int64) int64 { return (off + TileAlign - 1) &^ (TileAlign - 1) }

// MappedTile is one tile as the runtime sees it: the decoded header plus
// slices that alias the file mapping (no copy). Offset is the tile's byte
// offset in the file, kept for read-order accounting and error messages.
type MappedTile struct {
	TileHeader
	quant.Tile
	Offset int64
}

// Bytes is the tile's on-disk footprint without alignment padding; byte
// counters sum it.
func (t *MappedTile) Bytes() int { return TileHeaderSize + len(t.Scales) + len(t.Data) }
