package convert

import (
	"encoding/binary"
	"math"

	"github.com/cflow-dev/cflow/quant"
	"github.com/x448/float16"
)

// encodeTile quantizes w (rows×cols, row stride cols) into t's buffers.
// It is quant.EncodeInto's rounding contract (DESIGN.md, "Quantization")
// restated without float64 math calls, several times faster, which is what
// conversion throughput hinges on. encode_test.go holds it to
// quant.EncodeInto bit for bit; groups with NaN or ±Inf are handed to
// quant.EncodeInto itself, since their exact bytes follow its
// implementation rather than the written contract.
func encodeTile(t *quant.Tile, w []float32) {
	switch t.Type {
	case quant.Q4_0, quant.Q8_0:
	default:
		quant.EncodeInto(t, w, t.Cols)
		return
	}
	rows, cols := t.Rows, t.Cols
	g := quant.Groups(cols)
	var block [quant.GroupSize]float32
	for r := 0; r < rows; r++ {
		row := w[r*cols : r*cols+cols]
		for gi := 0; gi < g; gi++ {
			src := row[gi*quant.GroupSize : min(cols, (gi+1)*quant.GroupSize)]
			b := &block
			if len(src) == quant.GroupSize {
				b = (*[quant.GroupSize]float32)(src)
			} else {
				block = [quant.GroupSize]float32{}
				copy(block[:], src)
			}
			idx := r*g + gi
			var s float32
			ok := true
			if t.Type == quant.Q4_0 {
				s, ok = q4Group(b, t.Data[idx*16:idx*16+16])
			} else {
				s, ok = q8Group(b, t.Data[idx*32:idx*32+32])
			}
			if !ok {
				encodeGroupSlow(t, b, idx)
				continue
			}
			binary.LittleEndian.PutUint16(t.Scales[idx*2:], float16.Fromfloat32(s).Bits())
		}
	}
}

// encodeGroupSlow runs quant.EncodeInto on one group through a 1×32 tile.
func encodeGroupSlow(t *quant.Tile, b *[quant.GroupSize]float32, idx int) {
	one := quant.Encode(t.Type, b[:], 1, quant.GroupSize, quant.GroupSize)
	copy(t.Scales[idx*2:idx*2+2], one.Scales)
	n := len(one.Data)
	copy(t.Data[idx*n:idx*n+n], one.Data)
}

// absMaxBits returns max|v| over a group as f32 bits and whether every
// value was finite. Finite non-negative floats order like their bits.
func absMaxBits(b *[quant.GroupSize]float32) (uint32, bool) {
	var m uint32
	for _, v := range b {
		a := math.Float32bits(v) & 0x7fffffff
		m = max(m, a)
	}
	return m, m < 0x7f800000
}

// roundHalfAway rounds an f32 quotient half away from zero; adding 0.5 in
// float64 is exact for the small magnitudes here. Branch-free, because
// the sign of a weight is a coin flip the predictor cannot learn.
func roundHalfAway(x float32) int {
	b := math.Float32bits(x)
	t := int(float64(math.Float32frombits(b&0x7fffffff)) + 0.5)
	sign := int(int32(b) >> 31)
	return (t ^ sign) - sign
}

func q4Group(b *[quant.GroupSize]float32, out []byte) (float32, bool) {
	mb, ok := absMaxBits(b)
	if !ok {
		return 0, false
	}
	out = out[:16]
	s := math.Float32frombits(mb) / 7
	if s == 0 {
		for j := range out {
			out[j] = 0x88
		}
		return 0, true
	}
	var q [quant.GroupSize]uint8
	for i, v := range b {
		q[i] = uint8(min(15, max(0, roundHalfAway(v/s)+8)))
	}
	for j := 0; j < 16; j++ {
		out[j] = q[j] | q[j+16]<<4
	}
	return s, true
}

func q8Group(b *[quant.GroupSize]float32, out []byte) (float32, bool) {
	mb, ok := absMaxBits(b)
	if !ok {
		return 0, false
	}
	out = out[:32]
	s := math.Float32frombits(mb) / 127
	if s == 0 {
		clear(out)
		return 0, true
	}
	for i, v := range b {
		out[i] = byte(int8(min(127, max(-127, roundHalfAway(v/s)))))
	}
	return s, true
}
