// Package analyze computes the report's critical-path bandwidth (§4.5, the
// rule in docs/ARCHITECTURES.md): per pass, the longest of the attention
// stream, the dense stream amortised over dense_delay+1 layers and the top-k
// expert stream amortised over expert_delay+1 layers. It is analytic — bytes,
// not seconds — so it can be pinned in tests and compared with the paper.
package analyze

import (
	"fmt"

	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/engine/plan"
)

// MiB is the unit the spec's figures use (2^20 bytes).
const MiB = 1 << 20

// StreamBytes are one layer's weight bytes by stream; Expert is the top-k
// experts a token actually reads, not the whole bank.
type StreamBytes struct {
	Attn   float64 `json:"attn_bytes"`
	Dense  float64 `json:"dense_bytes"`
	Expert float64 `json:"expert_bytes"`
}

// Pass is one executed layer (a block pass for block-iterated models) with
// its contribution to both critical paths.
type Pass struct {
	Pass     int     `json:"pass"`
	Layer    int     `json:"layer"`
	Kind     string  `json:"kind,omitempty"`
	Naive    float64 `json:"naive_bytes"`
	Critical float64 `json:"critical_bytes"`
	Binding  string  `json:"binding_stream"`
	StreamBytes
}

// Report is what `cflowc analyze` prints; the JSON names are the stable
// interface scripts read.
type Report struct {
	Name        string   `json:"name"`
	Quant       string   `json:"quant"`
	DenseDelay  int      `json:"dense_delay"`
	ExpertDelay int      `json:"expert_delay"`
	BNaive      float64  `json:"b_naive_bytes"`
	BCritical   float64  `json:"b_critical_bytes"`
	Reduction   float64  `json:"reduction"`
	UniqueBytes float64  `json:"unique_bytes"`
	Passes      []Pass   `json:"passes"`
	Notes       []string `json:"notes,omitempty"`
}

// Model is the input of the rule: the per-layer stream bytes and the header
// fields the execution plan needs.
type Model struct {
	Name   string
	Quant  string
	Params plan.Params
	Layers []StreamBytes // indexed by weight layer (block)
	Kinds  []string      // optional per-layer attention kind, for display
}

// Compute applies the rule along the execution plan, so block-iterated
// models count every pass and each pass's streams are the ones the runtime
// actually reads.
func Compute(m Model) (*Report, error) {
	if len(m.Layers) != m.Params.Layers {
		return nil, fmt.Errorf("analyze: %d layer byte rows for %d layers", len(m.Layers), m.Params.Layers)
	}
	steps, err := plan.Build(m.Params)
	if err != nil {
		return nil, err
	}
	r := &Report{Name: m.Name, Quant: m.Quant, DenseDelay: m.Params.DenseDelay, ExpertDelay: m.Params.ExpertDelay}
	seenPass := map[int]bool{}
	for _, st := range steps {
		if st.Stream != plan.Attn || seenPass[st.Pass] {
			continue
		}
		seenPass[st.Pass] = true
		b := m.Layers[st.Layer]
		naive := max(b.Attn, b.Dense, b.Expert)
		dd := b.Dense / float64(m.Params.DenseDelay+1)
		de := b.Expert / float64(m.Params.ExpertDelay+1)
		crit := max(b.Attn, dd, de)
		binding := "attn"
		switch crit {
		case b.Attn:
		case dd:
			binding = "dense"
		default:
			binding = "expert"
		}
		p := Pass{Pass: st.Pass, Layer: st.Layer, Naive: naive, Critical: crit, Binding: binding, StreamBytes: b}
		if st.Layer < len(m.Kinds) {
			p.Kind = m.Kinds[st.Layer]
		}
		r.Passes = append(r.Passes, p)
		r.BNaive += naive
		r.BCritical += crit
	}
	for _, b := range m.Layers {
		r.UniqueBytes += b.Attn + b.Dense + b.Expert
	}
	if r.BCritical > 0 {
		r.Reduction = r.BNaive / r.BCritical
	}
	if m.Params.BlockIterations > 1 {
		r.Notes = append(r.Notes, fmt.Sprintf("%d unique blocks each run %d times: every pass counts, unique weight bytes (top-k experts only) are %.2f MiB",
			m.Params.Layers, m.Params.BlockIterations, r.UniqueBytes/MiB))
	}
	return r, nil
}

// FromHeaderGeometry costs a header's geometry at bytesPerParam (0.5 for the
// report's Q4 arithmetic), counting matrices only — the §4.5 formulas.
func FromHeaderGeometry(name string, h *cflowfmt.Header, blockIters int, kinds []string, bytesPerParam float64) Model {
	d := float64(h.HiddenSize)
	m := Model{Name: name, Quant: fmt.Sprintf("%.3g B/param", bytesPerParam), Params: plan.FromHeader(h, blockIters), Kinds: kinds}
	for l := 0; l < int(h.NumLayers); l++ {
		full := l < len(kinds) && kinds[l] == "full"
		hd := float64(h.Geometry(nil).HeadDimFor(full))
		q := float64(h.NumHeads) * hd
		kv := float64(h.NumKVHeads) * hd
		m.Layers = append(m.Layers, StreamBytes{
			Attn:   (d*q + 2*d*kv + q*d) * bytesPerParam,
			Dense:  3 * d * float64(h.IntermediateSize) * bytesPerParam,
			Expert: float64(h.TopK) * 3 * d * float64(h.ExpertIntermediateSize) * bytesPerParam,
		})
	}
	return m
}
