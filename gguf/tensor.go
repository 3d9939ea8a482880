package gguf

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/quant"
)

// tensor is one GGUF tensor before it is written: name, ggml dims (dims[0]
// is the row length, i.e. a matrix's input columns), type, and a function
// that produces its bytes on demand so only one tensor is in memory at a
// time.
type tensor struct {
	name string
	dims []uint64
	typ  GGMLType
	fill func(dst []byte) error
}

// size is the tensor's data size without alignment padding.
func (t *tensor) size() int64 {
	n := int64(t.typ.RowBytes(int(t.dims[0])))
	for _, d := range t.dims[1:] {
		n *= int64(d)
	}
	return n
}

// matrix is one [rows, cols] weight gathered from its tiles. rowOf maps a
// source row to its GGUF row (the RoPE permutation for Q and K); nil keeps
// the order.
type matrix struct {
	tiles      []cflowfmt.MappedTile
	rows, cols int
	rowOf      func(int) int
}

// pick returns the tiles of matrix id among ts (QKV and gate/up streams
// interleave several matrices).
func pick(ts []cflowfmt.MappedTile, id archspec.MatrixID) []cflowfmt.MappedTile {
	var out []cflowfmt.MappedTile
	for _, t := range ts {
		if t.Matrix == id {
			out = append(out, t)
		}
	}
	return out
}

// ggmlTypeFor is the ggml type a matrix of tile type q and cols input
// columns is exported as: the same type when ggml can hold it, F32 (exact
// dequantized values) when the row length is not a multiple of 32, which
// ggml's block types require, or when every matrix is forced to F32.
func ggmlTypeFor(q quant.Type, cols int, forceF32 bool) GGMLType {
	if forceF32 || cols%quant.GroupSize != 0 {
		return GGMLF32
	}
	switch q {
	case quant.Q4_0:
		return GGMLQ4_0
	case quant.Q8_0:
		return GGMLQ8_0
	}
	return GGMLF32
}

// fill writes the matrix as rows of typ into dst (rows × RowBytes(cols)),
// checking that the tiles cover every row group exactly once, so a missing
// or overlapping tile is an error rather than silent zeros.
func (m *matrix) fill(dst []byte, typ GGMLType) error {
	groups := quant.Groups(m.cols)
	seen := make([]bool, m.rows*groups)
	rowBytes := typ.RowBytes(m.cols)
	if len(dst) != m.rows*rowBytes {
		return fmt.Errorf("internal: %d bytes for a %dx%d %s matrix", len(dst), m.rows, m.cols, typ)
	}
	for i := range m.tiles {
		t := &m.tiles[i]
		r0, c0 := int(t.RowOffset), int(t.ColOffset)
		if r0+t.Tile.Rows > m.rows || c0+t.Tile.Cols > m.cols || c0%quant.GroupSize != 0 {
			return fmt.Errorf("tile at offset %d (rows %d+%d, cols %d+%d) outside the %dx%d matrix", t.Offset, r0, t.Tile.Rows, c0, t.Tile.Cols, m.rows, m.cols)
		}
		if err := t.Tile.Check(); err != nil {
			return fmt.Errorf("tile at offset %d: %w", t.Offset, err)
		}
		g0, tg := c0/quant.GroupSize, quant.Groups(t.Tile.Cols)
		for r := 0; r < t.Tile.Rows; r++ {
			src := r0 + r
			for g := 0; g < tg; g++ {
				if seen[src*groups+g0+g] {
					return fmt.Errorf("tile at offset %d overlaps row %d, columns %d..", t.Offset, src, (g0+g)*quant.GroupSize)
				}
				seen[src*groups+g0+g] = true
			}
			row := src
			if m.rowOf != nil {
				row = m.rowOf(src)
			}
			out := dst[row*rowBytes : (row+1)*rowBytes]
			if err := copyRow(out, typ, &t.Tile, r, c0); err != nil {
				return fmt.Errorf("tile at offset %d: %w", t.Offset, err)
			}
		}
	}
	for i, ok := range seen {
		if !ok {
			return fmt.Errorf("no tile covers row %d, columns %d..", i/groups, i%groups*quant.GroupSize)
		}
	}
	return nil
}

// copyRow writes row r of tile t, which starts at column c0, into out (one
// whole GGUF row). Quantized blocks are copied (scale, then payload: the
// ggml block layout); F32 output takes raw or dequantized values.
func copyRow(out []byte, typ GGMLType, t *quant.Tile, r, c0 int) error {
	g := quant.Groups(t.Cols)
	switch typ {
	case GGMLF32:
		if t.Type == quant.F32 {
			copy(out[4*c0:], t.Data[r*t.Cols*4:(r+1)*t.Cols*4])
			return nil
		}
		for c := 0; c < t.Cols; c++ {
			binary.LittleEndian.PutUint32(out[4*(c0+c):], math.Float32bits(t.Weight(r, c)))
		}
		return nil
	case GGMLQ4_0, GGMLQ8_0:
		want := quant.Q4_0
		if typ == GGMLQ8_0 {
			want = quant.Q8_0
		}
		if t.Type != want {
			return fmt.Errorf("%s tile exported as %s", t.Type, typ)
		}
		payload := typ.BlockBytes() - 2
		bb := typ.BlockBytes()
		for j := 0; j < g; j++ {
			blk := out[(c0/quant.GroupSize+j)*bb:]
			k := r*g + j
			copy(blk[0:2], t.Scales[2*k:2*k+2])
			copy(blk[2:bb], t.Data[k*payload:(k+1)*payload])
		}
		return nil
	}
	return fmt.Errorf("unsupported ggml type %d", typ)
}

// ropeRow maps a q/k row in HF split-half order (dimension i of a head
// pairs with i + hd/2) to GGUF's adjacent-pair order (2i with 2i+1): the
// inverse of the permutation HF's conversion script applies to Meta
// checkpoints, and the one llama.cpp's converter applies back.
func ropeRow(hd int) func(int) int {
	half := hd / 2
	return func(src int) int {
		h, w := src/hd, src%hd
		return h*hd + 2*(w%half) + w/half
	}
}

// f32Vector encodes a norm vector as a 1-D F32 tensor payload.
func f32Vector(dst []byte, v []float32) {
	for i, x := range v {
		binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(x))
	}
}
