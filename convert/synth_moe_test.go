package convert

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/quant"
	"github.com/cflow-dev/cflow/vflowfmt"
)

// TestSynthesizeMoE: the tiny MoE geometry converts as arch2_4_combined
// with the geometry's experts, top-k, widths and delays, and every layer
// has an expert range per expert of the expected Q4_0 size.
func TestSynthesizeMoE(t *testing.T) {
	g, _ := MoEGeometryByName("tiny")
	dir := t.TempDir()
	ck, out := filepath.Join(dir, "ck"), filepath.Join(dir, "m.cflow")
	if err := SynthesizeMoE(ck, g, SynthOptions{Seed: 3}); err != nil {
		t.Fatal(err)
	}
	if _, err := Convert(context.Background(), ck, out, Options{Quant: quant.Q4_0, NUMANodes: 1, Workers: 1}); err != nil {
		t.Fatal(err)
	}
	m, err := vflowfmt.OpenModel(out)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	h := m.Header
	if h.CombineStyle != archspec.DelayedSum || int(h.NumExperts) != g.Experts || int(h.TopK) != g.TopK ||
		int(h.ExpertIntermediateSize) != g.ExpertFFN || int(h.DenseDelay) != g.DenseDelay || int(h.ExpertDelay) != g.ExpertDelay ||
		int(h.HiddenSize) != g.Hidden || int(h.NumLayers) != g.Layers || int(h.IntermediateSize) != g.FFN {
		t.Fatalf("header %+v does not match geometry %+v", h, g)
	}
	// gate, up: ExpertFFN×Hidden; down: Hidden×ExpertFFN; Q4_0 is 18 bytes
	// per 32 weights plus a 16-byte header per ≤128×256 tile.
	params := 3 * g.ExpertFFN * g.Hidden
	for l, ly := range m.Layers {
		if len(ly.Experts) != g.Experts {
			t.Fatalf("layer %d has %d expert ranges", l, len(ly.Experts))
		}
		for e, r := range ly.Experts {
			if min := int64(params / 32 * 18); r.Length < min || r.Length > min+min/8 {
				t.Fatalf("layer %d expert %d range %d bytes, want about %d", l, e, r.Length, min)
			}
		}
	}
}
