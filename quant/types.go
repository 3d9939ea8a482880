// Package quant holds the tile codecs (Q4_0, Q8_0, F32) and the tile dot
// kernels. Everything that touches quantized bytes lives here so the formats,
// the converter, the runtime and the GGUF exporter agree on one definition.
package quant

import "fmt"

// Type names how a tile's weights are stored. The numeric values are part of
// the on-disk formats (GlobalHeader.quant_type) and must never change.
type Type uint8

const (
	// F32 stores weights unquantized so scheduling can be proven against f32
	// reference traces with no quantization noise.
	F32 Type = 0
	// Q4_0 stores 32-weight groups as an f16 scale and 16 bytes of nibbles.
	Q4_0 Type = 1
	// Q8_0 stores 32-weight groups as an f16 scale and 32 int8 values.
	Q8_0 Type = 2

	// The block codecs below store ggml's own blocks (ggml-common.h), their
	// scales inside, so GGUF import and export copy bytes; their tiles have
	// no scale array (ScaleBytes 0) and Data is each row's blocks in order,
	// a short last block zero-padded. No file version holds them yet, so
	// Valid reports false for them and readers refuse them (blocks.go).

	// Q4_K is ggml's block_q4_K: 256 weights in 144 bytes, 4.5 bits each,
	// what llama.cpp's Q4_K_M and Q4_K_S recipes store most matrices in.
	Q4_K Type = 3
	// Q5_K is ggml's block_q5_K: 256 weights in 176 bytes.
	Q5_K Type = 4
	// Q6_K is ggml's block_q6_K: 256 weights in 210 bytes, the recipes'
	// choice for the output matrix and their "more bits" layers.
	Q6_K Type = 5
	// Q5_0 is ggml's block_q5_0: 32 weights in 22 bytes, llama.cpp's
	// fallback for Q4_K/Q5_K when a row is not a multiple of 256.
	Q5_0 Type = 6
	// Q5_1 is ggml's block_q5_1: 32 weights in 24 bytes, the fallback
	// for Q5_K.
	Q5_1 Type = 7
	// Q4_1 is ggml's block_q4_1: 32 weights in 20 bytes (d·q + m), what
	// llama-quantize's q4_0 recipe gives the first layers' ffn_down when an
	// importance matrix is given.
	Q4_1 Type = 8
)

// GroupSize is the number of consecutive weights along a row that share one
// scale; rows are zero-padded to a multiple of it.
const GroupSize = 32

// Tile geometry limits from the report: 128×256 keeps one Q4 tile (18,448
// bytes with its header) resident in L2 next to the activation.
const (
	MaxTileRows = 128
	MaxTileCols = 256
)

// String gives the lower-case names the CLI and the JSON outputs use.
func (t Type) String() string {
	switch t {
	case F32:
		return "f32"
	case Q4_0:
		return "q4_0"
	case Q8_0:
		return "q8_0"
	case Q4_K:
		return "q4_K"
	case Q5_K:
		return "q5_K"
	case Q6_K:
		return "q6_K"
	case Q5_0:
		return "q5_0"
	case Q5_1:
		return "q5_1"
	case Q4_1:
		return "q4_1"
	}
	return fmt.Sprintf("quant(%d)", uint8(t))
}

// ParseType accepts the names String produces for the types a file can
// hold (Valid), so flags round-trip.
func ParseType(s string) (Type, error) {
	switch s {
	case "f32", "F32":
		return F32, nil
	case "q4_0", "Q4_0", "q4":
		return Q4_0, nil
	case "q8_0", "Q8_0", "q8":
		return Q8_0, nil
	}
	return 0, fmt.Errorf("unknown quant type %q (want q4_0, q8_0 or f32)", s)
}

// Valid reports whether t is a type this build can read; readers use it to
// reject files from the future instead of misinterpreting their bytes.
func (t Type) Valid() bool { return t <= Q8_0 }

// Groups is the number of scale groups per row for a row of cols weights.
func Groups(cols int) int { return (cols + GroupSize - 1) / GroupSize }

// ScaleBytes is the size of a tile's f16 scale array (row-major, one scale
// per row and group); F32 tiles have none.
func (t Type) ScaleBytes(rows, cols int) int {
	if t == F32 || t.GGMLBlocks() {
		return 0
	}
	return rows * Groups(cols) * 2
}

// DataBytes is the size of a tile's weight payload: Q4_0 16 bytes and Q8_0
// 32 bytes per row and group; F32 rows·cols·4 with no padding; a block
// codec its blocks per row (BlockWeights, BlockBytes).
func (t Type) DataBytes(rows, cols int) int {
	if t.GGMLBlocks() {
		return rows * ((cols + t.BlockWeights() - 1) / t.BlockWeights()) * t.BlockBytes()
	}
	switch t {
	case Q4_0:
		return rows * Groups(cols) * 16
	case Q8_0:
		return rows * Groups(cols) * 32
	}
	return rows * cols * 4
}

// BytesPerWeight is the average storage cost, used by the critical-path
// analyzer and by byte accounting; it includes the scale.
func (t Type) BytesPerWeight() float64 {
	switch t {
	case Q4_0:
		return 18.0 / 32
	case Q8_0:
		return 34.0 / 32
	}
	if t.GGMLBlocks() {
		return float64(t.BlockBytes()) / float64(t.BlockWeights())
	}
	return 4
}

// Tile is the kernels' view of one tile: geometry and the two byte arrays,
// which normally alias a read-only file mapping.
type Tile struct {
	Type       Type
	Rows, Cols int
	Scales     []byte
	Data       []byte
}

// Check verifies the byte arrays match the geometry, so kernels may index
// without bounds surprises; readers call it once per tile at load.
func (t *Tile) Check() error {
	if !t.Type.Valid() {
		return fmt.Errorf("unknown quant type %d", t.Type)
	}
	if t.Rows <= 0 || t.Cols <= 0 || t.Rows > MaxTileRows || t.Cols > MaxTileCols {
		return fmt.Errorf("tile geometry %dx%d outside 1..%dx1..%d", t.Rows, t.Cols, MaxTileRows, MaxTileCols)
	}
	if len(t.Scales) != t.Type.ScaleBytes(t.Rows, t.Cols) {
		return fmt.Errorf("tile %dx%d %s: %d scale bytes, want %d", t.Rows, t.Cols, t.Type, len(t.Scales), t.Type.ScaleBytes(t.Rows, t.Cols))
	}
	if len(t.Data) != t.Type.DataBytes(t.Rows, t.Cols) {
		return fmt.Errorf("tile %dx%d %s: %d data bytes, want %d", t.Rows, t.Cols, t.Type, len(t.Data), t.Type.DataBytes(t.Rows, t.Cols))
	}
	return nil
}
