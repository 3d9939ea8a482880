package quant

// Q6_K, ggml's block_q6_K (210 bytes per 256 weights, 6.5625 bits per
// weight): 128 bytes ql (low four bits), 64 bytes qh (high two bits),
// sixteen int8 sub-block scales, then the f16 d — last, unlike the other K
// blocks. Weight = d·sc·(q − 32) with q in [0, 63], sub-blocks of 16.

const q6KBytes = 210

// quantizeQ6K writes one super-block: quantize_row_q6_K_ref's bytes when
// qw is nil, quantize_row_q6_K_impl's when qw holds 256 importance
// weights (which, unlike Q4_K's, weight the error by qw alone).
func quantizeQ6K(x []float32, qw []float32, y []byte) {
	var l [superBlock]int8
	var scales [16]float32
	var maxScale, maxAbsScale float32
	for ib := 0; ib < 16; ib++ {
		var w []float32
		if qw != nil {
			w = qw[16*ib : 16*ib+16]
		}
		s := makeQxQuants(16, 32, x[16*ib:16*ib+16], l[16*ib:16*ib+16], w)
		scales[ib] = s
		if a := abs32(s); a > maxAbsScale {
			maxAbsScale = a
			maxScale = s
		}
	}
	clear(y[:q6KBytes])
	if maxAbsScale < groupMaxEps {
		putF16(y[208:], 0)
		return
	}
	iscale := -128 / maxScale
	putF16(y[208:], 1/iscale)
	sc := y[192:208]
	for ib := 0; ib < 16; ib++ {
		sc[ib] = byte(int8(min32(127, nearestInt(float32(iscale*scales[ib])))))
	}
	d0 := f16At(y[208:])
	for j := 0; j < 16; j++ {
		d := float32(d0 * float32(int8(sc[j])))
		if d == 0 {
			continue
		}
		for i := 0; i < 16; i++ {
			li := max32(-32, min32(31, nearestInt(x[16*j+i]/d)))
			l[16*j+i] = int8(li + 32)
		}
	}
	ql, qh := y[0:128], y[128:192]
	for j := 0; j < superBlock; j += 128 {
		for i := 0; i < 32; i++ {
			q1 := uint8(l[j+i]) & 0xF
			q2 := uint8(l[j+i+32]) & 0xF
			q3 := uint8(l[j+i+64]) & 0xF
			q4 := uint8(l[j+i+96]) & 0xF
			ql[i] = q1 | q3<<4
			ql[i+32] = q2 | q4<<4
			qh[i] = uint8(l[j+i]>>4) | uint8(l[j+i+32]>>4)<<2 | uint8(l[j+i+64]>>4)<<4 | uint8(l[j+i+96]>>4)<<6
		}
		ql = ql[64:]
		qh = qh[32:]
	}
}

// q6KLevel is weight k's signed level q − 32 (k in 0..255).
func q6KLevel(b []byte, k int) int32 {
	half, r := k/128, k%128
	quad, i := r/32, r%32
	lo := b[64*half+32*(quad%2)+i] >> (4 * uint(quad/2)) & 0xF
	hi := b[128+32*half+i] >> (2 * uint(quad)) & 3
	return int32(lo|hi<<4) - 32
}

// dequantizeQ6K is dequantize_row_q6_K for one super-block.
func dequantizeQ6K(b []byte, out []float32) {
	d := f16At(b[208:])
	for k := 0; k < superBlock; k++ {
		out[k] = float32(d*float32(int8(b[192+k/16]))) * float32(q6KLevel(b, k))
	}
}

// dotQ6K is the oracle's product of one super-block with x[:256]: per
// 16-weight sub-block d·sc·Σ(q−32)·x.
func dotQ6K(b []byte, x []float32) float32 {
	d := f16At(b[208:])
	var acc float32
	for s := 0; s < 16; s++ {
		var sum float32
		for i := 0; i < 16; i++ {
			sum += float32(float32(q6KLevel(b, 16*s+i)) * x[16*s+i])
		}
		acc += float32(float32(d*float32(int8(b[192+s]))) * sum)
	}
	return acc
}
