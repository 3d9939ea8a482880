package runtime

import (
	"math"
	"math/rand/v2"
	"sort"
)

// Argmax is the greedy choice: the largest logit, ties to the lower id (the
// traces' rule, so greedy runs and references agree on exact ties).
func Argmax(logits []float32) int {
	best := 0
	for i, v := range logits {
		if v > logits[best] {
			best = i
		}
	}
	return best
}

// Sampler draws the next token: greedy at temperature 0, otherwise from
// softmax(logits/T) restricted to the smallest set of top tokens whose mass
// reaches TopP. A fixed seed makes runs reproducible.
type Sampler struct {
	Temperature float32
	TopP        float32
	rng         *rand.Rand
	idx         []int
	p           []float64
}

// NewSampler returns a sampler; topP ≤ 0 or ≥ 1 disables nucleus filtering.
func NewSampler(temperature, topP float32, seed uint64) *Sampler {
	return &Sampler{Temperature: temperature, TopP: topP, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// Sample picks a token from logits.
func (s *Sampler) Sample(logits []float32) int {
	if s.Temperature <= 0 {
		return Argmax(logits)
	}
	n := len(logits)
	if cap(s.idx) < n {
		s.idx, s.p = make([]int, n), make([]float64, n)
	}
	idx, p := s.idx[:n], s.p[:n]
	mx := float64(logits[Argmax(logits)])
	var sum float64
	for i, z := range logits {
		idx[i] = i
		p[i] = math.Exp((float64(z) - mx) / float64(s.Temperature))
		sum += p[i]
	}
	keep := n
	if s.TopP > 0 && s.TopP < 1 {
		sort.Slice(idx, func(a, b int) bool {
			if p[idx[a]] != p[idx[b]] {
				return p[idx[a]] > p[idx[b]]
			}
			return idx[a] < idx[b]
		})
		var cum float64
		for k, i := range idx {
			cum += p[i] / sum
			if cum >= float64(s.TopP) {
				keep = k + 1
				break
			}
		}
		sum = 0
		for _, i := range idx[:keep] {
			sum += p[i]
		}
	}
	r := s.rng.Float64() * sum
	for _, i := range idx[:keep] {
		r -= p[i]
		if r < 0 {
			return i
		}
	}
	return idx[keep-1]
}
