package quant

import (
	"encoding/binary"
	"math"

	"github.com/x448/float16"
)

// DotScalar is the oracle: y[r] += Σ_c W[r,c]·x[c] over one tile, with
// dequantization fused (each group's scale is applied to the group's integer
// dot, weights are never materialized). x holds at least t.Cols values.
// Every SIMD kernel is tested against it and the noasm build runs it.
func DotScalar(t *Tile, x []float32, y []float32) {
	if t.Type.GGMLBlocks() {
		dotBlocksScalar(t, x, y)
		return
	}
	switch t.Type {
	case F32:
		for r := 0; r < t.Rows; r++ {
			row := t.Data[r*t.Cols*4 : (r+1)*t.Cols*4]
			var acc float32
			for c := 0; c < t.Cols; c++ {
				acc += math.Float32frombits(binary.LittleEndian.Uint32(row[c*4:])) * x[c]
			}
			y[r] += acc
		}
	case Q4_0:
		g := Groups(t.Cols)
		for r := 0; r < t.Rows; r++ {
			var acc float32
			for gi := 0; gi < g; gi++ {
				idx := r*g + gi
				s := float16.Frombits(binary.LittleEndian.Uint16(t.Scales[idx*2:])).Float32()
				b := t.Data[idx*16 : idx*16+16]
				base := gi * GroupSize
				n := min(GroupSize, t.Cols-base)
				var sum float32
				for j := 0; j < 16 && j < n; j++ {
					sum += float32(int(b[j]&0x0f)-8) * x[base+j]
				}
				for j := 16; j < n; j++ {
					sum += float32(int(b[j-16]>>4)-8) * x[base+j]
				}
				acc += s * sum
			}
			y[r] += acc
		}
	case Q8_0:
		g := Groups(t.Cols)
		for r := 0; r < t.Rows; r++ {
			var acc float32
			for gi := 0; gi < g; gi++ {
				idx := r*g + gi
				s := float16.Frombits(binary.LittleEndian.Uint16(t.Scales[idx*2:])).Float32()
				b := t.Data[idx*32 : idx*32+32]
				base := gi * GroupSize
				n := min(GroupSize, t.Cols-base)
				var sum float32
				for j := 0; j < n; j++ {
					sum += float32(int8(b[j])) * x[base+j]
				}
				acc += s * sum
			}
			y[r] += acc
		}
	}
}
