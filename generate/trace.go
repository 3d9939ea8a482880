package generate

import (
	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/engine"
	"github.com/cflow-dev/cflow/quant"
	"github.com/cflow-dev/cflow/trace"
)

// Trace records a run as a reference trace (cflow-trace/1, TRACE.md), the
// file run --trace-out writes and verify replays.
type Trace struct{ trace.Trace }

// NewTrace starts a trace of a run of m from prompt.
func NewTrace(m *cflowfmt.Model, prompt []int) *Trace {
	return &Trace{trace.Trace{Schema: trace.Schema,
		Model:        m.Meta.String(cflowfmt.KeyName, m.Meta.String(cflowfmt.KeyArchitecture, "")),
		Architecture: m.Meta.String(cflowfmt.KeyArchitecture, ""),
		Weights:      TraceWeights(m.Header.QuantType),
		Prompt:       prompt, Generated: []int{}}}
}

// TraceWeights names what a trace of a file of quant type q was computed
// with (a quantized file's values are exactly the *_replay weights).
func TraceWeights(q quant.Type) string {
	switch q {
	case quant.Q4_0:
		return "q4_replay"
	case quant.Q8_0:
		return "q8_replay"
	}
	return "f32"
}

func (t *Trace) record(pos, tok int, obs *engine.Observation, logits []float32) {
	t.Steps = append(t.Steps, trace.Record(pos, tok, obs.ResidualNorms, obs.PreLMHeadNorm, logits))
}
