package verify

import (
	"fmt"
	"slices"

	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/engine"
	"github.com/cflow-dev/cflow/trace"
)

// KVUnit is the largest relative change storing a key or value in cache
// type t makes to it, the u of docs/TRACE.md's KV cache rules: 0 for f32
// (exact), 2⁻¹¹ for f16 (round to nearest of an 11-bit significand), and
// for q8_0, relative to its 32-value group's largest magnitude, half a
// step of absmax/127 plus the f16 rounding of the scale (1/254 + 2⁻¹¹).
func KVUnit(t engine.KVType) float64 {
	switch t {
	case engine.KVF16:
		return 0x1p-11
	case engine.KVQ8_0:
		return 1.0/254 + 0x1p-11
	}
	return 0
}

// kvGrowth is κ of docs/TRACE.md's KV cache rules: how many times the
// caches' unit changes a trace's norms and logits at most (the derivation
// is there).
const kvGrowth = 8

// KVRule is rule widened for a KV cache of key type k and value type v
// (docs/TRACE.md, "KV cache types"): the norm and logit tolerances grow by
// κ·(u_k + u_v), and the argmax must match only where the reference's
// top-2 gap exceeds twice the widened logit tolerance (two logits each
// moving by it can swap no closer pair). An f32 cache leaves rule as it
// is: the strict check.
func KVRule(rule Rule, k, v engine.KVType) Rule {
	u := KVUnit(k) + KVUnit(v)
	if u == 0 {
		return rule
	}
	r := rule
	r.Name = fmt.Sprintf("%s, %v/%v KV cache", rule.Name, k, v)
	r.NormTol += kvGrowth * u
	if r.LogitTol > 0 {
		r.LogitTol += kvGrowth * u
		r.ArgmaxGapRel = 2 * r.LogitTol
	}
	return r
}

// A routing flip (docs/TRACE.md, "KV cache types"): on a MoE model a
// router near a tie between two experts can change its choice under any
// perturbation; the step's output then jumps by the difference of two
// experts' outputs, which no continuity bound covers, and the keys and
// values that step leaves in the cache carry the jump into every later
// step. From the first flipped step on, a step is held only to a top-32
// overlap of kvFlipOverlap (half the list); at most kvFlipFrac of the
// steps may flip.
const (
	kvFlipOverlap = 16
	kvFlipFrac    = 0.5
)

// ReplayKV is Replay for an engine e with a 16-bit or 8-bit KV cache under
// KVRule(rule, …): beside it strict, the same file with an f32 cache (nil
// on a dense model, where nothing can flip), replays the trace first;
// a step whose experts differ from strict's at some pass is a routing
// flip (RoutingFlip), and it and every later step are judged by the flip
// bar instead of the tolerances.
func ReplayKV(e, strict *engine.Engine, t *trace.Trace, rule Rule) (*Report, error) {
	return replayKV(e, strict, t, rule, nil)
}

// ReplayCache is what cflowc verify runs: ReplayProgress under rule when
// e's KV cache is f32 (the strict check), else ReplayKV under
// KVRule(rule, e's cache types), with an f32-cache twin of e on m (the
// same kernel, threads threads) on a MoE model.
func ReplayCache(e *engine.Engine, m *cflowfmt.Model, threads int, t *trace.Trace, rule Rule, onStep func(done, total int64)) (*Report, error) {
	k, v := e.CacheTypes()
	if k == engine.KVF32 && v == engine.KVF32 {
		return ReplayProgress(e, t, rule, onStep)
	}
	var strict *engine.Engine
	if e.Header().NumExperts > 0 {
		var err error
		if strict, err = engine.New(m, engine.Options{Threads: threads, Kernel: e.Kernel()}); err != nil {
			return nil, err
		}
		defer strict.Close()
	}
	return replayKV(e, strict, t, KVRule(rule, k, v), onStep)
}

func replayKV(e, strict *engine.Engine, t *trace.Trace, rule Rule, onStep func(done, total int64)) (*Report, error) {
	var ref [][][]int
	if strict != nil && e.Header().NumExperts > 0 {
		_, err := replay(strict, t, rule, nil, func(i int, obs *engine.Observation, _ *StepResult) {
			ex := make([][]int, len(obs.Experts))
			for p := range ex {
				ex[p] = slices.Clone(obs.Experts[p])
			}
			ref = append(ref, ex)
		})
		if err != nil {
			return nil, err
		}
	}
	flips := 0
	rep, err := replay(e, t, rule, onStep, func(i int, obs *engine.Observation, r *StepResult) {
		if ref == nil || i >= len(ref) {
			return
		}
		for p := range obs.Experts {
			if !sameSet(obs.Experts[p], ref[i][p]) {
				r.RoutingFlip = true
				flips++
				break
			}
		}
		if flips > 0 {
			r.OK, r.Why = r.Overlap >= kvFlipOverlap, ""
			if !r.OK {
				r.Why = fmt.Sprintf("after a routing flip: top-32 overlap %d < %d", r.Overlap, kvFlipOverlap)
			}
		}
	})
	if err != nil {
		return nil, err
	}
	if n := len(rep.Steps); float64(flips) > kvFlipFrac*float64(n) {
		rep.Pass = false
		rep.Verdict = fmt.Sprintf("FAIL: %d of %d steps flipped an expert choice (at most %.0f%%); %s", flips, n, 100*kvFlipFrac, rep.Verdict)
	} else if flips > 0 {
		rep.Verdict += fmt.Sprintf(" (%d routing flips; steps from the first held to top-32 overlap ≥ %d)", flips, kvFlipOverlap)
	}
	return rep, nil
}

// sameSet reports whether two expert choices hold the same experts (an
// order change between near-equal scores moves the output continuously).
func sameSet(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
