package runtime

import (
	"math"
	"testing"

	"github.com/cflow-dev/cflow/quant"
)

// TestExp32: exp32 is within 2 ulp (3e-7 relative) of float64 math.Exp
// across its finite range, 0 below −87, +Inf above 88, NaN for NaN.
func TestExp32(t *testing.T) {
	var worst float64
	for i := 0; i <= 1_000_000; i++ {
		x := float32(-87 + 175*float64(i)/1e6)
		want := math.Exp(float64(x))
		got := float64(exp32(x))
		rel := math.Abs(got-want) / want
		worst = max(worst, rel)
		if rel > 3e-7 {
			t.Fatalf("exp32(%v) = %v, math.Exp %v (relative %.3g)", x, got, want, rel)
		}
	}
	t.Logf("worst relative error %.3g", worst)
	if exp32(-100) != 0 || !math.IsInf(float64(exp32(100)), 1) || !math.IsNaN(float64(exp32(float32(math.NaN())))) {
		t.Errorf("exp32 edges: %v %v %v", exp32(-100), exp32(100), exp32(float32(math.NaN())))
	}
	if exp32(0) != 1 {
		t.Errorf("exp32(0) = %v", exp32(0))
	}
}

// TestExpScoresIsExpCore: attention on the multi-vector path takes its
// softmax numerators from quant.ExpScores, the scalar path from expCore;
// a head's output must not depend on which one ran, so the two agree to
// the bit over the whole range a shifted score takes (x ≤ 0 down to the
// −87 cut, and past it to 0).
func TestExpScoresIsExpCore(t *testing.T) {
	const n = 1 << 20
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(-90 * float64(i) / n)
	}
	s[0] = 0 // the max: every x is s[i]
	p := make([]float32, n)
	quant.ExpScores(s, 1, p)
	for i, x := range s {
		var want float32
		if x >= -87 {
			want = expCore(x)
		}
		if math.Float32bits(p[i]) != math.Float32bits(want) {
			t.Fatalf("x = %v: ExpScores %v, expCore %v", x, p[i], want)
		}
	}
}

// TestSiLUMulIsScalar: glu takes silu from quant.SiLUMul; it must equal
// the Go loop built on this package's exp32 to the bit, edges included.
func TestSiLUMulIsScalar(t *testing.T) {
	var g, u []float32
	for i := 0; i <= 400_000; i++ {
		g = append(g, float32(-100+200*float64(i)/400_000))
		u = append(u, float32(1+i%7))
	}
	g = append(g, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), -87, 87, -88, 88, 0)
	u = append(u, 1, 1, 1, 1, 1, 1, 1, 1)
	want := append([]float32(nil), g...)
	siluMulScalar(want, u)
	in := append([]float32(nil), g...)
	quant.SiLUMul(g, u)
	for i := range g {
		if math.Float32bits(g[i]) != math.Float32bits(want[i]) {
			t.Fatalf("silu(%v)·%v: SiLUMul %v, scalar %v", in[i], u[i], g[i], want[i])
		}
	}
}

// siluMulScalar is glu's SiLU in plain Go, as it ran before
// quant.SiLUMul: the truth TestSiLUMulIsScalar holds SiLUMul to.
func siluMulScalar(g, u []float32) {
	for i, x := range g {
		// silu with exp32's core inlined where exp32 is that core.
		var s float32
		if x > -87 && x < 87 {
			s = x / (1 + expCore(-x))
		} else {
			s = silu(x)
		}
		g[i] = s * u[i]
	}
}

func silu(x float32) float32 { return x / (1 + exp32(-x)) }

// exp32 is e^x in float32 to within 2 ulp (Cephes' expf: x = n·ln2 + r
// with |r| ≤ ln2/2, a degree-6 polynomial for e^r, 2^n by exponent bits).
// Below −87 it returns 0 (e^x is then under 2^−125, well past what a
// float32 sum it joins can hold); above 88, +Inf. It was the softmax's and
// SiLU's exp until quant.ExpScores and quant.SiLUMul took over (the same
// operations on 8 lanes); the tests here hold those to it bit for bit.
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
