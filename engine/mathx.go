package engine

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
