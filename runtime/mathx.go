package runtime

import "math"

// rmsNorm writes x/sqrt(mean(x²)+eps)⊙w into out (w nil: no weight, the
// V-norm). The mean is accumulated in float64 so the only rounding left is
// the f32 multiply the reference also does.
func rmsNorm(out, x, w []float32, eps float32) {
	var ss float64
	for _, v := range x {
		ss += float64(v) * float64(v)
	}
	inv := float32(1 / math.Sqrt(ss/float64(len(x))+float64(eps)))
	if w == nil {
		for i, v := range x {
			out[i] = v * inv
		}
		return
	}
	for i, v := range x {
		out[i] = v * inv * w[i]
	}
}

// norm2 is ‖x‖₂, the quantity traces record.
func norm2(x []float32) float64 {
	var ss float64
	for _, v := range x {
		ss += float64(v) * float64(v)
	}
	return math.Sqrt(ss)
}

// geluTanh is PyTorch's gelu(approximate="tanh").
func geluTanh(x float32) float32 {
	v := float64(x)
	return float32(0.5 * v * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(v+0.044715*v*v*v))))
}

// addTo does dst += src.
func addTo(dst, src []float32) {
	for i, v := range src {
		dst[i] += v
	}
}

// axpy does dst += a·src.
func axpy(dst []float32, a float32, src []float32) {
	for i, v := range src {
		dst[i] += a * v
	}
}

// exp32 is e^x in float32 to within 2 ulp (Cephes' expf: x = n·ln2 + r
// with |r| ≤ ln2/2, a degree-6 polynomial for e^r, 2^n by exponent bits).
// It is the softmax's and SiLU's exp: math.Exp in float64 cost a fifth of
// a batched prefill's attention, and the reference computes these in
// float32 anyway. Below −87 it returns 0 (e^x is then under 2^−125, well
// past what a float32 sum it joins can hold); above 88, +Inf.
func exp32(x float32) float32 {
	switch {
	case x > 88:
		return float32(math.Inf(1))
	case x < -87:
		return 0
	case x != x:
		return x
	}
	return expCore(x)
}

// expCore is exp32 on [−87, 88], small enough to inline into the softmax
// loop.
func expCore(x float32) float32 {
	const (
		log2e = 1.44269504088896341
		ln2hi = 0.693359375
		ln2lo = -2.12194440e-4
		round = 12582912 // 1.5·2²³: adding it rounds a float32 to an integer
	)
	n := (x*log2e + round) - round
	r := x - n*ln2hi - n*ln2lo
	p := ((((((1.9875691500e-4*r+1.3981999507e-3)*r+8.3334519073e-3)*r+4.1665795894e-2)*r+
		1.6666665459e-1)*r+5.0000001201e-1)*r*r + r + 1)
	return p * math.Float32frombits(uint32(int32(n)+127)<<23)
}
