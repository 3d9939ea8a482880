package quant

import "math"

// ggml's own Q4_0 and Q8_0 quantizers. cflow's tiles store the same
// information as GGUF's block_q4_0/block_q8_0 (an f16 scale per 32
// weights, then the quants; the tile keeps the scales in their own array)
// and dequantize the same way, d·(q−8) and d·q, but cflow's encoder
// (encodeRef) chooses other scales: ggml's Q4_0 takes d = max/−8 from the
// signed extreme, and its Q8_0 multiplies by 1/d. A file converted to
// match llama-quantize byte for byte (quant/recipe's q4_0 and q8_0, and
// Q6_K's Q8_0 fallback) needs ggml's choice: QuantizeRows gives it, in
// GGUF's block layout.

// quantizeQ40Ref is quantize_row_q4_0_ref for one 32-weight block
// (block_q4_0: f16 d, then 16 bytes, weight j low and j+16 high).
func quantizeQ40Ref(x []float32, y []byte) {
	var amax, max float32
	for _, v := range x[:32] {
		if amax < abs32(v) {
			amax = abs32(v)
			max = v
		}
	}
	d := max / -8
	var id float32
	if d != 0 {
		id = 1 / d
	}
	putF16(y[0:], d)
	for j := 0; j < 16; j++ {
		xi0 := uint8(min(15, int8(cTrunc(float32(x[j]*id)+8.5))))
		xi1 := uint8(min(15, int8(cTrunc(float32(x[j+16]*id)+8.5))))
		y[2+j] = xi0 | xi1<<4
	}
}

// quantizeQ40Impl is quantize_row_q4_0_impl for one block of a row with
// the row's σ² (see quantizeQ50Impl).
func quantizeQ40Impl(x, qw []float32, sigma2 float32, y []byte) {
	var weight [32]float32
	var l [32]int8
	for j, v := range x[:32] {
		weight[j] = float32(qw[j] * sqrt32(sigma2+float32(v*v)))
	}
	d := makeQxQuants(32, 8, x, l[:], weight[:])
	putF16(y[0:], d)
	for j := 0; j < 16; j++ {
		y[2+j] = uint8(l[j]) | uint8(l[j+16])<<4
	}
}

// quantizeQ80Ref is quantize_row_q8_0_ref for one block (block_q8_0: f16
// d, then 32 int8); llama-quantize's Q8_0 ignores an importance matrix.
func quantizeQ80Ref(x []float32, y []byte) {
	var amax float32
	for _, v := range x[:32] {
		amax = maxf32(amax, abs32(v))
	}
	d := amax / 127
	var id float32
	if d != 0 {
		id = 1 / d
	}
	putF16(y[0:], d)
	for j, v := range x[:32] {
		// roundf, then C's conversion to int8_t (x86: cvttss2si's low byte).
		y[2+j] = byte(int8(cTrunc(float32(math.Round(float64(float32(v * id)))))))
	}
}

// dequantizeQ40 is dequantize_row_q4_0 for one block.
func dequantizeQ40(b []byte, out []float32) {
	d := f16At(b)
	for j := 0; j < 16; j++ {
		out[j] = float32(int32(b[2+j]&0x0F)-8) * d
		out[j+16] = float32(int32(b[2+j]>>4)-8) * d
	}
}

// dequantizeQ80 is dequantize_row_q8_0 for one block.
func dequantizeQ80(b []byte, out []float32) {
	d := f16At(b)
	for j := 0; j < 32; j++ {
		out[j] = float32(int8(b[2+j])) * d
	}
}
