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
	idx  []int     // candidates (probability > 0), by id
	cand []int     // candidates being sorted by nucleus
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
	if cap(s.prob) < n {
		s.idx, s.cand, s.prob = make([]int, n), make([]int, n), make([]float64, n)
	}
	idx, prob := s.idx[:0], s.prob[:n]
	mx := float64(z[Argmax(z)])
	var total float64
	for i, v := range z {
		prob[i] = math.Exp((float64(v) - mx) / s.p.Temperature)
		if prob[i] > 0 { // NaN and underflowed tokens can never be drawn
			idx = append(idx, i)
			total += prob[i]
		}
	}
	if len(idx) == 0 {
		return Argmax(z)
	}
	if s.filtered(len(idx)) {
		idx = s.nucleus(idx, prob, total)
	}
	return s.draw(idx, prob)
}

// draw picks from idx in proportion to prob.
func (s *Sampler) draw(idx []int, prob []float64) int {
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

// nucleus returns the candidates top-k, top-p and min-p keep, most
// probable first. Sorting a whole 150k vocabulary per token would cost as
// much as a decode step, so it sorts only the tokens at least tau as
// probable as the top one, lowering tau until the cut provably falls
// inside them; the result is what sorting every candidate gives.
func (s *Sampler) nucleus(all []int, prob []float64, total float64) []int {
	for tau := 1e-4; ; tau *= 1e-4 {
		whole := tau < 1e-300
		a := s.cand[:0]
		for _, i := range all {
			if whole || prob[i] >= tau {
				a = append(a, i)
			}
		}
		slices.SortFunc(a, func(x, y int) int {
			if c := cmp.Compare(prob[y], prob[x]); c != 0 {
				return c
			}
			return x - y
		})
		if kept, ok := s.filter(a, prob, total, len(all), whole || len(a) == len(all)); ok {
			return kept
		}
	}
}

// filter applies top-k, top-p and min-p to a, the most probable of n
// candidates sorted by probability (all of them when complete; total is
// their probability sum). ok is false when a cut may fall outside a.
func (s *Sampler) filter(a []int, prob []float64, total float64, n int, complete bool) (kept []int, ok bool) {
	norm := total
	if k := s.p.TopK; k > 0 && k < n {
		if len(a) < k && !complete {
			return nil, false
		}
		a, complete = a[:min(k, len(a))], true
		norm = 0
		for _, i := range a {
			norm += prob[i]
		}
	}
	if s.p.TopP < 1 {
		cut := false
		var cum float64
		for k, i := range a {
			cum += prob[i] / norm
			if cum >= s.p.TopP {
				a, cut = a[:k+1], true
				break
			}
		}
		if !cut && !complete {
			return nil, false
		}
		complete = true
	}
	if s.p.MinP > 0 {
		floor := s.p.MinP * prob[a[0]]
		if !complete && prob[a[len(a)-1]] >= floor {
			return nil, false // tokens below a may still reach the floor
		}
		keep := 1
		for keep < len(a) && prob[a[keep]] >= floor {
			keep++
		}
		a = a[:keep]
	}
	return a, true
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
