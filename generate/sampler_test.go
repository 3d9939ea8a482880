package generate

import (
	"errors"
	"math"
	"math/rand/v2"
	"sort"
	"testing"
)

func TestArgmaxTiesLowerIDAndSkipsNaN(t *testing.T) {
	if got := Argmax([]float32{1, 3, 3, 2}); got != 1 {
		t.Fatalf("Argmax = %d, want 1", got)
	}
	nan := float32(math.NaN())
	if got := Argmax([]float32{nan, -5, nan}); got != 1 {
		t.Fatalf("Argmax with NaNs = %d, want 1", got)
	}
}

func sampler(t *testing.T, p Params) *Sampler {
	t.Helper()
	s, err := NewSampler(p)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestValidateNamesParameter: every out-of-range value — the NaN
// temperature (which used to return the last vocabulary id), negative
// temperature (used to mean greedy), top-p 2 (used to mean off) — is a
// ParamError naming the parameter.
func TestValidateNamesParameter(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	for _, c := range []struct {
		param string
		set   func(*Params)
	}{
		{"temperature", func(p *Params) { p.Temperature = nan }},
		{"temperature", func(p *Params) { p.Temperature = -0.5 }},
		{"temperature", func(p *Params) { p.Temperature = inf }},
		{"temperature", func(p *Params) { p.Temperature = 2.5 }},
		{"top_p", func(p *Params) { p.TopP = 2 }},
		{"top_p", func(p *Params) { p.TopP = -0.1 }},
		{"top_p", func(p *Params) { p.TopP = nan }},
		{"min_p", func(p *Params) { p.MinP = 1.5 }},
		{"min_p", func(p *Params) { p.MinP = -inf }},
		{"top_k", func(p *Params) { p.TopK = -1 }},
		{"repeat_penalty", func(p *Params) { p.RepeatPenalty = 0 }},
		{"repeat_penalty", func(p *Params) { p.RepeatPenalty = -1 }},
		{"repeat_penalty", func(p *Params) { p.RepeatPenalty = nan }},
		{"repeat_penalty", func(p *Params) { p.RepeatPenalty = 1e-39 }}, // its reciprocal overflows float32
		{"frequency_penalty", func(p *Params) { p.FrequencyPenalty = 2.01 }},
		{"presence_penalty", func(p *Params) { p.PresencePenalty = -inf }},
		{"repeat_last_n", func(p *Params) { p.PenaltyLastN = -1 }},
	} {
		p := DefaultParams()
		c.set(&p)
		_, err := NewSampler(p)
		var pe *ParamError
		if !errors.As(err, &pe) || pe.Param != c.param {
			t.Errorf("%+v: error %v, want a ParamError naming %s", p, err, c.param)
		}
	}
	for _, p := range []Params{DefaultParams(), {Temperature: 0, TopP: 0, RepeatPenalty: 1}, {Temperature: 2, TopP: 1, MinP: 1, TopK: 1 << 30, RepeatPenalty: 100, FrequencyPenalty: -2, PresencePenalty: 2}} {
		if err := p.Validate(); err != nil {
			t.Errorf("%+v rejected: %v", p, err)
		}
	}
}

// draws counts n draws from logits.
func draws(s *Sampler, logits []float32, n int) map[int]int {
	seen := map[int]int{}
	for range n {
		seen[s.Sample(logits, nil)]++
	}
	return seen
}

// TestSamplerFilters: which tokens each filter lets through, from
// hand-computed probabilities.
func TestSamplerFilters(t *testing.T) {
	off := Params{Temperature: 1, TopP: 1, RepeatPenalty: 1}
	// softmax(0,1,0) = (0.212, 0.576, 0.212): top-p 0.5 keeps only id 1.
	p := off
	p.TopP = 0.5
	if seen := draws(sampler(t, p), []float32{0, 1, 0}, 300); len(seen) != 1 || seen[1] != 300 {
		t.Fatalf("top-p 0.5 drew %v", seen)
	}
	p.TopP = 0 // only the most probable token
	if seen := draws(sampler(t, p), []float32{0, 1, 0.5}, 100); seen[1] != 100 {
		t.Fatalf("top-p 0 drew %v", seen)
	}
	// probabilities ∝ 1, 0.5, 0.1, 0.4: min-p 0.3 keeps ids 0, 1, 3.
	lg := []float32{0, float32(math.Log(0.5)), float32(math.Log(0.1)), float32(math.Log(0.4))}
	p = off
	p.MinP = 0.3
	if seen := draws(sampler(t, p), lg, 2000); len(seen) != 3 || seen[2] != 0 {
		t.Fatalf("min-p 0.3 drew %v", seen)
	}
	p = off
	p.TopK = 2
	if seen := draws(sampler(t, p), lg, 2000); len(seen) != 2 || seen[0] == 0 || seen[1] == 0 {
		t.Fatalf("top-k 2 drew %v", seen)
	}
	p = off
	p.Temperature = 0
	if got := sampler(t, p).Sample([]float32{0.5, 0.25, 0.75}, nil); got != 2 {
		t.Fatalf("greedy = %d", got)
	}
}

// TestSamplerDistribution: with filters off, draw frequencies match
// softmax(z/T) computed here in float64 (within 4 standard errors).
func TestSamplerDistribution(t *testing.T) {
	z := []float32{1, 0.2, -0.5, 2, 0}
	for _, temp := range []float64{1, 0.5} {
		s := sampler(t, Params{Temperature: temp, TopP: 1, RepeatPenalty: 1, Seed: 3})
		var sum float64
		want := make([]float64, len(z))
		for i, v := range z {
			want[i] = math.Exp(float64(v) / temp)
			sum += want[i]
		}
		const n = 40000
		seen := draws(s, z, n)
		for i := range z {
			p := want[i] / sum
			got := float64(seen[i]) / n
			if se := math.Sqrt(p * (1 - p) / n); math.Abs(got-p) > 4*se {
				t.Errorf("T=%g: id %d drawn %.4f, softmax %.4f", temp, i, got, p)
			}
		}
	}
}

// TestSamplerSeed: one seed, one stream; another seed, another stream.
func TestSamplerSeed(t *testing.T) {
	z := make([]float32, 50)
	seq := func(seed uint64) []int {
		s := sampler(t, Params{Temperature: 1, TopP: 1, RepeatPenalty: 1, Seed: seed})
		var out []int
		for range 20 {
			out = append(out, s.Sample(z, nil))
		}
		return out
	}
	a, b, c := seq(9), seq(9), seq(10)
	same := func(x, y []int) bool {
		for i := range x {
			if x[i] != y[i] {
				return false
			}
		}
		return true
	}
	if !same(a, b) || same(a, c) {
		t.Fatalf("seed 9 twice: %v / %v; seed 10: %v", a, b, c)
	}
}

// TestSamplerPenalties: greedy choices flipped by each penalty, with the
// arithmetic done by hand in the comments.
func TestSamplerPenalties(t *testing.T) {
	base := Params{Temperature: 0, TopP: 1, RepeatPenalty: 1, PenaltyLastN: 64}
	z := []float32{2, 1.9, -1}
	greedy := func(p Params, hist []int) int { return sampler(t, p).Sample(z, hist) }
	if got := greedy(base, []int{0, 0}); got != 0 {
		t.Fatalf("no penalty: %d", got)
	}
	p := base
	p.RepeatPenalty = 1.1 // 2/1.1 = 1.82 < 1.9
	if got := greedy(p, []int{0}); got != 1 {
		t.Fatalf("repeat penalty: %d", got)
	}
	p.PenaltyLastN = 1 // token 0 is outside the window of one
	if got := greedy(p, []int{0, 2}); got != 0 {
		t.Fatalf("repeat penalty outside the window: %d", got)
	}
	p = base
	p.FrequencyPenalty = 0.06 // one 0: 1.94 > 1.9; two: 1.88 < 1.9
	if got := greedy(p, []int{0}); got != 0 {
		t.Fatalf("frequency penalty, once: %d", got)
	}
	if got := greedy(p, []int{0, 0}); got != 1 {
		t.Fatalf("frequency penalty, twice: %d", got)
	}
	p = base
	p.PresencePenalty = 0.2 // 1.8 < 1.9, however often 0 was seen
	if got := greedy(p, []int{0}); got != 1 {
		t.Fatalf("presence penalty: %d", got)
	}
	p = base
	p.RepeatPenalty = 3 // negative logits are multiplied: −1·3 = −3 stays last
	if got := sampler(t, p).Sample([]float32{-1, -2}, []int{0}); got != 1 {
		t.Fatalf("repeat penalty on a negative logit: %d", got)
	}
	in := []float32{2, 1.9, -1}
	sampler(t, Params{Temperature: 0, TopP: 1, RepeatPenalty: 2, PenaltyLastN: 8}).Sample(in, []int{0, 1, 2})
	if in[0] != 2 || in[1] != 1.9 || in[2] != -1 {
		t.Fatalf("penalties changed the caller's logits: %v", in)
	}
}

// refSample is the sampler's filters done the plain way — every candidate
// sorted — drawing from the same random stream; Sample, which sorts only
// the head of the distribution, must agree with it on every draw.
func refSample(p Params, rng *rand.Rand, z []float32) int {
	mx := float64(z[Argmax(z)])
	prob := make([]float64, len(z))
	var idx []int
	var total float64
	for i, v := range z {
		prob[i] = math.Exp((float64(v) - mx) / p.Temperature)
		if prob[i] > 0 {
			idx = append(idx, i)
			total += prob[i]
		}
	}
	sort.SliceStable(idx, func(a, b int) bool { return prob[idx[a]] > prob[idx[b]] })
	norm := total
	if p.TopK > 0 && p.TopK < len(idx) {
		idx = idx[:p.TopK]
		norm = 0
		for _, i := range idx {
			norm += prob[i]
		}
	}
	if p.TopP < 1 {
		var cum float64
		for k, i := range idx {
			if cum += prob[i] / norm; cum >= p.TopP {
				idx = idx[:k+1]
				break
			}
		}
	}
	if p.MinP > 0 {
		keep := 1
		for keep < len(idx) && prob[idx[keep]] >= p.MinP*prob[idx[0]] {
			keep++
		}
		idx = idx[:keep]
	}
	var sum float64
	for _, i := range idx {
		sum += prob[i]
	}
	r := rng.Float64() * sum
	for _, i := range idx {
		if r -= prob[i]; r < 0 {
			return i
		}
	}
	return idx[len(idx)-1]
}

func TestSamplerMatchesFullSort(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for trial := range 60 {
		n := 50 + r.IntN(1500)
		z := make([]float32, n)
		scale := []float64{0.1, 1, 4, 20}[trial%4]
		for i := range z {
			z[i] = float32(math.Round(r.NormFloat64()*scale*4) / 4) // quarter steps: many exact ties
		}
		p := Params{Temperature: []float64{0.3, 0.8, 1, 2}[r.IntN(4)], TopP: 1, RepeatPenalty: 1, Seed: uint64(trial)}
		switch trial % 5 {
		case 0:
			p.TopP = []float64{0, 0.5, 0.9, 0.999999}[r.IntN(4)]
		case 1:
			p.TopK = 1 + r.IntN(200)
		case 2:
			p.MinP = []float64{0.001, 0.05, 0.5}[r.IntN(3)]
		case 3:
			p.TopK, p.TopP, p.MinP = 1+r.IntN(n), r.Float64(), r.Float64()*0.1
		case 4:
			p.TopP, p.MinP = 0.95, 1e-6
		}
		s := sampler(t, p)
		ref := rand.New(rand.NewPCG(p.Seed, p.Seed^0x9e3779b97f4a7c15))
		for d := range 8 {
			if got, want := s.Sample(z, nil), refSample(p, ref, z); got != want {
				t.Fatalf("trial %d %+v draw %d: %d, full sort %d", trial, p, d, got, want)
			}
		}
	}
}
