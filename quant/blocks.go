package quant

import (
	"fmt"
	"math"
)

// Row-level entry points of the block codecs (Q4_K, Q5_K, Q6_K, Q5_0,
// Q5_1). They work on whole matrix rows, not tiles, because that is the
// unit ggml quantizes: Q5_0's and Q5_1's importance-weighted quantizers
// read the whole row (σ² = Σx²/n), so a row must be quantized before it is
// cut into tiles for the bytes to be llama-quantize's. The blocks then
// split at tile boundaries unchanged (a tile is 256 wide, a multiple of
// every block).

// GGMLBlocks reports whether t stores ggml blocks with their scales inside
// (the block codecs), rather than cflow's separate scale array.
func (t Type) GGMLBlocks() bool { return t >= Q4_K && t <= Q4_1 }

// BlockWeights is how many consecutive weights of a row one block of t
// covers: 256 for the K-quants, 32 for the other quantized types, 1 for
// F32. A block codec's rows must be a multiple of it to be quantized as
// ggml does.
func (t Type) BlockWeights() int {
	switch t {
	case Q4_K, Q5_K, Q6_K:
		return superBlock
	case F32:
		return 1
	}
	return GroupSize
}

// BlockBytes is the size of one block of t as ggml lays it out (Q4_0 and
// Q8_0 as their GGUF blocks: the f16 scale and the quants).
func (t Type) BlockBytes() int {
	switch t {
	case Q4_0:
		return 18
	case Q8_0:
		return 34
	case Q4_K:
		return q4KBytes
	case Q5_K:
		return q5KBytes
	case Q6_K:
		return q6KBytes
	case Q5_0:
		return q50Bytes
	case Q5_1:
		return q51Bytes
	case Q4_1:
		return q41Bytes
	}
	return 4
}

// RowBytes is the size of one row of n weights in ggml's layout (n a
// multiple of BlockWeights), what GGUF's tensor data holds per row.
func (t Type) RowBytes(n int) int { return n / t.BlockWeights() * t.BlockBytes() }

// ggmlRows reports whether QuantizeRows and DequantizeRows take t: the
// block codecs and, in GGUF's block layout, Q4_0 and Q8_0 (ggml_q4q8.go).
func ggmlRows(t Type) bool { return t.GGMLBlocks() || t == Q4_0 || t == Q8_0 }

// QuantizeRows quantizes the rows of src (each nPerRow weights) into dst
// (len(src)/nPerRow · RowBytes(nPerRow) bytes) with exactly the bytes
// ggml's quantize_<type> writes for the same floats (for Q4_0 and Q8_0
// GGUF's blocks, the f16 scale before each block's quants, and ggml's
// choice of scale, not cflow's encodeRef's): its reference
// quantizer (quantize_row_<type>_ref) when imatrix is nil, and with an
// importance matrix (nPerRow weights shared by every row, llama-quantize
// --imatrix's per-column mean squared activations) its weighted one
// (quantize_row_<type>_impl). A NaN or infinite weight or importance, a
// negative importance, or a row that is not whole blocks is an error
// naming it, and dst is then left unspecified.
func QuantizeRows(t Type, dst []byte, src []float32, nPerRow int, imatrix []float32) error {
	if !ggmlRows(t) {
		return fmt.Errorf("quant: QuantizeRows: %s is not a block codec", t)
	}
	bw := t.BlockWeights()
	switch {
	case nPerRow <= 0 || nPerRow%bw != 0:
		return fmt.Errorf("quant: %s rows must be a positive multiple of %d weights, have %d", t, bw, nPerRow)
	case len(src)%nPerRow != 0:
		return fmt.Errorf("quant: %d weights are not whole rows of %d", len(src), nPerRow)
	case len(dst) != len(src)/nPerRow*t.RowBytes(nPerRow):
		return fmt.Errorf("quant: %s: %d output bytes for %d rows of %d, want %d", t, len(dst), len(src)/nPerRow, nPerRow, len(src)/nPerRow*t.RowBytes(nPerRow))
	case imatrix != nil && len(imatrix) != nPerRow:
		return fmt.Errorf("quant: importance matrix has %d values for rows of %d", len(imatrix), nPerRow)
	}
	for i, v := range src {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return fmt.Errorf("quant: weight %d (row %d, column %d) is %v", i, i/nPerRow, i%nPerRow, v)
		}
	}
	for i, v := range imatrix {
		if !(v >= 0) || math.IsInf(float64(v), 0) {
			return fmt.Errorf("quant: importance of column %d is %v (want finite, ≥ 0)", i, v)
		}
	}
	bb, rb := t.BlockBytes(), t.RowBytes(nPerRow)
	for r := 0; r < len(src)/nPerRow; r++ {
		row := src[r*nPerRow : (r+1)*nPerRow]
		out := dst[r*rb : (r+1)*rb]
		var sigma2 float32
		if imatrix != nil && (t == Q5_0 || t == Q5_1 || t == Q4_0 || t == Q4_1) {
			var sumX2 float32
			for _, v := range row {
				sumX2 += float32(v * v)
			}
			sigma2 = sumX2 / float32(nPerRow)
		}
		for b := 0; b < nPerRow/bw; b++ {
			x := row[b*bw : (b+1)*bw]
			y := out[b*bb : (b+1)*bb]
			var qw []float32
			if imatrix != nil {
				qw = imatrix[b*bw : (b+1)*bw]
			}
			quantizeBlock(t, x, qw, sigma2, y)
		}
	}
	return nil
}

