package runtime

import (
	"fmt"

	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/runtime/plan"
)

// combiner is one combine style's residual arithmetic: what a pass's
// attention feeds on, where its dense FFN writes, and how the pass's
// outputs form x_out. New picks one per engine from the header (newCombiner,
// the only place the runtime names a style); runPlan calls it in plan order.
// Each style lives in its own small file (combine_*.go) and touches only
// the sequence state it is handed, so one engine can step several
// sequences. The MoE step is the same for every style (experts, below): it
// asks cflowfmt.CombineStyle what the router reads and where the output goes.
type combiner interface {
	// attend runs pass's attention (after anything the style injects
	// before it).
	attend(e *Engine, s *seq, pass int, lp *layerPlan)
	// dense runs the dense FFN step st.
	dense(e *Engine, s *seq, st plan.Step, lp *layerPlan)
	// combine forms x_out(pass) from the pass's outputs and returns the
	// vector whose ‖·‖₂ the trace records for the pass.
	combine(e *Engine, s *seq, pass int) []float32
	// finish leaves the final residual in s.x after the last pass.
	finish(e *Engine, s *seq)
}

// newCombiner returns the combiner for h's combine style.
func newCombiner(h *cflowfmt.Header, md *cflowfmt.Metadata) (combiner, error) {
	switch h.CombineStyle {
	case cflowfmt.PreNorm:
		return preNorm{}, nil
	case cflowfmt.ParallelSqrt2:
		return parallelSqrt2{}, nil
	case cflowfmt.DelayedSum:
		return delayedSum{}, nil
	case cflowfmt.AsyncExperts:
		return asyncExperts{}, nil
	case cflowfmt.DecoupledStreams:
		return newDecoupledStreams(md)
	case cflowfmt.PipelineRegisters:
		return pipelineRegisters{}, nil
	}
	return nil, fmt.Errorf("runtime: combine style %s is not implemented", h.CombineStyle)
}

// attendOn runs pass's attention on the residual the style's attention
// reads, into s.m.
func (e *Engine) attendOn(s *seq, pass int, lp *layerPlan) {
	e.attention(s, pass, lp, s.residual(e.h.CombineStyle.AttentionReads()), s.m)
}

// midAttention is the attention of the styles that form
// x_mid = x_in + Attn(Na(x_in)).
type midAttention struct{}

func (midAttention) attend(e *Engine, s *seq, pass int, lp *layerPlan) {
	e.attendOn(s, pass, lp)
	for i := range s.xmid {
		s.xmid[i] = s.x[i] + s.m[i]
	}
}

// ffnNow is the dense FFN of the styles whose FFN reads a value of its own
// pass: FFN(Nf(·)) into s.f, which the pass's combine adds.
type ffnNow struct{}

func (ffnNow) dense(e *Engine, s *seq, _ plan.Step, lp *layerPlan) {
	e.ffn(lp, e.ffnInput(s, lp), s.f)
	s.hasF = true
}

// doneAtLastPass is the finish of styles whose last combine leaves the final
// residual in s.x.
type doneAtLastPass struct{}

func (doneAtLastPass) finish(*Engine, *seq) {}

// ffnInput is the normalized input the dense FFN and MoE of this pass
// share, Nf of the residual the style's FFN reads, computed once per pass.
func (e *Engine) ffnInput(s *seq, lp *layerPlan) []float32 {
	if s.hasH {
		return s.h
	}
	rmsNorm(s.h, s.residual(e.h.CombineStyle.FFNReads()), lp.ffnNorm, e.eps)
	s.hasH = true
	return s.h
}

// experts runs pass's router and selected experts on the style's router
// input, then queues the output for its injection layer (styles that defer
// experts) or leaves it in s.e for this pass's combine.
func (e *Engine) experts(s *seq, pass int, lp *layerPlan) error {
	style := e.h.CombineStyle
	in := e.bf.hn
	if style.OwnMoENorm() {
		rmsNorm(in, s.residual(style.RouterReads()), lp.moeNorm, e.eps)
	} else {
		in = e.ffnInput(s, lp)
	}
	if err := e.moe(pass, lp, in, s.e); err != nil {
		return err
	}
	if style.DefersExperts() {
		e.enqueue(s, style.InjectionLayer(pass, int(e.h.ExpertDelay), int(e.h.NumLayers)), s.e)
	} else {
		s.hasE = true
	}
	return nil
}
