package verify

import (
	"errors"
	"fmt"
	"math"

	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/engine"
	"github.com/cflow-dev/cflow/quant"
	"github.com/cflow-dev/cflow/trace"
)

// ErrMismatch marks a trace that belongs to another model (vocabulary or
// layer count); the CLI refuses it before replaying anything.
var ErrMismatch = errors.New("trace does not match the model")

// StepResult is one row of the verify table.
type StepResult struct {
	Step       int     `json:"step"`
	Position   int     `json:"position"`
	Token      int     `json:"token"`
	NormErr    float64 `json:"norm_rel_err"`
	LogitErr   float64 `json:"logit_rel_err"`
	Argmax     int     `json:"argmax"`
	RefArgmax  int     `json:"ref_argmax"`
	ArgmaxOK   bool    `json:"argmax_match"`
	ArgmaxUsed bool    `json:"argmax_counted"` // false when the reference's top-2 gap is below the rule's
	Overlap    int     `json:"top32_overlap"`
	OK         bool    `json:"ok"`
	Why        string  `json:"why,omitempty"`
	// RoutingFlip: a 16-bit or 8-bit KV cache chose other experts than
	// the f32 cache at this step (ReplayKV).
	RoutingFlip bool `json:"routing_flip,omitempty"`
}

// Report is a whole replay: per-step rows and the verdict.
type Report struct {
	Model   string       `json:"model"`
	Weights string       `json:"weights"`
	Quant   string       `json:"quant"`
	Rule    string       `json:"rule"`
	Steps   []StepResult `json:"steps"`
	Pass    bool         `json:"pass"`
	Verdict string       `json:"verdict"`
}

// CheckModel refuses a trace recorded for a different model: a token or top
// id outside the vocabulary, or a residual-norm count other than the
// model's layers × block iterations.
func CheckModel(h *cflowfmt.Header, passes int, t *trace.Trace) error {
	V := int(h.VocabSize)
	if n := len(t.Steps); n > int(h.MaxSeqLen) {
		return fmt.Errorf("%w: the trace has %d steps, the model's context holds %d positions", ErrMismatch, n, h.MaxSeqLen)
	}
	for i, s := range t.Steps {
		if len(s.ResidualNorms) != passes {
			return fmt.Errorf("%w: step %d has %d residual norms, the model has %d layers/passes", ErrMismatch, i, len(s.ResidualNorms), passes)
		}
		for _, id := range append([]int{s.InputToken, s.Argmax}, s.TopIDs...) {
			if id < 0 || id >= V {
				return fmt.Errorf("%w: step %d mentions token %d, the model's vocabulary has %d", ErrMismatch, i, id, V)
			}
		}
	}
	for _, id := range append(append([]int(nil), t.Prompt...), t.Generated...) {
		if id < 0 || id >= V {
			return fmt.Errorf("%w: token %d outside the model's vocabulary of %d", ErrMismatch, id, V)
		}
	}
	return nil
}

// Replay feeds the trace's tokens (never the engine's own choices) from
// position 0 and judges every step with rule. Parity rules assume an engine
// built with Options.Kernel = Kernel() (activations in f32). Teacher
// forcing makes the whole token list known up front, so it goes through
// the engine's batched prefill: every trace verified is also a check of the
// batched forward.
func Replay(e *engine.Engine, t *trace.Trace, rule Rule) (*Report, error) {
	return ReplayProgress(e, t, rule, nil)
}

// ReplayProgress is Replay calling onStep(done, total) after each step, so
// the CLI can show a bar over a long trace; onStep may be nil.
func ReplayProgress(e *engine.Engine, t *trace.Trace, rule Rule, onStep func(done, total int64)) (*Report, error) {
	return replay(e, t, rule, onStep, nil)
}

