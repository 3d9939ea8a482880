package runtime

import "testing"

func TestArgmaxTiesLowerID(t *testing.T) {
	if got := Argmax([]float32{1, 3, 3, 2}); got != 1 {
		t.Fatalf("Argmax = %d, want 1", got)
	}
}

// TestSamplerTopP: with top-p 0.5 and one token holding 0.6 of the mass
// (hand-computed: e^1/(e^1+2) ≈ 0.576), only that token can be drawn; at
// temperature 0 the sampler is greedy.
func TestSamplerTopP(t *testing.T) {
	s := NewSampler(1, 0.5, 42)
	for i := 0; i < 200; i++ {
		if got := s.Sample([]float32{0, 1, 0}); got != 1 {
			t.Fatalf("draw %d = %d outside the nucleus", i, got)
		}
	}
	if got := NewSampler(0, 1, 1).Sample([]float32{0.5, 0.25, 0.75}); got != 2 {
		t.Fatalf("greedy = %d", got)
	}
	all := NewSampler(1, 1, 7)
	seen := map[int]bool{}
	for i := 0; i < 300; i++ {
		seen[all.Sample([]float32{0, 0.1, 0.2})] = true
	}
	if len(seen) != 3 {
		t.Fatalf("full sampling drew only %v", seen)
	}
}
