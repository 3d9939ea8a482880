package convert

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/cflowfmt"
)

const gemma4Fixtures = "../golden/gemma4_text/fixtures"

// gemma4Copy links golden's gemma4_text fixture into a temp dir with its
// config edited.
func gemma4Copy(t *testing.T, name string, edit func(map[string]any)) string {
	t.Helper()
	src := filepath.Join(gemma4Fixtures, name)
	b, err := os.ReadFile(filepath.Join(src, "config.json"))
	if err != nil {
		t.Skipf("golden/gemma4_text fixture %s not present: %v", name, err)
	}
	cfg := map[string]any{}
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	edit(cfg)
	dir := filepath.Join(t.TempDir(), name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(filepath.Join(src, "model.safetensors"))
	if err := os.Symlink(abs, filepath.Join(dir, "model.safetensors")); err != nil {
		t.Fatal(err)
	}
	nb, _ := json.Marshal(cfg)
	if err := os.WriteFile(filepath.Join(dir, "config.json"), nb, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestGemma4TextRefusals: what the 26B-A4B does not use and cflow does not
// implement is refused naming the key (issue 20 item 3), with no output.
func TestGemma4TextRefusals(t *testing.T) {
	for _, c := range []struct {
		edit  func(map[string]any)
		wants []string
	}{
		{func(c map[string]any) { delete(c, "hidden_size_per_layer_input") }, []string{"hidden_size_per_layer_input", "missing"}},
		{func(c map[string]any) { c["hidden_size_per_layer_input"] = 256 }, []string{"hidden_size_per_layer_input", "256"}},
		{func(c map[string]any) { c["num_kv_shared_layers"] = 1 }, []string{"num_kv_shared_layers", "1"}},
		{func(c map[string]any) { c["use_double_wide_mlp"] = true }, []string{"use_double_wide_mlp"}},
		{func(c map[string]any) { c["use_bidirectional_attention"] = "all" }, []string{"use_bidirectional_attention", "all"}},
		{func(c map[string]any) {
			c["per_layer_config"] = map[string]any{"2": map[string]any{"head_dim": 32, "num_key_value_heads": 1}}
		}, []string{"per_layer_config"}},
		{func(c map[string]any) {
			c["rope_parameters"] = map[string]any{"full_attention": map[string]any{"rope_type": "yarn", "rope_theta": 1e6}}
		}, []string{"rope_parameters.full_attention.rope_type", "yarn"}},
	} {
		dir := gemma4Copy(t, "gemma4_text", c.edit)
		convertErr(t, dir, Options{}, c.wants...)
	}
}

// TestGemma4TextLayout: the fused banks become 128 per-expert matrices, the
// full layer has the global head dim, one KV head and no V tiles, and the
// last layer is full whatever layer_types says; the multimodal checkpoint
// converts its text decoder with a note naming the skipped tower.
func TestGemma4TextLayout(t *testing.T) {
	dir := gemma4Copy(t, "gemma4_text", func(c map[string]any) {
		c["layer_types"] = []string{"sliding_attention", "sliding_attention", "sliding_attention"}
	})
	out := filepath.Join(t.TempDir(), "g.cflow")
	if _, err := Convert(context.Background(), dir, out, Options{NUMANodes: 1}); err != nil {
		t.Fatal(err)
	}
	f := openChecked(t, out)
	h, md := &f.Header, f.Meta
	if k := md.Bytes(cflowfmt.KeyLayerKinds); len(k) != 3 || k[2] != archspec.LayerFull {
		t.Fatalf("layer kinds %v: the last layer must be full", k)
	}
	if h.NumExperts != 128 || h.TopK != 8 || md.U32(cflowfmt.KeyGlobalKVHeads, 0) != 1 || md.U32(cflowfmt.KeyKEqV, 0) != 1 {
		t.Fatalf("experts %d top-%d global KV heads %d k=v %d", h.NumExperts, h.TopK, md.U32(cflowfmt.KeyGlobalKVHeads, 0), md.U32(cflowfmt.KeyKEqV, 0))
	}
	for _, lt := range walk(t, f) {
		th := lt.t.TileHeader
		if th.Layer == 2 && th.Matrix == archspec.MatV {
			t.Fatalf("full layer has a V tile %+v", th)
		}
		if th.Layer == 2 && th.Matrix == archspec.MatK && int(th.RowOffset)+int(th.Rows) > 32 {
			t.Fatalf("full layer K tile %+v beyond 1 KV head × 32", th)
		}
	}
	mm := filepath.Join(gemma4Fixtures, "gemma4_mm")
	if _, err := os.Stat(mm); err != nil {
		t.Skip("no gemma4_mm fixture")
	}
	res, err := Convert(context.Background(), mm, filepath.Join(t.TempDir(), "mm.vflow"), Options{NUMANodes: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Notes) != 1 || res.Architecture != "gemma4_text" {
		t.Fatalf("multimodal: architecture %s, notes %q", res.Architecture, res.Notes)
	}
}

// TestGemma4FusedBankNaN: a NaN inside a fused expert bank is refused
// naming the bank and the expert, like any other weight.
func TestGemma4FusedBankNaN(t *testing.T) {
	dir := gemma4Copy(t, "gemma4_text", func(map[string]any) {})
	st := filepath.Join(dir, "model.safetensors")
	b, err := os.ReadFile(st)
	if err != nil {
		t.Fatal(err)
	}
	n := int(binary.LittleEndian.Uint64(b))
	var hdr map[string]struct {
		Offsets [2]int `json:"data_offsets"`
	}
	if err := json.Unmarshal(b[8:8+n], &hdr); err != nil {
		t.Fatal(err)
	}
	e := hdr["model.layers.1.experts.gate_up_proj"]
	// Expert 3 of [128, 8, 40] bf16, up half (rows 4..7), row 5 column 2.
	off := 8 + n + e.Offsets[0] + ((3*8+5)*40+2)*2
	binary.LittleEndian.PutUint16(b[off:], 0x7fc0)
	os.Remove(st)
	if err := os.WriteFile(st, b, 0o644); err != nil {
		t.Fatal(err)
	}
	convertErr(t, dir, Options{}, "model.layers.1.experts.gate_up_proj (expert 3, up rows)", "non-finite")
}
