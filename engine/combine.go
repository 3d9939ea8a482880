package engine

import (
	"fmt"

	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/engine/plan"
)

// combiner is one combine style's residual arithmetic for one sequence.
// The heavy streams — attention, dense FFN, router and experts — are the
// engine's, and read the residual the style's facts name
// (archspec.CombineStyle.AttentionReads, FFNReads, RouterReads); a combiner
// says only what happens around them, in plain vector arithmetic on the
// sequence state it is handed. So runPlan (step.go) is one loop for every
// style, and a batched caller can run each heavy stream over many columns
// and call the combiner per column. New picks one per engine (newCombiner,
// the only place the runtime names a style); each lives in its own small
// file, combine_*.go.
type combiner interface {
	// preAttention runs before pass's attention reads its input
	// (AsyncExperts adds the experts targeted at the pass to x_in).
	preAttention(w *worker, s *seq, pass int)
	// postAttention folds the attention output s.m into the residual
	// where the style does so at once (x_mid = x_in + m).
	postAttention(s *seq)
	// denseOut is the buffer dense step st writes: s.f, added by this
	// pass's combine, or a delayed slot.
	denseOut(s *seq, st plan.Step) []float32
	// combine forms x_out(pass) from the pass's outputs and returns the
	// vector whose ‖·‖₂ the trace records for the pass.
	combine(w *worker, s *seq, pass int) []float32
	// finish leaves the final residual in s.x after the last pass.
	finish(w *worker, s *seq)
}

// newCombiner returns the combiner for h's combine style.
func newCombiner(h *cflowfmt.Header, md *cflowfmt.Metadata) (combiner, error) {
	switch h.CombineStyle {
	case archspec.PreNorm:
		return preNorm{}, nil
	case archspec.ParallelSqrt2:
		return parallelSqrt2{}, nil
	case archspec.DelayedSum:
		return delayedSum{}, nil
	case archspec.AsyncExperts:
		return asyncExperts{}, nil
	case archspec.DecoupledStreams:
		return newDecoupledStreams(md)
	case archspec.PipelineRegisters:
		return pipelineRegisters{}, nil
	}
	return nil, fmt.Errorf("runtime: combine style %s is not implemented", h.CombineStyle)
}

// basicStyle is what most styles share: nothing before attention, the
// dense FFN's output in s.f for this pass's combine, and the final residual
// left in s.x by the last combine.
type basicStyle struct{}

func (basicStyle) preAttention(*worker, *seq, int) {}

func (basicStyle) denseOut(s *seq, _ plan.Step) []float32 {
	s.hasF = true
	return s.f
}

func (basicStyle) finish(*worker, *seq) {}

// withMid is the post-attention step of the styles that form
// x_mid = x_in + Attn(Na(x_in)).
type withMid struct{}

func (withMid) postAttention(s *seq) {
	for i := range s.xmid {
		s.xmid[i] = s.x[i] + s.m[i]
	}
}

// noMid is that of the styles that keep s.m for their combine.
type noMid struct{}

func (noMid) postAttention(*seq) {}

// ffnInput is the normalized input the dense FFN and MoE of this pass
// share, Nf of the residual the style's FFN reads, computed once per pass.
func (w *worker) ffnInput(s *seq, lp *layerPlan) []float32 {
	if s.hasH {
		return s.h
	}
	rmsNorm(s.h, s.residual(w.h.CombineStyle.FFNReads()), lp.ffnNorm, w.eps)
	s.hasH = true
	return s.h
}

// experts runs pass's router and selected experts on the style's router
// input, then queues the output for its injection layer (styles that defer
// experts) or leaves it in s.e for this pass's combine.
func (w *worker) experts(s *seq, pass int, lp *layerPlan) error {
	style := w.h.CombineStyle
	in := w.bf.hn
	if style.OwnMoENorm() {
		rmsNorm(in, s.residual(style.RouterReads()), lp.moeNorm, w.eps)
	} else {
		in = w.ffnInput(s, lp)
	}
	routerIn, expertIn := w.moeInputs(lp, s.residual(style.FFNReads()))
	if expertIn != nil {
		in = expertIn
	}
	if err := w.moe(pass, lp, routerIn, in, s.e); err != nil {
		return err
	}
	if lp.feat.postMoE != nil {
		rmsNorm(s.e, s.e, lp.feat.postMoE, w.eps)
	}
	if style.DefersExperts() {
		w.enqueue(s, style.InjectionLayer(pass, int(w.h.ExpertDelay), int(w.h.NumLayers)), s.e)
	} else {
		s.hasE = true
	}
	return nil
}
