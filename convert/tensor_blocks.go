package convert

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/cflow-dev/cflow/quant"
)

// The ggml block types a GGUF's tensors may carry into tiles. A Q8_0 or
// Q4_0 block (an f16 scale, then 32 int8 or 16 bytes of nibbles, low
// nibble weight j and high nibble j+16) is the tile codec's group exactly,
// stored there as scale and payload in two arrays, so a tile of the same
// codec takes the blocks as they are: no requantization.

func (d dtype) blocks() bool { return d == dtQ8_0 || d == dtQ4_0 }

// blockBytes is one 32-weight block's size on disk.
func (d dtype) blockBytes() int {
	if d == dtQ8_0 {
		return 34
	}
	return 18
}

// codec is the tile codec whose groups are this type's blocks.
func (d dtype) codec() quant.Type {
	if d == dtQ8_0 {
		return quant.Q8_0
	}
	return quant.Q4_0
}

// blockAt is the bytes of block g (32 weights) of logical row r, after the
// row permutation.
func (t *tensor) blockAt(r, g int) []byte {
	if t.rowOf != nil {
		r = t.rowOf(r)
	}
	bb := t.dt.blockBytes()
	off := (r*(t.cols/quant.GroupSize) + g) * bb
	return t.data[off : off+bb]
}

// carries reports whether tile (starting at column c0) takes the tensor's
// blocks as they are: the same codec and whole, aligned blocks.
func (t *tensor) carries(tile *quant.Tile, c0 int) bool {
	return t.dt.blocks() && tile.Type == t.dt.codec() && c0%quant.GroupSize == 0 && tile.Cols%quant.GroupSize == 0
}

// copyBlocks fills tile (rows r0.., columns c0..) with the tensor's
// blocks, scale and payload into the tile's two arrays.
func (t *tensor) copyBlocks(tile *quant.Tile, r0, c0 int) {
	g := tile.Cols / quant.GroupSize
	payload := t.dt.blockBytes() - 2
	for r := 0; r < tile.Rows; r++ {
		for j := 0; j < g; j++ {
			b := t.blockAt(r0+r, c0/quant.GroupSize+j)
			k := r*g + j
			copy(tile.Scales[2*k:2*k+2], b[:2])
			copy(tile.Data[k*payload:(k+1)*payload], b[2:])
		}
	}
}

// blockFromBlocks dequantizes rows [r0, r0+nr) × cols [c0, c0+nc) to f32,
// exactly (ggml's dequantize_row_q8_0/q4_0: scale × q, q4 offset by 8),
// for a tile of another codec (F32 keeps every weight as it was).
func (t *tensor) blockFromBlocks(dst []float32, r0, nr, c0, nc int) {
	for i := 0; i < nr; i++ {
		for j := 0; j < nc; j++ {
			c := c0 + j
			b := t.blockAt(r0+i, c/quant.GroupSize)
			d := quant.F16ToF32(binary.LittleEndian.Uint16(b))
			k := c % quant.GroupSize
			var q int
			if t.dt == dtQ8_0 {
				q = int(int8(b[2+k]))
			} else if k < 16 {
				q = int(b[2+k]&0x0f) - 8
			} else {
				q = int(b[2+k-16]>>4) - 8
			}
			dst[i*nc+j] = d * float32(q)
		}
	}
}

// checkFiniteScales refuses a block whose scale is NaN or ±Inf (the int8
// and nibble payloads are always finite).
func (t *tensor) checkFiniteScales() error {
	bb := t.dt.blockBytes()
	for off := 0; off+bb <= len(t.data); off += bb {
		if v := quant.F16ToF32(binary.LittleEndian.Uint16(t.data[off:])); math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			k := off / bb
			gr := t.cols / quant.GroupSize
			return fmt.Errorf("%s: tensor %s: non-finite scale %v in block %d of row %d; refusing to convert a NaN/Inf weight", t.file, t.name, v, k%gr, k/gr)
		}
	}
	return nil
}
