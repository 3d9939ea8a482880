package quant

import "encoding/binary"

// Q5_0 and Q5_1, ggml's block_q5_0 (22 bytes per 32 weights: f16 d, 4
// bytes of fifth bits, 16 bytes of nibbles) and block_q5_1 (24 bytes: f16
// d, f16 m, then the same). Weight j < 16 is the low nibble of qs[j],
// weight j+16 its high nibble; bit j of the little-endian qh is weight j's
// fifth bit. Q5_0 = d·(q − 16), Q5_1 = d·q + m. llama-quantize falls back
// to them for matrices whose rows are not a multiple of 256.

const (
	q50Bytes = 22
	q51Bytes = 24
)

// quantizeQ50Ref is quantize_row_q5_0_ref for one 32-weight block.
func quantizeQ50Ref(x []float32, y []byte) {
	var amax, max float32
	for _, v := range x[:32] {
		if amax < abs32(v) {
			amax = abs32(v)
			max = v
		}
	}
	d := max / -16
	var id float32
	if d != 0 {
		id = 1 / d
	}
	putF16(y[0:], d)
	var qh uint32
	for j := 0; j < 16; j++ {
		xi0 := uint8(min(31, int8(cTrunc(float32(x[j]*id)+16.5))))
		xi1 := uint8(min(31, int8(cTrunc(float32(x[j+16]*id)+16.5))))
		y[6+j] = xi0&0x0F | (xi1&0x0F)<<4
		qh |= uint32(xi0&0x10) >> 4 << j
		qh |= uint32(xi1&0x10) >> 4 << (j + 16)
	}
	binary.LittleEndian.PutUint32(y[2:], qh)
}

// quantizeQ50Impl is quantize_row_q5_0_impl for one block of a row whose
// σ² = Σx²/n_per_row the caller computed over the whole row: the
// importance-weighted variant (weights qw·√(σ² + x²)).
func quantizeQ50Impl(x, qw []float32, sigma2 float32, y []byte) {
	var weight [32]float32
	var l [32]int8
	for j, v := range x[:32] {
		weight[j] = float32(qw[j] * sqrt32(sigma2+float32(v*v)))
	}
	d := makeQxQuants(32, 16, x, l[:], weight[:])
	putF16(y[0:], d)
	packQ5(y[2:], l[:], nil)
}

// packQ5 stores 32 five-bit levels as qh (4 bytes) then qs (16 bytes).
func packQ5(y []byte, l []int8, u []uint8) {
	level := func(j int) uint8 {
		if u != nil {
			return u[j]
		}
		return uint8(l[j])
	}
	var qh uint32
	for j := 0; j < 16; j++ {
		xi0, xi1 := level(j), level(j+16)
		y[4+j] = xi0&0x0F | (xi1&0x0F)<<4
		qh |= uint32(xi0&0x10) >> 4 << j
		qh |= uint32(xi1&0x10) >> 4 << (j + 16)
	}
	binary.LittleEndian.PutUint32(y[0:], qh)
}

// quantizeQ51Ref is quantize_row_q5_1_ref for one 32-weight block.
func quantizeQ51Ref(x []float32, y []byte) {
	min, id := minScaleBlock(x, y, 31)
	var u [32]uint8
	for j, v := range x[:32] {
		u[j] = uint8(cTrunc(float32(float32(v-min)*id) + 0.5))
	}
	packQ5(y[4:], nil, u[:])
}

// quantizeQ51Impl is quantize_row_q5_1_impl for one block of a row with
// the row's σ² (see quantizeQ50Impl).
func quantizeQ51Impl(x, qw []float32, sigma2 float32, y []byte) {
	var weight [32]float32
	var l, laux [32]uint8
	for j, v := range x[:32] {
		weight[j] = float32(qw[j] * sqrt32(sigma2+float32(v*v)))
	}
	d, negMin := makeQkxQuants(32, 31, x, weight[:], l[:], laux[:], -0.9, 0.05, 36, true)
	putF16(y[0:], d)
	putF16(y[2:], -negMin)
	packQ5(y[4:], nil, l[:])
}

// q5Level is weight j's five-bit level in a Q5_0/Q5_1 block whose qh
// starts at b[0] and qs at b[4].
func q5Level(b []byte, j int) uint8 {
	qh := binary.LittleEndian.Uint32(b)
	hi := uint8(qh>>uint(j)&1) << 4
	if j < 16 {
		return b[4+j]&0x0F | hi
	}
	return b[4+j-16]>>4 | hi
}

