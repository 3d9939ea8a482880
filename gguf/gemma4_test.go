package gguf_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/cflow-dev/cflow/convert"
	"github.com/cflow-dev/cflow/gguf"
	"github.com/cflow-dev/cflow/quant"
	"github.com/cflow-dev/cflow/vflowfmt"
)

// TestGemma4Export: the 26B-A4B-shaped fixture exported under llama.cpp's
// gemma4 names and keys (conversion/gemma.py, src/models/gemma4.cpp):
// per-layer KV heads and SWA flags as arrays, per-kind head sizes, the
// full layers' proportional RoPE as rope_freqs (1 on the 4 rotated pairs
// of 16, 1e30 on the rest), no V on the K=V full layer, the MLP beside the
// expert bank, the scales and the layer scalar.
func TestGemma4Export(t *testing.T) {
	dir := filepath.Join(repoRoot(t), "golden", "gemma4_text", "fixtures", "gemma4_text")
	if _, err := os.Stat(dir); err != nil {
		t.Skip("no golden/gemma4_text fixture")
	}
	tmp := t.TempDir()
	cf := filepath.Join(tmp, "g.cflow")
	if _, err := convert.Convert(context.Background(), dir, cf, convert.Options{Quant: quant.F32, NUMANodes: 1}); err != nil {
		t.Fatal(err)
	}
	m, err := vflowfmt.OpenModel(cf)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	out := filepath.Join(tmp, "g.gguf")
	if err := gguf.Write(m, out, gguf.Options{}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	g, err := parseGGUF(b)
	if err != nil {
		t.Fatal(err)
	}
	if a := kvStr(t, g, "general.architecture"); a != "gemma4" {
		t.Fatalf("architecture %q", a)
	}
	for k, want := range map[string]string{
		"gemma4.attention.head_count_kv":          "[2 2 1]",
		"gemma4.attention.sliding_window_pattern": "[true true false]",
	} {
		if got := fmt.Sprint(g.kv[k].value); got != want {
			t.Errorf("%s = %s, want %s", k, got, want)
		}
	}
	for k, want := range map[string]uint32{"gemma4.attention.key_length": 32, "gemma4.attention.key_length_swa": 16,
		"gemma4.rope.dimension_count": 32, "gemma4.attention.sliding_window": 4, "gemma4.expert_count": 128,
		"gemma4.expert_used_count": 8, "gemma4.feed_forward_length": 72, "gemma4.expert_feed_forward_length": 4} {
		if v := kvU32(t, g, k); v != want {
			t.Errorf("%s = %d, want %d", k, v, want)
		}
	}
	rf := g.byName["rope_freqs.weight"]
	if rf == nil {
		t.Fatal("no rope_freqs.weight")
	}
	for i, f := range dequant(0, rf.data, 16) {
		if want := map[bool]float32{true: 1, false: 1e30}[i < 4]; f != want {
			t.Errorf("rope_freqs[%d] = %g, want %g", i, f, want)
		}
	}
	if g.byName["blk.2.attn_v.weight"] != nil || g.byName["blk.1.attn_v.weight"] == nil {
		t.Error("the K=V full layer 2 must have no attn_v, sliding layer 1 must")
	}
	for _, n := range []string{"blk.0.ffn_gate.weight", "blk.0.ffn_gate_exps.weight", "blk.0.ffn_gate_inp.scale", "blk.0.ffn_down_exps.scale",
		"blk.0.pre_ffw_norm_2.weight", "blk.0.post_ffw_norm_1.weight", "blk.0.post_ffw_norm_2.weight", "blk.0.post_ffw_norm.weight",
		"blk.0.layer_output_scale.weight", "blk.2.attn_q_norm.weight"} {
		if g.byName[n] == nil {
			t.Errorf("missing %s", n)
		}
	}
	if d := g.byName["blk.2.attn_q_norm.weight"].dims; len(d) != 1 || d[0] != 32 {
		t.Errorf("full layer q_norm dims %v, want [32]", d)
	}
}
