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
	if useGroupAsm {
		encodeTileAsm(t, w)
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
	return q4Scaled(b, math.Float32frombits(mb), out), true
}

// q4Scaled quantizes a finite group whose max|v| is amax; it returns the
// f32 scale.
func q4Scaled(b *[quant.GroupSize]float32, amax float32, out []byte) float32 {
	out = out[:16]
	s := amax / 7
	if s == 0 {
		for j := range out {
			out[j] = 0x88
		}
		return 0
	}
	for j := 0; j < 16; j++ {
		lo := uint8(min(15, max(0, roundHalfAway(b[j]/s)+8)))
		hi := uint8(min(15, max(0, roundHalfAway(b[j+16]/s)+8)))
		out[j] = lo | hi<<4
	}
	return s
}

func q8Group(b *[quant.GroupSize]float32, out []byte) (float32, bool) {
	mb, ok := absMaxBits(b)
	if !ok {
		return 0, false
	}
	return q8Scaled(b, math.Float32frombits(mb), out), true
}

func q8Scaled(b *[quant.GroupSize]float32, amax float32, out []byte) float32 {
	out = out[:32]
	s := amax / 127
	if s == 0 {
		clear(out)
		return 0
	}
	for i, v := range b {
		out[i] = byte(int8(min(127, max(-127, roundHalfAway(v/s)))))
	}
	return s
}

// encodeF16 quantizes a tile straight from f16 checkpoint bytes: each
// 32-value group is converted into a stack array (tracking max|v| on the
// f16 bits on the way) and quantized at once, so the hot path of f16
// conversion never writes or re-reads an f32 copy of the tile. Results are
// identical to block + encodeTile (encode_test.go checks).
func encodeF16(tile *quant.Tile, t *tensor, r0, c0 int) {
	if useGroupAsm {
		encodeF16Asm(tile, t, r0, c0)
		return
	}
	lut := f16LUT()
	rows, cols := tile.Rows, tile.Cols
	g := quant.Groups(cols)
	var block [quant.GroupSize]float32
	for r := 0; r < rows; r++ {
		sr := r0 + r
		if t.rowOf != nil {
			sr = t.rowOf(sr)
		}
		src := t.data[(sr*t.cols+c0)*2 : (sr*t.cols+c0+cols)*2]
		for gi := 0; gi < g; gi++ {
			n := min(quant.GroupSize, cols-gi*quant.GroupSize)
			gs := src[gi*quant.GroupSize*2 : (gi*quant.GroupSize+n)*2]
			var m uint16
			if n == quant.GroupSize {
				gs = gs[:2*quant.GroupSize]
				for i := 0; i < quant.GroupSize; i++ {
					h := binary.LittleEndian.Uint16(gs[2*i:])
					m = max(m, h&0x7fff)
					block[i] = lut[h]
				}
			} else {
				block = [quant.GroupSize]float32{}
				for i := 0; i < n; i++ {
					h := binary.LittleEndian.Uint16(gs[2*i:])
					m = max(m, h&0x7fff)
					block[i] = lut[h]
				}
			}
			idx := r*g + gi
			if m >= 0x7c00 { // Inf or NaN: the reference decides
				encodeGroupSlow(tile, &block, idx)
				continue
			}
			amax := lut[m]
			var s float32
			if tile.Type == quant.Q4_0 {
				s = q4Scaled(&block, amax, tile.Data[idx*16:idx*16+16])
			} else {
				s = q8Scaled(&block, amax, tile.Data[idx*32:idx*32+32])
			}
			binary.LittleEndian.PutUint16(tile.Scales[idx*2:], float16.Fromfloat32(s).Bits())
		}
	}
}

// useGroupAsm selects the assembly group quantizers; tests turn it off to
// hold the Go path to the same bytes.
var useGroupAsm = haveGroupAsm

