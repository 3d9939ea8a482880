// Package plan turns a file's header into the execution plan: the order in
// which the runtime reads each layer's streams. The converter lays tiles out
// in this order, the runtime follows it and the analyzer costs it, so the
// three can never disagree. It depends on the header types only.
package plan

import (
	"fmt"

	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/cflowfmt"
)

// Stream is one of a layer's weight streams.
type Stream uint8

const (
	Attn  Stream = iota // attention norm, Q/K/V, O
	Dense               // dense FFN
	MoE                 // router and the selected experts
)

func (s Stream) String() string {
	switch s {
	case Attn:
		return "attn"
	case Dense:
		return "dense"
	case MoE:
		return "moe"
	}
	return fmt.Sprintf("stream(%d)", uint8(s))
}

// Step is one stream read: the weights of Layer, executed in Pass (equal to
// Layer except for block-iterated models, where block b runs in passes
// b·iters … b·iters+iters−1). ZeroInput marks a dense FFN whose input is the
// zero vector (DelayedSum's first dense_delay layers): its output is exactly
// zero, so the runtime may skip the arithmetic, but its tiles still exist.
type Step struct {
	Pass      int
	Layer     int
	Stream    Stream
	ZeroInput bool
}

// Params is what the plan depends on, taken from the header and the
// arch.block_iterations metadata key.
type Params struct {
	Layers          int
	BlockIterations int // ≥ 1
	DenseDelay      int
	ExpertDelay     int
	Combine         archspec.CombineStyle
	HasDense        bool
	HasMoE          bool
}

// FromHeader extracts Params; blockIters < 1 is taken as 1.
func FromHeader(h *cflowfmt.Header, blockIters int) Params {
	return Params{
		Layers:          int(h.NumLayers),
		BlockIterations: max(1, blockIters),
		DenseDelay:      int(h.DenseDelay),
		ExpertDelay:     int(h.ExpertDelay),
		Combine:         h.CombineStyle,
		HasDense:        h.IntermediateSize > 0,
		HasMoE:          h.NumExperts > 0,
	}
}

// Validate rejects delay/style/iteration combinations that have no defined
// semantics or exceed cflowfmt.MaxPasses; the rules are cflowfmt's
// CheckSchedule, which the readers also apply, so Open and the plan agree.
func (p Params) Validate() error {
	return cflowfmt.CheckSchedule(p.Combine, p.Layers, p.BlockIterations, p.DenseDelay, p.ExpertDelay, p.HasDense, p.HasMoE)
}

// Build returns the execution order of one token's stream reads. A stream is
// read as soon as the value it consumes is final (spec, "Execution plan"):
// for a style that delays the dense FFN (DelayedSum) the dense FFN of ℓ+δd
// follows layer ℓ's attention and router, and the FFNs of the first δd
// layers come first.
func Build(p Params) ([]Step, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	var steps []Step
	add := func(pass, layer int, s Stream, zero bool) {
		steps = append(steps, Step{Pass: pass, Layer: layer, Stream: s, ZeroInput: zero})
	}
	if p.Combine.DelaysDense() {
		if p.HasDense {
			for l := 0; l < min(p.DenseDelay, p.Layers); l++ {
				add(l, l, Dense, true)
			}
		}
		for l := 0; l < p.Layers; l++ {
			add(l, l, Attn, false)
			if p.HasMoE {
				add(l, l, MoE, false)
			}
			if p.HasDense && l+p.DenseDelay < p.Layers {
				add(l, l+p.DenseDelay, Dense, false)
			}
		}
		return steps, nil
	}
	for b := 0; b < p.Layers; b++ {
		for i := 0; i < p.BlockIterations; i++ {
			pass := b*p.BlockIterations + i
			add(pass, b, Attn, false)
			if p.HasDense {
				add(pass, b, Dense, false)
			}
			if p.HasMoE {
				add(pass, b, MoE, false)
			}
		}
	}
	return steps, nil
}

// Layout is the file order of the streams: each (layer, stream) at its first
// occurrence in the plan. Block-iterated models re-read a block's region in
// later passes; every other plan reads each stream once.
func Layout(steps []Step) []Step {
	type key struct {
		l int
		s Stream
	}
	seen := map[key]bool{}
	var out []Step
	for _, st := range steps {
		k := key{st.Layer, st.Stream}
		if !seen[k] {
			seen[k] = true
			out = append(out, st)
		}
	}
	return out
}
