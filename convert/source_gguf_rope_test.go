package convert

import (
	"math"
	"strings"
	"testing"
)

// TestGGUFLlama3Scaling: Llama 3.1's factors (θ 500000, head 128, factor 8,
// low 1, high 4, context 8192), computed by the formula of
// convert_hf_to_gguf.py in f32, come back as those parameters; a vector
// with one factor off the curve is refused naming it.
func TestGGUFLlama3Scaling(t *testing.T) {
	const theta, hd = 500000.0, 128
	fac := make([]float64, hd/2)
	for i := range fac {
		freq := float32(1 / math.Pow(theta, float64(2*i)/hd))
		wave := float64(float32(2*math.Pi) / freq)
		fac[i] = float64(float32(llama3Factor(wave, 8, 1, 4, 8192)))
	}
	rs, err := ggufLlama3Scaling(fac, theta, hd)
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]float64{"factor": 8, "low_freq_factor": 1, "original_max_position_embeddings": 8192} {
		if rs[k] != want {
			t.Errorf("%s %v, want %v", k, rs[k], want)
		}
	}
	if hi := rs["high_freq_factor"].(float64); math.Abs(hi-4) > 1e-4 {
		t.Errorf("high_freq_factor %v, want 4", hi)
	}
	bad := append([]float64(nil), fac...)
	for i := range bad {
		if bad[i] > 1.01 && bad[i] < 7.9 {
			bad[i+1] *= 1.01 // a smooth pair off the curve
			break
		}
	}
	if _, err := ggufLlama3Scaling(bad, theta, hd); err == nil || !strings.Contains(err.Error(), "not a formula cflow implements") && !strings.Contains(err.Error(), "do not follow") {
		t.Errorf("%v, want the factors refused", err)
	}
	if rs, err := ggufLlama3Scaling([]float64{1, 1, 1, 1}, theta, 8); rs != nil || err != nil {
		t.Errorf("all ones: %v %v, want no scaling", rs, err)
	}
}