// groupBytes is a group's data size in a quantized tile.
func groupBytes(q quant.Type) int { return q.DataBytes(1, quant.GroupSize) }

// rowAsm runs a row kernel over groups [0, n) starting at tile group idx,
// sending groups it refuses (NaN/Inf) to slow(k).
func rowAsm(t *quant.Tile, idx, n int, kernel func(k, n int, sc *uint16, out *byte) int, slow func(k int)) {
	gb := groupBytes(t.Type)
	for k := 0; k < n; {
		k += kernel(k, n-k, u16At(t.Scales[(idx+k)*2:]), &t.Data[(idx+k)*gb])
		if k < n {
			slow(k)
			k++
		}
	}
}

// encodeTileAsm is encodeTile with the AVX2 row kernels.
func encodeTileAsm(t *quant.Tile, w []float32) {
	rows, cols := t.Rows, t.Cols
	g, full := quant.Groups(cols), cols/quant.GroupSize
	kern := q8RowF32
	if t.Type == quant.Q4_0 {
		kern = q4RowF32
	}
	var pad [quant.GroupSize]float32
	for r := 0; r < rows; r++ {
		row := w[r*cols : r*cols+cols]
		slow := func(k int) {
			var b [quant.GroupSize]float32
			copy(b[:], row[k*quant.GroupSize:min(cols, (k+1)*quant.GroupSize)])
			encodeGroupSlow(t, &b, r*g+k)
		}
		rowAsm(t, r*g, full, func(k, n int, sc *uint16, out *byte) int {
			return kern(&row[k*quant.GroupSize], n, sc, out)
		}, slow)
		if full < g {
			pad = [quant.GroupSize]float32{}
			copy(pad[:], row[full*quant.GroupSize:])
			rowAsm(t, r*g+full, 1, func(_, n int, sc *uint16, out *byte) int {
				return kern(&pad[0], n, sc, out)
			}, func(int) { slow(full) })
		}
	}
}

// encodeF16Asm is encodeF16 with the F16C/AVX2 row kernels.
func encodeF16Asm(tile *quant.Tile, t *tensor, r0, c0 int) {
	for r := 0; r < tile.Rows; r++ {
		sr := r0 + r
		if t.rowOf != nil {
			sr = t.rowOf(sr)
		}
		encodeF16RowAsm(tile, t, r, sr, c0)
	}
}

// encodeF16RowAsm quantizes row r of tile from checkpoint row sr starting
// at column c0, reading the f16 bits in place (a short last group via a
// zero-padded copy).
func encodeF16RowAsm(tile *quant.Tile, t *tensor, r, sr, c0 int) {
	cols := tile.Cols
	g, full := quant.Groups(cols), cols/quant.GroupSize
	kern := q8RowF16
	if tile.Type == quant.Q4_0 {
		kern = q4RowF16
	}
	src := t.data[(sr*t.cols+c0)*2 : (sr*t.cols+c0+cols)*2]
	slow := func(k int) {
		var b [quant.GroupSize]float32
		lut := f16LUT()
		for i := k * quant.GroupSize; i < min(cols, (k+1)*quant.GroupSize); i++ {
			b[i-k*quant.GroupSize] = lut[binary.LittleEndian.Uint16(src[2*i:])]
		}
		encodeGroupSlow(tile, &b, r*g+k)
	}
	rowAsm(tile, r*g, full, func(k, n int, sc *uint16, out *byte) int {
		return kern(u16At(src[k*quant.GroupSize*2:]), n, sc, out)
	}, slow)
	if full < g {
		var pad [quant.GroupSize]uint16
		for i := full * quant.GroupSize; i < cols; i++ {
			pad[i-full*quant.GroupSize] = binary.LittleEndian.Uint16(src[2*i:])
		}
		rowAsm(tile, r*g+full, 1, func(_, n int, sc *uint16, out *byte) int {
			return kern(&pad[0], n, sc, out)
		}, func(int) { slow(full) })
	}
}
