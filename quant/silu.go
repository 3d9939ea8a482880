package quant

import (
	"fmt"
	"math"
)

// SiLUMul is SwiGLU's elementwise step: g[i] = silu(g[i])·u[i], silu(x) =
// x/(1 + e^−x) with e^x from expf32 (Cephes' expf in float32; 0 below
// −87, +Inf above 88). The AVX2 loop runs the scalar code's roundings one
// for one (the divide is correctly rounded in both), so g is bit-identical
// on every path: the FFN of a decode step and of a batched prefill column
// agree to the bit. len(u) ≥ len(g).
func SiLUMul(g, u []float32) {
	n := len(g)
	if len(u) < n {
		panic(fmt.Sprintf("quant: SiLUMul of %d gates with %d ups", n, len(u)))
	}
	i, n8 := 0, 0
	if expScoresAVX2 {
		n8 = n &^ 7
	}
	for i < n8 {
		i += siluMul256(&g[i], &u[i], n8-i)
		if i < n8 { // a chunk with an input outside (−87, 87)
			siluMulGo(g[i:i+8], u[i:i+8])
			i += 8
		}
	}
	siluMulGo(g[i:], u[i:])
}

// siluMulGo is SiLUMul in Go.
func siluMulGo(g, u []float32) {
	for i, x := range g {
		s := x / (1 + exp32Edge(-x)) // rounded before the multiply, as the AVX2 loop does
		g[i] = s * u[i]
	}
}

// exp32Edge is e^x in float32 over the whole line: expf32 on [−87, 88],
// 0 below, +Inf above, NaN for NaN (the runtime's exp32 before SiLUMul).
func exp32Edge(x float32) float32 {
	switch {
	case x > 88:
		return float32(math.Inf(1))
	case x < -87:
		return 0
	case x != x:
		return x
	}
	return expf32(x)
}
