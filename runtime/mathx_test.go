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
