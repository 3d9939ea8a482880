package main

import (
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/cflow-dev/cflow/analyze"
	"github.com/cflow-dev/cflow/convert"
)

// TestGemma4BenchGeometryMatchesPreset: the benchmark checkpoint of
// docs/PERFORMANCE.md (dev synth --geometry gemma4_26b_a4b_6l) has, layer
// by layer, the streams analyze's gemma4_26b_a4b preset gives the real
// 26B-A4B: the same sliding/full kind, attention (q, k, v, o), MLP and
// top-k-of-E expert parameters, read off the tensor list the synthesizer
// writes (at the preset's 0.5 B/param). Only the layer count is cut.
func TestGemma4BenchGeometryMatchesPreset(t *testing.T) {
	g, ok := convert.Gemma4GeometryByName("gemma4_26b_a4b_6l")
	if !ok {
		t.Fatal("no gemma4_26b_a4b_6l geometry")
	}
	ts, err := convert.Gemma4SynthTensors(g, "f16", 1)
	if err != nil {
		t.Fatal(err)
	}
	type streams struct{ attn, dense, bank float64 }
	per := make([]streams, g.Layers)
	layer := regexp.MustCompile(`^model\.layers\.(\d+)\.(self_attn\.[qkvo]_proj|mlp|experts)\.`)
	for _, tt := range ts {
		m := layer.FindStringSubmatch(tt.Name)
		if m == nil {
			continue
		}
		l, _ := strconv.Atoi(m[1])
		n := 1.0
		for _, s := range tt.Shape {
			n *= float64(s)
		}
		switch {
		case strings.HasPrefix(m[2], "self_attn"):
			per[l].attn += n
		case m[2] == "mlp":
			per[l].dense += n
		default:
			per[l].bank += n
		}
	}
	r, err := analyze.Preset("gemma4_26b_a4b")
	if err != nil {
		t.Fatal(err)
	}
	for l, s := range per {
		p := r.Passes[l]
		if want := map[bool]string{true: "full", false: "sliding"}[g.LayerFull(l)]; p.Kind != want {
			t.Errorf("layer %d is %s in the synth, %s in the preset", l, want, p.Kind)
		}
		expert := s.bank * float64(g.TopK) / float64(g.Experts)
		if s.attn/2 != p.Attn || s.dense/2 != p.Dense || expert/2 != p.Expert {
			t.Errorf("layer %d (%s): synth attn %.0f dense %.0f experts %.0f bytes at 0.5 B/param, preset %+v",
				l, p.Kind, s.attn/2, s.dense/2, expert/2, p.StreamBytes)
		}
	}
	if g.Experts != 128 || g.TopK != 8 || g.Layers >= len(r.Passes) {
		t.Errorf("%d layers, %d experts top-%d: want fewer layers than the preset's %d, all 128 experts, top-8", g.Layers, g.Experts, g.TopK, len(r.Passes))
	}
}

// TestDevSynthGemma4: `dev synth` writes a gemma4_text geometry convert
// accepts as gemma4_text.
func TestDevSynthGemma4(t *testing.T) {
	dir := t.TempDir()
	ck := filepath.Join(dir, "ck")
	if code := runApp("dev", "synth", "--geometry", "gemma4_tiny", "--dtype", "bf16", "-o", ck); code != 0 {
		t.Fatalf("synth exit %d", code)
	}
	if code := runApp("convert", "-q", "--model", "gemma4_text", "-o", filepath.Join(dir, "m.cflow"), ck); code != 0 {
		t.Fatalf("convert exit %d", code)
	}
}
