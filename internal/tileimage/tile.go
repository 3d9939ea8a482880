package tileimage

import (
	"encoding/binary"
	"fmt"

	"github.com/cflow-dev/cflow/quant"
)

// MatrixID names which weight a tile belongs to. Values are on disk.
type MatrixID uint8

const (
	MatQ          MatrixID = 0
	MatK          MatrixID = 1
	MatV          MatrixID = 2
	MatO          MatrixID = 3
	MatGate       MatrixID = 4
	MatUp         MatrixID = 5
	MatDown       MatrixID = 6
	MatRouter     MatrixID = 7 // always F32
	MatExpertGate MatrixID = 8
	MatExpertUp   MatrixID = 9
	MatExpertDown MatrixID = 10
	MatEmbed      MatrixID = 11
	MatLMHead     MatrixID = 12
	MatAttnNorm   MatrixID = 13 // Na, 1×d, always F32
	MatFFNNorm    MatrixID = 14 // Nf
	MatMoENorm    MatrixID = 15 // Nr (archspec.DelayedSum)
	MatFinalNorm  MatrixID = 16
	numMatrixIDs           = 17
)

var matrixNames = [...]string{"q", "k", "v", "o", "gate", "up", "down", "router",
	"expert_gate", "expert_up", "expert_down", "embed", "lm_head",
	"attn_norm", "ffn_norm", "moe_norm", "final_norm"}

func (m MatrixID) String() string {
	if int(m) < len(matrixNames) {
		return matrixNames[m]
	}
	return fmt.Sprintf("matrix(%d)", uint8(m))
}

// Valid reports whether m is a known matrix.
func (m MatrixID) Valid() bool { return m < numMatrixIDs }

// AlwaysF32 reports matrices the format never quantizes: the router (its
// per-group overhead would dominate) and norm vectors.
func (m MatrixID) AlwaysF32() bool {
	return m == MatRouter || (m >= MatAttnNorm && m <= MatFinalNorm)
}

// IsExpert reports matrices that live in an expert bank.
func (m MatrixID) IsExpert() bool { return m >= MatExpertGate && m <= MatExpertDown }

// NoExpert is TileHeader.Expert for tiles outside an expert bank.
const NoExpert = 0xFF

// TileHeader is the report's 16-byte tile header, field for field.
// QuantGroup is 32 for quantized tiles and 0 for F32 tiles, which makes
// every tile self-describing given the file's quant type.
type TileHeader struct {
	Layer      uint16
	Matrix     MatrixID
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
		Layer: le.Uint16(b[0:]), Matrix: MatrixID(b[2]), Expert: b[3],
		RowOffset: le.Uint32(b[4:]), ColOffset: le.Uint16(b[8:]),
		Rows: le.Uint16(b[10:]), Cols: le.Uint16(b[12:]), QuantGroup: le.Uint16(b[14:]),
	}
}

// TileQuant is the quant type of a tile in a file of type fileQuant.
func TileQuant(m MatrixID, fileQuant quant.Type) quant.Type {
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
