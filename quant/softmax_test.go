package quant

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestExpScores checks ExpScores against the scalar loop it replaces (bit
// for bit: the AVX2 loop must do expf32's operations one for one) and
// against math.Exp in float64 (expf's 2 ulp, plus the rounding of the
// shifted exponent), over every tail length and scores reaching below the
// −87 cut.
func TestExpScores(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 9))
	for n := 1; n <= 300; n++ {
		s := make([]float32, n)
		for i := range s {
			s[i] = float32(rng.NormFloat64() * 20)
			if rng.IntN(10) == 0 {
				s[i] = -1e4 * rng.Float32() // far below the max: p must be 0
			}
		}
		scale := float32(0.125 + rng.Float64())
		p := make([]float32, n+3)
		p[n] = 7 // past len(s): left alone
		mx := ExpScores(s, scale, p)
		want := float32(math.Inf(-1))
		for _, v := range s {
			want = max(want, v*scale)
		}
		if mx != want {
			t.Fatalf("n %d: max %v, want %v", n, mx, want)
		}
		for i, v := range s {
			var w float32
			x := v*scale - mx
			if x >= -87 {
				w = expf32(x)
			}
			if math.Float32bits(p[i]) != math.Float32bits(w) {
				t.Fatalf("n %d: p[%d] = %v (x %v), scalar %v", n, i, p[i], x, w)
			}
			e := math.Exp(float64(x))
			if x < -87 {
				e = 0
			}
			if d := math.Abs(float64(p[i]) - e); d > 3e-7*e {
				t.Fatalf("n %d: p[%d] = %v, e^%v = %v", n, i, p[i], x, e)
			}
		}
		if p[n] != 7 {
			t.Fatalf("n %d: wrote past the scores", n)
		}
	}
}