// dequantizeQ50 is dequantize_row_q5_0 for one block.
func dequantizeQ50(b []byte, out []float32) {
	d := f16At(b)
	for j := 0; j < 32; j++ {
		out[j] = float32(int32(q5Level(b[2:], j))-16) * d
	}
}

// dequantizeQ51 is dequantize_row_q5_1 for one block.
func dequantizeQ51(b []byte, out []float32) {
	d, m := f16At(b), f16At(b[2:])
	for j := 0; j < 32; j++ {
		out[j] = float32(float32(q5Level(b[4:], j))*d) + m
	}
}

// dotQ50 is the oracle's product of one block with x[:32]: d·Σ(q−16)·x.
func dotQ50(b []byte, x []float32) float32 {
	var sum float32
	for j := 0; j < 32; j++ {
		sum += float32(float32(int32(q5Level(b[2:], j))-16) * x[j])
	}
	return float32(f16At(b) * sum)
}

// dotQ51 is the oracle's product of one block with x[:32]: d·Σq·x + m·Σx.
func dotQ51(b []byte, x []float32) float32 {
	var sumQX, sumX float32
	for j := 0; j < 32; j++ {
		sumQX += float32(float32(q5Level(b[4:], j)) * x[j])
		sumX += x[j]
	}
	return float32(f16At(b)*sumQX) + float32(f16At(b[2:])*sumX)
}

// Q4_1, ggml's block_q4_1 (20 bytes per 32 weights): f16 d, f16 m, 16
// bytes of nibbles (weight j low, j+16 high). Weight = d·q + m.

const q41Bytes = 20

// quantizeQ41Ref is quantize_row_q4_1_ref for one 32-weight block.
func quantizeQ41Ref(x []float32, y []byte) {
	min, id := minScaleBlock(x, y, 15)
	for j := 0; j < 16; j++ {
		xi0 := uint8(min8(15, int8(cTrunc(float32(float32(x[j]-min)*id)+0.5))))
		xi1 := uint8(min8(15, int8(cTrunc(float32(float32(x[j+16]-min)*id)+0.5))))
		y[4+j] = xi0 | xi1<<4
	}
}

// min8 is ggml's MIN on an int8 operand.
func min8(a, b int8) int8 {
	if a < b {
		return a
	}
	return b
}

// quantizeQ41Impl is quantize_row_q4_1_impl for one block of a row with
// the row's σ² (see quantizeQ50Impl).
func quantizeQ41Impl(x, qw []float32, sigma2 float32, y []byte) {
	var weight [32]float32
	var l, laux [32]uint8
	for j, v := range x[:32] {
		weight[j] = float32(qw[j] * sqrt32(sigma2+float32(v*v)))
	}
	d, negMin := makeQkxQuants(32, 15, x, weight[:], l[:], laux[:], -0.9, 0.05, 36, true)
	putF16(y[0:], d)
	putF16(y[2:], -negMin)
	for j := 0; j < 16; j++ {
		y[4+j] = l[j] | l[j+16]<<4
	}
}

// dequantizeQ41 is dequantize_row_q4_1 for one block.
func dequantizeQ41(b []byte, out []float32) {
	d, m := f16At(b), f16At(b[2:])
	for j := 0; j < 16; j++ {
		out[j] = float32(float32(b[4+j]&0x0F)*d) + m
		out[j+16] = float32(float32(b[4+j]>>4)*d) + m
	}
}

// dotQ41 is the oracle's product of one block with x[:32]: d·Σq·x + m·Σx.
func dotQ41(b []byte, x []float32) float32 {
	var sumQX, sumX float32
	for j := 0; j < 32; j++ {
		q := b[4+j%16] >> (4 * uint(j/16)) & 0xF
		sumQX += float32(float32(q) * x[j])
		sumX += x[j]
	}
	return float32(f16At(b)*sumQX) + float32(f16At(b[2:])*sumX)
}

// minScaleBlock is the prologue ggml's q4_1 and q5_1 reference quantizers
// share: the block's min and max over 32 weights, d = (max−min)/levels
// stored as f16 d then f16 min in y, and the float reciprocal 1/d (0 for
// a constant block) the weights are scaled by.
func minScaleBlock(x []float32, y []byte, levels float32) (min, id float32) {
	min, max := float32(3.40282346638528859811704183484516925440e+38), float32(-3.40282346638528859811704183484516925440e+38)
	for _, v := range x[:32] {
		if v < min {
			min = v
		}
		if v > max {
			max = v
		}
	}
	d := (max - min) / levels
	if d != 0 {
		id = 1 / d
	}
	putF16(y[0:], d)
	putF16(y[2:], min)
	return min, id
}
