package generate

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
)

// Argmax is the greedy choice: the largest logit, ties to the lower id (the
// traces' rule, so greedy runs and references agree on exact ties). NaN
// logits are never chosen over a number.
func Argmax(logits []float32) int {
	best := 0
	for i, v := range logits {
		if v > logits[best] || (logits[best] != logits[best] && v == v) {
			best = i
		}
	}
	return best
}

// Sampler draws the next token. The order is HF transformers' logits
// processors: penalties over the recent tokens, then temperature (0 =
// greedy), top-k, top-p, min-p, and one draw from what is left. A fixed
// seed makes the draws reproducible, independently of any other sequence
// decoded alongside.
type Sampler struct {
	p    Params
	rng  *rand.Rand
	z    []float32 // penalized copy of the logits
	idx  []int
	prob []float64
	seen map[int]int
}

// NewSampler validates p and returns its sampler.
func NewSampler(p Params) (*Sampler, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &Sampler{p: p, rng: rand.New(rand.NewPCG(p.Seed, p.Seed^0x9e3779b97f4a7c15))}, nil
}

// Params returns the settings the sampler was built with.
func (s *Sampler) Params() Params { return s.p }

// Sample picks a token from logits (left unchanged); history is the
// sequence so far (prompt and generated), which the penalties read.
func (s *Sampler) Sample(logits []float32, history []int) int {
	z := logits
	if s.p.penalized() {
		z = s.penalize(logits, history)
	}
	if s.p.Greedy() {
		return Argmax(z)
	}
	n := len(z)
	if cap(s.idx) < n {
		s.idx, s.prob = make([]int, n), make([]float64, n)
	}
	idx, prob := s.idx[:0], s.prob[:n]
	mx := float64(z[Argmax(z)])
	for i, v := range z {
		prob[i] = math.Exp((float64(v) - mx) / s.p.Temperature)
		if prob[i] > 0 { // NaN and underflowed tokens can never be drawn
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return Argmax(z)
	}
	if s.filtered(len(idx)) {
		slices.SortFunc(idx, func(a, b int) int {
			if c := cmp.Compare(prob[b], prob[a]); c != 0 {
				return c
			}
			return a - b
		})
		idx = s.filter(idx, prob)
	}
	var sum float64
	for _, i := range idx {
		sum += prob[i]
	}
	r := s.rng.Float64() * sum
	for _, i := range idx {
		r -= prob[i]
		if r < 0 {
			return i
		}
	}
	return idx[len(idx)-1]
}

// filtered reports whether top-k, top-p or min-p can drop a candidate.
func (s *Sampler) filtered(n int) bool {
	return (s.p.TopK > 0 && s.p.TopK < n) || s.p.TopP < 1 || s.p.MinP > 0
}

// filter applies top-k, top-p and min-p to candidates sorted by
// probability, most probable first; at least one survives.
func (s *Sampler) filter(idx []int, prob []float64) []int {
	if k := s.p.TopK; k > 0 && k < len(idx) {
		idx = idx[:k]
	}
	if s.p.TopP < 1 {
		var sum, cum float64
		for _, i := range idx {
			sum += prob[i]
		}
		for k, i := range idx {
			cum += prob[i] / sum
			if cum >= s.p.TopP {
				idx = idx[:k+1]
				break
			}
		}
	}
	if s.p.MinP > 0 {
		floor := s.p.MinP * prob[idx[0]]
		keep := 1
		for keep < len(idx) && prob[idx[keep]] >= floor {
			keep++
		}
		idx = idx[:keep]
	}
	return idx
}

// penalize returns a copy of logits with the repetition, frequency and
// presence penalties applied to the tokens of history's last PenaltyLastN.
func (s *Sampler) penalize(logits []float32, history []int) []float32 {
	s.z = append(s.z[:0], logits...)
	if s.seen == nil {
		s.seen = map[int]int{}
	}
	clear(s.seen)
	for _, t := range history[max(0, len(history)-s.p.PenaltyLastN):] {
		if t >= 0 && t < len(s.z) {
			s.seen[t]++
		}
	}
	rp, fp, pp := float32(s.p.RepeatPenalty), s.p.FrequencyPenalty, s.p.PresencePenalty
	for t, n := range s.seen {
		v := s.z[t]
		if v > 0 {
			v /= rp
		} else {
			v *= rp
		}
		s.z[t] = v - float32(float64(n)*fp+pp)
	}
	return s.z
}
