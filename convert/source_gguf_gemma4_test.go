package convert_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/cflow-dev/cflow/convert"
	"github.com/cflow-dev/cflow/engine"
	"github.com/cflow-dev/cflow/gguf"
	"github.com/cflow-dev/cflow/quant"
	"github.com/cflow-dev/cflow/vflowfmt"
)

// TestGGUFGemma4RoundTrip: a Gemma 4 checkpoint (MoE beside the MLP, and
// dense), converted, exported as llama.cpp's gemma4 (per-layer KV heads
// and SWA flags, key_length_swa, rope_freqs for the proportional RoPE, the
// router's scales) and imported back, decodes the same logits bit for bit
// as the checkpoint's own conversion. The config states what llama.cpp
// computes (the embedding scale √d in f32). libllama's reading of such
// files is gguf.TestLlamaCppLogits's.
func TestGGUFGemma4RoundTrip(t *testing.T) {
	for _, fx := range []string{"gemma4_text", "gemma4_dense"} {
		src := filepath.Join("..", "golden", "gemma4_text", "fixtures", fx)
		b, err := os.ReadFile(filepath.Join(src, "config.json"))
		if err != nil {
			t.Fatal(err)
		}
		var cfg map[string]any
		if err := json.Unmarshal(b, &cfg); err != nil {
			t.Fatal(err)
		}
		cfg["dtype"] = "float32"
		delete(cfg, "torch_dtype")
		dir := t.TempDir()
		view := filepath.Join(dir, fx)
		if err := os.Mkdir(view, 0o755); err != nil {
			t.Fatal(err)
		}
		b, _ = json.Marshal(cfg)
		if err := os.WriteFile(filepath.Join(view, "config.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		abs, _ := filepath.Abs(filepath.Join(src, "model.safetensors"))
		if err := os.Symlink(abs, filepath.Join(view, "model.safetensors")); err != nil {
			t.Fatal(err)
		}
		hf, gg, back := filepath.Join(dir, "hf.cflow"), filepath.Join(dir, "m.gguf"), filepath.Join(dir, "back.vflow")
		if _, err := convert.Convert(context.Background(), view, hf, convert.Options{Quant: quant.F32}); err != nil {
			t.Fatalf("%s: %v", fx, err)
		}
		m, err := vflowfmt.OpenModel(hf)
		if err != nil {
			t.Fatal(err)
		}
		if err := gguf.Write(m, gg, gguf.Options{}); err != nil {
			t.Fatalf("%s: export: %v", fx, err)
		}
		if _, err := convert.Convert(context.Background(), gg, back, convert.Options{Quant: quant.F32}); err != nil {
			t.Fatalf("%s: import: %v", fx, err)
		}
		toks := []int{2, 17, 99, 5, 250, 41, 7, 123}
		want, got := logits(t, hf, toks), logits(t, back, toks)
		for p := range want {
			if !slices.Equal(got[p], want[p]) {
				t.Fatalf("%s: position %d: the imported GGUF decodes other logits than the checkpoint", fx, p)
			}
		}
	}
}

func logits(t *testing.T, path string, toks []int) [][]float32 {
	t.Helper()
	m, err := vflowfmt.OpenModel(path)
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(m, engine.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	var out [][]float32
	if err := e.PrefillEach(toks, func(_ int, l []float32, _ *engine.Observation) error {
		out = append(out, slices.Clone(l))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}
