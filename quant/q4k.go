package quant

// Q4_K, ggml's block_q4_K (144 bytes per 256 weights, 4.5 bits per
// weight): f16 d, f16 dmin, 12 bytes of 6-bit sub-block scales and mins,
// then 128 bytes of nibbles, each 64-weight run as 32 bytes holding weight
// i in the low nibble and weight i+32 in the high one. Weight =
// d·sc·q − dmin·m.

const q4KBytes = 144

// quantizeQ4K writes one super-block: quantize_row_q4_K_ref's bytes when
// qw is nil, quantize_row_q4_K_impl's (llama-quantize --imatrix) when qw
// holds the block's 256 importance weights.
func quantizeQ4K(x []float32, qw []float32, y []byte) {
	var l [superBlock]uint8
	clear(y[:q4KBytes])
	kScalesMins(x, qw, 15, y, &l)
	kLevels(x, y, 15, &l)
	q := y[16:q4KBytes]
	for j := 0; j < superBlock; j += 64 {
		for i := 0; i < 32; i++ {
			q[i] = l[j+i] | l[j+i+32]<<4
		}
		q = q[32:]
	}
}

// dequantizeQ4K is dequantize_row_q4_K for one super-block.
func dequantizeQ4K(b []byte, out []float32) {
	d, dmin := f16At(b[0:]), f16At(b[2:])
	q := b[16:q4KBytes]
	for j := 0; j < 4; j++ {
		sc1, m1 := scaleMinK4(2*j, b[4:16])
		sc2, m2 := scaleMinK4(2*j+1, b[4:16])
		d1, mm1 := float32(d*float32(sc1)), float32(dmin*float32(m1))
		d2, mm2 := float32(d*float32(sc2)), float32(dmin*float32(m2))
		o := out[64*j : 64*j+64]
		for i := 0; i < 32; i++ {
			o[i] = float32(d1*float32(q[i]&0xF)) - mm1
			o[32+i] = float32(d2*float32(q[i]>>4)) - mm2
		}
		q = q[32:]
	}
}

// dotQ4K is the oracle's product of one super-block with x[:256]: per
// sub-block d·sc·Σq·x − dmin·m·Σx, weights never materialized.
func dotQ4K(b []byte, x []float32) float32 {
	d, dmin := f16At(b[0:]), f16At(b[2:])
	var acc float32
	for s := 0; s < 8; s++ {
		sc, m := scaleMinK4(s, b[4:16])
		q := b[16+32*(s/2):]
		shift := 4 * uint(s%2)
		xs := x[32*s : 32*s+32]
		var sumQX, sumX float32
		for i, v := range xs {
			sumQX += float32(float32((q[i]>>shift)&0xF) * v)
			sumX += v
		}
		acc += float32(float32(d*float32(sc))*sumQX) - float32(float32(dmin*float32(m))*sumX)
	}
	return acc
}
