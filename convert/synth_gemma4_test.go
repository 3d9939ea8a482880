package convert

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/quant"
	"github.com/cflow-dev/cflow/vflowfmt"
)

// TestSynthesizeGemma4: the tiny gemma4_text geometry writes a checkpoint
// the gemma4_text family converts, with the geometry's per-kind head sizes
// and KV heads (full layers: global ones, K = V, no V tiles), the layer
// pattern (sliding but every sixth and the last), the MLP width, and one
// expert range per expert of the expected Q4_0 size in every layer. The
// benchmark geometry takes the same path at the real sizes.
func TestSynthesizeGemma4(t *testing.T) {
	g, _ := Gemma4GeometryByName("gemma4_tiny")
	dir := t.TempDir()
	ck, out := filepath.Join(dir, "ck"), filepath.Join(dir, "m.cflow")
	if err := SynthesizeGemma4(ck, g, SynthOptions{Seed: 5, Shards: 2}); err != nil {
		t.Fatal(err)
	}
	res, err := Convert(context.Background(), ck, out, Options{Quant: quant.Q4_0, NUMANodes: 1, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Architecture != "gemma4_text" {
		t.Fatalf("architecture %q", res.Architecture)
	}
	f := openChecked(t, out)
	h, md := &f.Header, f.Meta
	if int(h.HiddenSize) != g.Hidden || int(h.NumLayers) != g.Layers || int(h.NumHeads) != g.Heads ||
		int(h.NumKVHeads) != g.KVHeads || int(h.HeadDim) != g.HeadDim || int(h.GlobalHeadDim) != g.GlobalHeadDim ||
		int(md.U32(cflowfmt.KeyGlobalKVHeads, 0)) != g.GlobalKVHeads || md.U32(cflowfmt.KeyKEqV, 0) != 1 ||
		int(h.IntermediateSize) != g.FFN || int(h.NumExperts) != g.Experts || int(h.TopK) != g.TopK ||
		int(h.ExpertIntermediateSize) != g.ExpertFFN || int(h.SlidingWindow) != g.SlidingWindow || int(h.VocabSize) != g.Vocab {
		t.Fatalf("header %+v, global KV heads %d: does not match geometry %+v", *h, md.U32(cflowfmt.KeyGlobalKVHeads, 0), g)
	}
	kinds := md.Bytes(cflowfmt.KeyLayerKinds)
	for l := 0; l < g.Layers; l++ {
		want := byte(archspec.LayerSliding)
		if l == 5 || l == g.Layers-1 {
			want = archspec.LayerFull
		}
		if len(kinds) != g.Layers || kinds[l] != want || g.LayerFull(l) != (want == archspec.LayerFull) {
			t.Fatalf("layer kinds %v, want layer %d kind %d", kinds, l, want)
		}
	}
	for _, lt := range walk(t, f) {
		th := lt.t.TileHeader
		if th.Matrix == archspec.MatV && g.LayerFull(int(th.Layer)) {
			t.Fatalf("full layer %d has a V tile", th.Layer)
		}
		if th.Matrix == archspec.MatK && g.LayerFull(int(th.Layer)) && int(th.RowOffset)+int(th.Rows) > g.GlobalKVHeads*g.GlobalHeadDim {
			t.Fatalf("full layer K tile %+v beyond %d KV heads × %d", th, g.GlobalKVHeads, g.GlobalHeadDim)
		}
	}
	m, err := vflowfmt.OpenModel(out)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
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
