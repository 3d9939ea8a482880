package runtime

import (
	"math"
	"testing"
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
