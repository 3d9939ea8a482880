package quant

// Q5_K, ggml's block_q5_K (176 bytes per 256 weights, 5.5 bits per
// weight): Q4_K's header and nibbles with the fifth bits in 32 bytes qh
// between them — weight i+64k+32h takes bit 2k+h of qh[i]. Weight =
// d·sc·q − dmin·m with q in [0, 31].

const q5KBytes = 176

// quantizeQ5K writes one super-block: quantize_row_q5_K_ref's bytes when
// qw is nil, quantize_row_q5_K_impl's when qw holds 256 importance
// weights.
func quantizeQ5K(x []float32, qw []float32, y []byte) {
	var l [superBlock]uint8
	clear(y[:q5KBytes])
	kScalesMins(x, qw, 31, y, &l)
	kLevels(x, y, 31, &l)
	qh := y[16:48]
	ql := y[48:q5KBytes]
	m1, m2 := uint8(1), uint8(2)
	for n := 0; n < superBlock; n += 64 {
		for j := 0; j < 32; j++ {
			l1 := l[n+j]
			if l1 > 15 {
				l1 -= 16
				qh[j] |= m1
			}
			l2 := l[n+j+32]
			if l2 > 15 {
				l2 -= 16
				qh[j] |= m2
			}
			ql[j] = l1 | l2<<4
		}
		m1 <<= 2
		m2 <<= 2
		ql = ql[32:]
	}
}

// q5KLevel is weight i of sub-block s's 5-bit level.
func q5KLevel(b []byte, s, i int) uint8 {
	lo := (b[48+32*(s/2)+i] >> (4 * uint(s%2))) & 0xF
	hi := (b[16+i] >> uint(s)) & 1
	return lo | hi<<4
}

// dequantizeQ5K is dequantize_row_q5_K for one super-block.
func dequantizeQ5K(b []byte, out []float32) {
	d, dmin := f16At(b[0:]), f16At(b[2:])
	for s := 0; s < 8; s++ {
		sc, m := scaleMinK4(s, b[4:16])
		ds, ms := float32(d*float32(sc)), float32(dmin*float32(m))
		for i := 0; i < 32; i++ {
			out[32*s+i] = float32(ds*float32(q5KLevel(b, s, i))) - ms
		}
	}
}

// dotQ5K is the oracle's product of one super-block with x[:256].
func dotQ5K(b []byte, x []float32) float32 {
	d, dmin := f16At(b[0:]), f16At(b[2:])
	var acc float32
	for s := 0; s < 8; s++ {
		sc, m := scaleMinK4(s, b[4:16])
		xs := x[32*s : 32*s+32]
		var sumQX, sumX float32
		for i, v := range xs {
			sumQX += float32(float32(q5KLevel(b, s, i)) * v)
			sumX += v
		}
		acc += float32(float32(d*float32(sc))*sumQX) - float32(float32(dmin*float32(m))*sumX)
	}
	return acc
}
