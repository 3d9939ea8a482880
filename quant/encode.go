package quant

import (
	"encoding/binary"
	"math"

	"github.com/x448/float16"
)

// Encode quantizes a rows×cols block of w (row-major, row stride `stride`
// floats) into a tile of type t, returning freshly sized scale and data
// arrays. The rounding is the report's, and golden/ replays it bit for bit:
// s = max|w|/k in f32, q = round-half-away(w/s) computed in f32, scale stored
// as f16 afterwards.
func Encode(t Type, w []float32, rows, cols, stride int) Tile {
	tile := Tile{Type: t, Rows: rows, Cols: cols,
		Scales: make([]byte, t.ScaleBytes(rows, cols)),
		Data:   make([]byte, t.DataBytes(rows, cols))}
	EncodeInto(&tile, w, stride)
	return tile
}

// EncodeInto is Encode into caller-owned buffers (tile.Scales and tile.Data
// must already have the sizes ScaleBytes/DataBytes give), so the converter
// can reuse one buffer per worker. It runs the fast encoder (encode_fast.go,
// in assembly where the CPU allows), which tests hold to encodeRef, the
// contract written out, bit for bit.
func EncodeInto(tile *Tile, w []float32, stride int) {
	encodeInto(tile, w, stride, encodeAsm)
}

// encodeRef is the rounding contract written out plainly with float64 math
// calls: the oracle the fast encoders are tested against, and the path
// they hand groups with NaN or ±Inf to (whose bytes follow this code rather
// than any written rule).
func encodeRef(tile *Tile, w []float32, stride int) {
	rows, cols := tile.Rows, tile.Cols
	if tile.Type == F32 {
		for r := 0; r < rows; r++ {
			for c := 0; c < cols; c++ {
				binary.LittleEndian.PutUint32(tile.Data[(r*cols+c)*4:], math.Float32bits(w[r*stride+c]))
			}
		}
		return
	}
	g := Groups(cols)
	var block [GroupSize]float32
	for r := 0; r < rows; r++ {
		row := w[r*stride : r*stride+cols]
		for gi := 0; gi < g; gi++ {
			block = [GroupSize]float32{}
			copy(block[:], row[gi*GroupSize:min(cols, (gi+1)*GroupSize)])
			idx := r*g + gi
			var s float32
			switch tile.Type {
			case Q4_0:
				s = quantQ4Block(&block, tile.Data[idx*16:idx*16+16])
			case Q8_0:
				s = quantQ8Block(&block, tile.Data[idx*32:idx*32+32])
			}
			binary.LittleEndian.PutUint16(tile.Scales[idx*2:], float16.Fromfloat32(s).Bits())
		}
	}
}

func absMax(b *[GroupSize]float32) float32 {
	var m float32
	for _, v := range b {
		if a := float32(math.Abs(float64(v))); a > m {
			m = a
		}
	}
	return m
}

// roundAway rounds half away from zero; v is an f32 quotient, widened
// exactly, so no double rounding occurs.
func roundAway(v float32) float64 { return math.Round(float64(v)) }

func quantQ4Block(b *[GroupSize]float32, out []byte) float32 {
	s := absMax(b) / 7
	var q [GroupSize]uint8
	for i, v := range b {
		x := 8.0
		if s != 0 {
			x = roundAway(v/s) + 8
		}
		q[i] = uint8(math.Max(0, math.Min(15, x)))
	}
	for j := 0; j < 16; j++ {
		out[j] = q[j] | q[j+16]<<4
	}
	return s
}

func quantQ8Block(b *[GroupSize]float32, out []byte) float32 {
	s := absMax(b) / 127
	for i, v := range b {
		x := 0.0
		if s != 0 {
			x = roundAway(v / s)
		}
		out[i] = byte(int8(math.Max(-127, math.Min(127, x))))
	}
	return s
}

// ScaleAt decodes the f16 scale of (row, group); kernels use their own
// inlined copy, this is for the oracle and tools.
func (t *Tile) ScaleAt(row, group int) float32 {
	idx := row*Groups(t.Cols) + group
	return float16.Frombits(binary.LittleEndian.Uint16(t.Scales[idx*2:])).Float32()
}

// Weight dequantizes one element; slow, for tests, inspect and GGUF export.
func (t *Tile) Weight(r, c int) float32 {
	if t.Type.GGMLBlocks() {
		return t.blockWeight(r, c)
	}
	switch t.Type {
	case F32:
		return math.Float32frombits(binary.LittleEndian.Uint32(t.Data[(r*t.Cols+c)*4:]))
	case Q4_0:
		g := c / GroupSize
		b := t.Data[(r*Groups(t.Cols)+g)*16:]
		j := c % GroupSize
		var q byte
		if j < 16 {
			q = b[j] & 0x0f
		} else {
			q = b[j-16] >> 4
		}
		return t.ScaleAt(r, g) * float32(int(q)-8)
	case Q8_0:
		g := c / GroupSize
		q := int8(t.Data[(r*Groups(t.Cols)+g)*32+c%GroupSize])
		return t.ScaleAt(r, g) * float32(q)
	}
	return 0
}

// DequantRow writes row r of the tile into out[:Cols]; the runtime uses it
// for embedding lookups, where one row of a quantized table is needed.
func (t *Tile) DequantRow(r int, out []float32) {
	for c := 0; c < t.Cols; c++ {
		out[c] = t.Weight(r, c)
	}
}
