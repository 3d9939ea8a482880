package quant

import "encoding/binary"

// Shared pieces of the K-quant super-blocks (ggml-common.h: 256 weights,
// QK_K). Q4_K and Q5_K keep eight 32-weight sub-blocks, each with a 6-bit
// scale and a 6-bit min packed into 12 bytes after the super-block's f16
// d and dmin; Q6_K keeps sixteen 16-weight sub-blocks with int8 scales.

// superBlock is QK_K, the weights of one K-quant super-block: one 256-wide
// tile row holds exactly one.
const superBlock = 256

// packScaleMin stores sub-block j's 6-bit scale ls and min lm in the
// 12-byte array as ggml's quantizers do (the j < 4 entries whole in bytes
// 0–7, the others split into bytes 8–11 and the top bits of 0–7); j must
// run 0..7 in order, since the upper four OR into bytes the lower four set.
func packScaleMin(scales []byte, j int, ls, lm uint8) {
	if j < 4 {
		scales[j] = ls
		scales[j+4] = lm
		return
	}
	scales[j+4] = ls&0xF | (lm&0xF)<<4
	scales[j-4] |= (ls >> 4) << 6
	scales[j] |= (lm >> 4) << 6
}

// scaleMinK4 is get_scale_min_k4: sub-block j's 6-bit scale and min.
func scaleMinK4(j int, q []byte) (d, m uint8) {
	if j < 4 {
		return q[j] & 63, q[j+4] & 63
	}
	return q[j+4]&0xF | (q[j-4]>>6)<<4, q[j+4]>>4 | (q[j]>>6)<<4
}

// f16At reads the little-endian f16 at b[0:2] as ggml converts it.
func f16At(b []byte) float32 { return fp16ToFP32(binary.LittleEndian.Uint16(b)) }

// putF16 stores f as ggml's GGML_FP32_TO_FP16 rounds it.
func putF16(b []byte, f float32) { binary.LittleEndian.PutUint16(b, fp32ToFP16(f)) }

// kScalesMins is the first half of the Q4_K/Q5_K quantizers: per 32-weight
// sub-block a scale and a min (make_qkx2_quants with ggml's reference
// weights av_x + |x| when qw is nil, make_qkx3_quants with the importance
// weights qw·√(σ² + x²) otherwise), then the eight of each quantized to six
// bits into the block's d, dmin and 12 scale bytes (hdr: d at 0, dmin at 2,
// scales at 4..16). l receives the sub-blocks' levels from the search,
// which the second half overwrites except where a sub-block's scale is 0.
func kScalesMins(x []float32, qw []float32, nmax int, hdr []byte, l *[superBlock]uint8) {
	var laux [32]uint8
	var weights [32]float32
	var scales, mins, sw [8]float32
	if qw == nil {
		rmin, nstep := float32(-1), 20
		if nmax == 31 {
			rmin, nstep = -0.5, 15
		}
		var maxScale, maxMin float32
		for j := 0; j < 8; j++ {
			xb := x[32*j : 32*j+32]
			var sumX2 float32
			for _, v := range xb {
				sumX2 += float32(v * v)
			}
			avX := sqrt32(sumX2 / 32)
			for i, v := range xb {
				weights[i] = avX + abs32(v)
			}
			scales[j], mins[j] = makeQkxQuants(32, nmax, xb, weights[:], l[32*j:32*j+32], laux[:], rmin, 0.1, nstep, false)
			if scales[j] > maxScale {
				maxScale = scales[j]
			}
			if mins[j] > maxMin {
				maxMin = mins[j]
			}
		}
		var invScale, invMin float32
		if maxScale > 0 {
			invScale = 63 / maxScale
		}
		if maxMin > 0 {
			invMin = 63 / maxMin
		}
		for j := 0; j < 8; j++ {
			ls := min(63, uint8(nearestInt(float32(invScale*scales[j]))))
			lm := min(63, uint8(nearestInt(float32(invMin*mins[j]))))
			packScaleMin(hdr[4:16], j, ls, lm)
		}
		putF16(hdr[0:], maxScale/63)
		putF16(hdr[2:], maxMin/63)
		return
	}
	var sumX2 float32
	for _, v := range x[:superBlock] {
		sumX2 += float32(v * v)
	}
	sigma2 := float32(2*sumX2) / superBlock
	for j := 0; j < 8; j++ {
		xb := x[32*j : 32*j+32]
		q := qw[32*j : 32*j+32]
		for i, v := range xb {
			weights[i] = float32(q[i] * sqrt32(sigma2+float32(v*v)))
		}
		var sumW float32
		for _, w := range weights {
			sumW += w
		}
		sw[j] = sumW
		scales[j], mins[j] = makeQkxQuants(32, nmax, xb, weights[:], l[32*j:32*j+32], laux[:], -0.9, 0.05, 36, true)
	}
	var ls, lm [8]uint8
	dBlock := makeQpQuants(8, 63, scales[:], ls[:], sw[:])
	mBlock := makeQpQuants(8, 63, mins[:], lm[:], sw[:])
	for j := 0; j < 8; j++ {
		// Q5_K clamps to 63 here and Q4_K does not; makeQpQuants already
		// keeps every level ≤ 63, so the clamp changes nothing.
		packScaleMin(hdr[4:16], j, min(63, ls[j]), min(63, lm[j]))
	}
	putF16(hdr[0:], dBlock)
	putF16(hdr[2:], mBlock)
}

// kLevels is the second half: each weight's level in [0, nmax] against its
// sub-block's stored (f16 and 6-bit rounded) scale and min, as both ggml
// quantizers compute it; a sub-block whose scale is zero keeps the
// search's levels.
func kLevels(x []float32, hdr []byte, nmax int, l *[superBlock]uint8) {
	d0, m0 := f16At(hdr[0:]), f16At(hdr[2:])
	for j := 0; j < 8; j++ {
		sc, m := scaleMinK4(j, hdr[4:16])
		d := float32(d0 * float32(sc))
		if d == 0 {
			continue
		}
		dm := float32(m0 * float32(m))
		for i := 0; i < 32; i++ {
			li := nearestInt(float32(x[32*j+i]+dm) / d)
			l[32*j+i] = uint8(max32(0, min32(int32(nmax), li)))
		}
	}
}
