package quant

import "math"

// The block codecs (Q4_K, Q5_K, Q6_K, Q5_0, Q5_1) must write the bytes
// llama.cpp's quantizers write, so the few places where ggml's C leaves
// IEEE single-precision arithmetic are transcribed here bit for bit rather
// than approximated with Go's math package. Everywhere else the codecs use
// plain float32 operations in C's evaluation order; products that are
// summed are wrapped in float32() so no compiler fuses them into an FMA
// (the Go spec lets it, except across an explicit conversion), matching
// ggml-base, which is compiled without FMA contraction on x86-64.

// nearestInt is ggml's nearest_int: round half to even through the
// 1.5·2^23 bias trick. ggml asserts |f| ≤ 4194303 only in debug builds;
// beyond that (or for NaN and ±Inf) release builds return whatever the
// bits give, and so does this.
func nearestInt(f float32) int32 {
	v := f + 12582912
	i := int32(math.Float32bits(v))
	return (i & 0x007fffff) - 0x00400000
}

// cTrunc is C's float-to-integer conversion as x86-64 performs it
// (cvttss2si): toward zero, and the "integer indefinite" 0x80000000 for
// NaN and values outside int32. ggml's Q5_0/Q5_1 reference quantizers cast
// (x·(1/d) + bias) straight to an 8-bit integer, which for a subnormal d
// (1/d = ±Inf) meets exactly those inputs.
func cTrunc(f float32) int32 {
	if !(f >= -2147483648 && f < 2147483648) {
		return math.MinInt32
	}
	return int32(f)
}

// fp32ToFP16 is ggml's GGML_FP32_TO_FP16 (ggml_compute_fp32_to_fp16, from
// the FP16 library): round to nearest even with subnormals, overflow to
// ±Inf, and NaN as 0x7E00 with the input's sign.
func fp32ToFP16(f float32) uint16 {
	const scaleToInf = 0x1.0p+112
	const scaleToZero = 0x1.0p-110
	base := float32(float32(abs32(f))*scaleToInf) * scaleToZero
	w := math.Float32bits(f)
	shl1 := w + w
	sign := w & 0x80000000
	bias := shl1 & 0xFF000000
	if bias < 0x71000000 {
		bias = 0x71000000
	}
	base = math.Float32frombits((bias>>1)+0x07800000) + base
	bits := math.Float32bits(base)
	expBits := (bits >> 13) & 0x00007C00
	mantissa := bits & 0x00000FFF
	nonsign := expBits + mantissa
	if shl1 > 0xFF000000 {
		nonsign = 0x7E00
	}
	return uint16(sign>>16 | nonsign)
}

// fp16ToFP32 is ggml's GGML_FP16_TO_FP32; every f16 value converts exactly,
// so only NaN payloads could tell converters apart, and this one keeps
// them as ggml does.
func fp16ToFP32(h uint16) float32 {
	w := uint32(h) << 16
	sign := w & 0x80000000
	twoW := w + w
	const expOffset = 0xE0 << 23
	const expScale = 0x1.0p-112
	normalized := math.Float32frombits((twoW>>4)+expOffset) * expScale
	const magicMask = 126 << 23
	const magicBias = 0.5
	denormalized := math.Float32frombits((twoW>>17)|magicMask) - magicBias
	const denormalizedCutoff = 1 << 27
	var r uint32
	if twoW < denormalizedCutoff {
		r = math.Float32bits(denormalized)
	} else {
		r = math.Float32bits(normalized)
	}
	return math.Float32frombits(sign | r)
}

// abs32 is fabsf: the sign bit cleared.
func abs32(f float32) float32 {
	return math.Float32frombits(math.Float32bits(f) &^ 0x80000000)
}

// sqrt32 is sqrtf: the float64 square root of a float32 rounds to the
// correctly rounded float32 root (53 ≥ 2·24+2 bits), as sqrtss gives.
func sqrt32(f float32) float32 { return float32(math.Sqrt(float64(f))) }