// quantizeBlock writes one block; qw nil selects the reference quantizer.
func quantizeBlock(t Type, x, qw []float32, sigma2 float32, y []byte) {
	switch t {
	case Q4_K:
		quantizeQ4K(x, qw, y)
	case Q5_K:
		quantizeQ5K(x, qw, y)
	case Q6_K:
		quantizeQ6K(x, qw, y)
	case Q5_0:
		if qw == nil {
			quantizeQ50Ref(x, y)
		} else {
			quantizeQ50Impl(x, qw, sigma2, y)
		}
	case Q5_1:
		if qw == nil {
			quantizeQ51Ref(x, y)
		} else {
			quantizeQ51Impl(x, qw, sigma2, y)
		}
	case Q4_0:
		if qw == nil {
			quantizeQ40Ref(x, y)
		} else {
			quantizeQ40Impl(x, qw, sigma2, y)
		}
	case Q8_0:
		quantizeQ80Ref(x, y)
	case Q4_1:
		if qw == nil {
			quantizeQ41Ref(x, y)
		} else {
			quantizeQ41Impl(x, qw, sigma2, y)
		}
	}
}

// DequantizeRows is ggml's dequantize_row_<type>: src holds whole blocks
// of t and dst receives BlockWeights values per block, the same floats
// llama.cpp computes.
func DequantizeRows(t Type, dst []float32, src []byte) error {
	if !ggmlRows(t) {
		return fmt.Errorf("quant: DequantizeRows: %s is not a block codec", t)
	}
	bw, bb := t.BlockWeights(), t.BlockBytes()
	if len(src)%bb != 0 || len(dst) != len(src)/bb*bw {
		return fmt.Errorf("quant: %s: %d bytes are not whole blocks for %d values", t, len(src), len(dst))
	}
	for b := 0; b < len(src)/bb; b++ {
		dequantizeBlock(t, src[b*bb:(b+1)*bb], dst[b*bw:(b+1)*bw])
	}
	return nil
}

func dequantizeBlock(t Type, b []byte, out []float32) {
	switch t {
	case Q4_K:
		dequantizeQ4K(b, out)
	case Q5_K:
		dequantizeQ5K(b, out)
	case Q6_K:
		dequantizeQ6K(b, out)
	case Q5_0:
		dequantizeQ50(b, out)
	case Q5_1:
		dequantizeQ51(b, out)
	case Q4_0:
		dequantizeQ40(b, out)
	case Q8_0:
		dequantizeQ80(b, out)
	case Q4_1:
		dequantizeQ41(b, out)
	}
}

// dotBlock is the oracle's product of one block with x[:BlockWeights].
func dotBlock(t Type, b []byte, x []float32) float32 {
	switch t {
	case Q4_K:
		return dotQ4K(b, x)
	case Q5_K:
		return dotQ5K(b, x)
	case Q6_K:
		return dotQ6K(b, x)
	case Q5_0:
		return dotQ50(b, x)
	case Q5_1:
		return dotQ51(b, x)
	case Q4_1:
		return dotQ41(b, x)
	}
	return 0
}