// replay is ReplayProgress with adjust, when not nil, seeing each step's
// judgement and observation before the next step (ReplayKV's routing
// flips).
func replay(e *engine.Engine, t *trace.Trace, rule Rule, onStep func(done, total int64), adjust func(i int, obs *engine.Observation, r *StepResult)) (*Report, error) {
	h := e.Header()
	if err := CheckModel(h, e.Passes(), t); err != nil {
		return nil, err
	}
	e.Reset()
	rep := &Report{Model: t.Model, Weights: t.Weights, Quant: quant.Type(h.QuantType).String(), Rule: rule.Name}
	toks := make([]int, len(t.Steps))
	for i := range toks {
		toks[i] = t.Token(i)
	}
	if len(toks) > 0 {
		err := e.PrefillEach(toks, func(i int, logits []float32, obs *engine.Observation) error {
			rep.Steps = append(rep.Steps, judge(i, t.Steps[i], obs, logits, rule))
			if adjust != nil {
				adjust(i, obs, &rep.Steps[i])
			}
			if onStep != nil {
				onStep(int64(i+1), int64(len(toks)))
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("step %d: %w", len(rep.Steps), err)
		}
	}
	rep.finish(rule)
	return rep, nil
}

func rel(a, b, scale float64) float64 {
	if scale == 0 {
		return math.Abs(a - b)
	}
	return math.Abs(a-b) / scale
}

// judge scores one step against the reference step rs.
func judge(i int, rs trace.Step, obs *engine.Observation, logits []float32, rule Rule) StepResult {
	r := StepResult{Step: i, Position: rs.Position, Token: rs.InputToken, RefArgmax: rs.Argmax, OK: true}
	for j, want := range rs.ResidualNorms {
		r.NormErr = math.Max(r.NormErr, rel(obs.ResidualNorms[j], want, math.Abs(want)))
	}
	r.NormErr = math.Max(r.NormErr, rel(obs.PreLMHeadNorm, rs.PreLMHeadNorm, math.Abs(rs.PreLMHeadNorm)))
	var scale float64
	for _, v := range rs.TopLogits {
		scale = math.Max(scale, math.Abs(v))
	}
	for j, id := range rs.TopIDs {
		r.LogitErr = math.Max(r.LogitErr, rel(float64(logits[id]), rs.TopLogits[j], scale))
	}
	top := trace.TopK(logits, len(rs.TopIDs))
	r.Argmax = top[0]
	r.ArgmaxOK = r.Argmax == rs.Argmax
	r.ArgmaxUsed = true
	if gap := rule.ArgmaxGap + rule.ArgmaxGapRel*scale; gap > 0 && len(rs.TopLogits) > 1 && rs.TopLogits[0]-rs.TopLogits[1] <= gap {
		r.ArgmaxUsed = false
	}
	in := map[int]bool{}
	for _, id := range rs.TopIDs {
		in[id] = true
	}
	for _, id := range top {
		if in[id] {
			r.Overlap++
		}
	}
	fail := func(format string, a ...any) {
		r.OK = false
		if r.Why != "" {
			r.Why += "; "
		}
		r.Why += fmt.Sprintf(format, a...)
	}
	if !(r.NormErr <= rule.NormTol) {
		fail("norm error %.3g > %g", r.NormErr, rule.NormTol)
	}
	if rule.LogitTol > 0 && !(r.LogitErr <= rule.LogitTol) {
		fail("logit error %.3g > %g", r.LogitErr, rule.LogitTol)
	}
	if rule.ArgmaxFrac >= 1 && r.ArgmaxUsed && !r.ArgmaxOK {
		fail("argmax %d, reference %d", r.Argmax, rs.Argmax)
	}
	if rule.MinOverlap > 0 && rule.OverlapFrac >= 1 && r.Overlap < rule.MinOverlap {
		fail("top-32 overlap %d < %d", r.Overlap, rule.MinOverlap)
	}
	return r
}

// finish applies the rule's whole-trace fractions and writes the verdict.
func (rep *Report) finish(rule Rule) {
	n := len(rep.Steps)
	var worstNorm, worstLogit float64
	argOK, argN, ovOK, minOv, bad := 0, 0, 0, trace.TopN, 0
	for _, s := range rep.Steps {
		worstNorm, worstLogit = math.Max(worstNorm, s.NormErr), math.Max(worstLogit, s.LogitErr)
		if s.ArgmaxUsed {
			argN++
			if s.ArgmaxOK {
				argOK++
			}
		}
		if s.Overlap >= rule.MinOverlap {
			ovOK++
		}
		minOv = min(minOv, s.Overlap)
		if !s.OK {
			bad++
		}
	}
	var why []string
	if bad > 0 {
		why = append(why, fmt.Sprintf("%d of %d steps out of tolerance", bad, n))
	}
	if rule.ArgmaxFrac > 0 && rule.ArgmaxFrac < 1 && float64(argOK) < rule.ArgmaxFrac*float64(argN) {
		why = append(why, fmt.Sprintf("argmax matched on %d of %d steps, need %.0f%%", argOK, argN, 100*rule.ArgmaxFrac))
	}
	if rule.MinOverlap > 0 && rule.OverlapFrac < 1 && float64(ovOK) < rule.OverlapFrac*float64(n) {
		why = append(why, fmt.Sprintf("top-32 overlap ≥ %d on %d of %d steps, need %.0f%%", rule.MinOverlap, ovOK, n, 100*rule.OverlapFrac))
	}
	rep.Pass = len(why) == 0
	summary := fmt.Sprintf("%d steps of %s (%s trace, %s file; rule: %s): worst norm error %.2g, worst logit error %.2g, argmax %d/%d, min top-32 overlap %d",
		n, rep.Model, rep.Weights, rep.Quant, rep.Rule, worstNorm, worstLogit, argOK, argN, minOv)
	if rep.Pass {
		rep.Verdict = "PASS: " + summary
		return
	}
	rep.Verdict = "FAIL: " + summary + " — " + join(why)
}

func join(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += "; "
		}
		out += x
	}
	return out
}
