package quant

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSiLUMul checks SiLUMul against its Go loop bit for bit (the AVX2
// loop must round as the scalar code does, and hand chunks with inputs
// outside (−87, 87), infinities and NaN to Go) and against float64
// x/(1+e^−x)·u (expf's 2 ulp plus the divide and multiply).
func TestSiLUMul(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 1))
	edges := []float32{-87, 87, -86.99, 86.99, -88.5, 88.5, -100, 100, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 0}
	for n := 1; n <= 300; n++ {
		g := make([]float32, n)
		u := make([]float32, n)
		for i := range g {
			g[i] = float32(rng.NormFloat64() * 6)
			u[i] = float32(rng.NormFloat64())
			if rng.IntN(40) == 0 {
				g[i] = edges[rng.IntN(len(edges))]
			}
		}
		want := append([]float32(nil), g...)
		siluMulGo(want, u)
		in := append([]float32(nil), g...)
		SiLUMul(g, u)
		for i := range g {
			if math.Float32bits(g[i]) != math.Float32bits(want[i]) {
				t.Fatalf("n %d: silu(%v)·%v = %v, Go loop %v", n, in[i], u[i], g[i], want[i])
			}
			x := float64(in[i])
			if math.Abs(x) > 80 || x != x {
				continue
			}
			ref := x / (1 + math.Exp(-x)) * float64(u[i])
			if d := math.Abs(float64(g[i]) - ref); d > 1e-6*math.Abs(ref)+1e-30 {
				t.Fatalf("n %d: silu(%v)·%v = %v, float64 %v", n, in[i], u[i], g[i], ref)
			}
		}
	}
}
