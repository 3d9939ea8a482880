package generate

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkSampleTopP: one top-p draw over a 32k and a 152k vocabulary
// (Llama 2 / Qwen sizes), the per-token cost sampling adds to decode.
func BenchmarkSampleTopP(b *testing.B) {
	for _, n := range []int{32000, 151936} {
		r := rand.New(rand.NewPCG(1, 2))
		z := make([]float32, n)
		for i := range z {
			z[i] = float32(r.NormFloat64() * 3)
		}
		s, _ := NewSampler(Params{Temperature: 0.8, TopP: 0.9, RepeatPenalty: 1})
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				s.Sample(z, nil)
			}
		})
	}
}

// BenchmarkSampleDefault: one draw with the OpenAI API's defaults
// (temperature 1, top-p 1: every logit's exp, no sort) over a 32k
// vocabulary, what a sampled token costs a server's scheduler.
func BenchmarkSampleDefault(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	z := make([]float32, 32000)
	for i := range z {
		z[i] = float32(r.NormFloat64() * 3)
	}
	s, _ := NewSampler(Params{Temperature: 1, TopP: 1, RepeatPenalty: 1})
	for b.Loop() {
		s.Sample(z, nil)
	}
}
