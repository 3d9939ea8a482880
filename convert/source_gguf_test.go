package convert

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cflow-dev/cflow/quant"
)

// TestGGUFMatchesHF converts each fixture twice, from its Hugging Face
// checkpoint (golden/families/fixtures) and from the GGUF llama.cpp's gguf-py
// writer made of it (testdata/mkgguf.py: convert_hf_to_gguf.py's names,
// keys and, for the llama architecture, its q/k row permutation), and
// requires the same file byte for byte, in both formats and codecs: the
// GGUF source recovers the checkpoint exactly. Llama 3's rope_freqs comes
// back as its rope_scaling; Mixtral is the llama architecture with
// experts. Gemma 3 is compared with the checkpoint as llama.cpp computes
// it (HF_FAMILIES.md, "llama.cpp departs"): the attention scale
// head_dim^-1/2 and the embedding scale √d unrounded, which is what a
// gemma3 GGUF states; its norms, stored as 1 + w, are carried as they are.
func TestGGUFMatchesHF(t *testing.T) {
	families := filepath.Join("..", "golden", "families", "fixtures")
	gemma3 := llamaCppGemma3(t, filepath.Join(families, "gemma3"))
	for _, name := range []string{"llama_linear", "qwen2", "qwen3", "qwen3_moe", "llama3", "mixtral", "gemma3"} {
		src := filepath.Join(families, name)
		switch name {
		case "mixtral":
			src = filepath.Join("..", "golden", "fixtures", "mixtral")
		case "gemma3":
			src = gemma3
		}
		for _, ext := range []string{".cflow", ".vflow"} {
			for _, q := range []quant.Type{quant.F32, quant.Q8_0} {
				dir := t.TempDir()
				hf, gg := filepath.Join(dir, "hf"+ext), filepath.Join(dir, "gguf"+ext)
				opt := Options{Quant: q}
				if _, err := Convert(context.Background(), src, hf, opt); err != nil {
					t.Fatalf("%s: HF: %v", name, err)
				}
				if _, err := Convert(context.Background(), filepath.Join("testdata", name+".gguf"), gg, opt); err != nil {
					t.Fatalf("%s: GGUF: %v", name, err)
				}
				a, _ := os.ReadFile(hf)
				b, _ := os.ReadFile(gg)
				if !bytes.Equal(a, b) {
					t.Errorf("%s %s %v: the GGUF converts to other bytes than the checkpoint (%d vs %d bytes)", name, ext, q, len(b), len(a))
				}
			}
		}
	}
}

// llamaCppGemma3 is a copy of a Gemma 3 checkpoint whose config states
// what llama.cpp's gemma3 computes (query_pre_attn_scalar = head_dim, the
// embedding scale in float32), same weights.
func llamaCppGemma3(t *testing.T, dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["query_pre_attn_scalar"], cfg["torch_dtype"] = cfg["head_dim"], "float32"
	out := filepath.Join(t.TempDir(), filepath.Base(dir)) // the model's name
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	b, _ = json.Marshal(cfg)
	if err := os.WriteFile(filepath.Join(out, "config.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(filepath.Join(dir, "model.safetensors"))
	if err := os.Symlink(abs, filepath.Join(out, "model.safetensors")); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestGGUFRefusesRequantization: a Q8_0 tensor (written by gguf-py's own
// quantizer) is carried only into Q8_0 tiles; --quant q4_0 would
// requantize it and is refused naming the tensor and its type, with no
// output.
func TestGGUFRefusesRequantization(t *testing.T) {
	out := filepath.Join(t.TempDir(), "m.cflow")
	_, err := Convert(context.Background(), filepath.Join("testdata", "qwen3_q8.gguf"), out, Options{Quant: quant.Q4_0})
	if err == nil || !strings.Contains(err.Error(), "self_attn.o_proj.weight is Q8_0, which --quant q4_0 would requantize") {
		t.Errorf("%v, want the tensor and its type named", err)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("an output file after a refusal")
	}
}

// TestGGUFRefusals: what the GGUF source cannot import is refused by name,
// with no output file.
func TestGGUFRefusals(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("testdata", "qwen3.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		old, new, want string
	}{
		{"qwen3.rope.freq_base", "qwen3.rope.freq_bxse", "qwen3.rope.freq_bxse is not implemented"},
		{"general.architecture\x08\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00qwen3", "general.architecture\x08\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00gemma", `"gemma" is not imported`},
	}
	for _, c := range cases {
		b := bytes.Replace(src, []byte(c.old), []byte(c.new), 1)
		if bytes.Equal(b, src) {
			t.Fatalf("%q not in the file", c.old)
		}
		dir := t.TempDir()
		in, out := filepath.Join(dir, "m.gguf"), filepath.Join(dir, "m.cflow")
		if err := os.WriteFile(in, b, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Convert(context.Background(), in, out, Options{Quant: quant.F32})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v, want %q", err, c.want)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%s: an output file after a refusal", c.want)
		}
	}
}

// TestGGUFRequant: Q4_1 tensors (gguf-py's quantizer) are refused naming
// the tensor and type without Requant; with it they are dequantized and
// quantized with --quant, and the cost is reported: zero into f32, and into
// Q8_0 the error of 8-bit blocks on weights of this scale (well under 1%
// relative, above 0). A type quant cannot dequantize (IQ4_NL) is refused
// by name either way.
func TestGGUFRequant(t *testing.T) {
	in := filepath.Join("testdata", "qwen3_q41.gguf")
	out := filepath.Join(t.TempDir(), "m.cflow")
	_, err := Convert(context.Background(), in, out, Options{Quant: quant.Q8_0})
	if err == nil || !strings.Contains(err.Error(), "model.layers.0.self_attn.o_proj.weight is Q4_1, which cflow does not carry (2 such tensors); --requant q8_0") {
		t.Errorf("%v, want the tensor and its type named", err)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("an output file after a refusal")
	}
	for _, q := range []quant.Type{quant.F32, quant.Q8_0} {
		res, err := Convert(context.Background(), in, filepath.Join(t.TempDir(), "m.vflow"), Options{Quant: q, Requant: true})
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if len(res.Requantized) != 2 {
			t.Fatalf("%s: %d requantized tensors, want 2: %v", q, len(res.Requantized), res.Requantized)
		}
		for _, c := range res.Requantized {
			if c.From != "Q4_1" || c.To != q || (q == quant.F32) != (c.RMS == 0) || c.Rel >= 0.01 {
				t.Errorf("%s: %v", q, c)
			}
		}
	}
	src, err := os.ReadFile(filepath.Join("testdata", "qwen3_q4.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	name := []byte("blk.0.attn_output.weight")
	i := bytes.Index(src, name) + len(name)
	nd := int(src[i])
	if src[i+4+8*nd] != 2 { // Q4_0
		t.Fatalf("tensor type %d, want Q4_0", src[i+4+8*nd])
	}
	src[i+4+8*nd] = 20 // IQ4_NL: the same 18 bytes per 32 weights
	bad := filepath.Join(t.TempDir(), "iq4.gguf")
	if err := os.WriteFile(bad, src, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Convert(context.Background(), bad, out, Options{Quant: quant.Q4_0, Requant: true})
	if err == nil || !strings.Contains(err.Error(), "tensor blk.0.attn_output.weight is IQ4_NL, which cflow does not import") {
		t.Errorf("%v, want IQ4_NL refused by name", err)
	}
}
