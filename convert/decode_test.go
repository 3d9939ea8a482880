package convert

import (
	"bytes"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cflow-dev/cflow/cflowfmt"
)

// TestConfigTypesRefused: config.json is decoded once into the family's
// typed struct (config.go), and a value of the wrong JSON type for its key
// — by Hugging Face's config classes, where these keys are an int, a float,
// a string, an object — is refused naming the key, with no output. Before
// the typed decoding a list stood for its first element in every numeric
// key and a non-string name was read as "".
func TestConfigTypesRefused(t *testing.T) {
	fx := writeFixture(t, filepath.Join(t.TempDir(), "m"), "llama", "F32")
	for _, c := range []struct {
		key   string
		value any
		want  string
	}{
		{"hidden_size", []int{fxD}, "want a number"},
		{"num_hidden_layers", 1.5, "want a non-negative integer"},
		{"num_key_value_heads", -2, "want a non-negative integer"},
		{"rms_norm_eps", "1e-5", "want a number"},
		{"tie_word_embeddings", "yes", "want true or false"},
		{"hidden_act", 5, "want a string"},
		{"_name_or_path", true, "want a string"},
		{"model_type", []string{"llama"}, "want a string"},
		{"architectures", "LlamaForCausalLM", "want a list of strings"},
		{"eos_token_id", "</s>", "want a number"},
		{"rope_scaling", []int{1}, "rope_scaling"},
	} {
		rewriteFixture(t, fx, nil, func(m map[string]any) { m[c.key] = c.value })
		convertErr(t, fx.dir, Options{}, c.key, c.want)
	}
	// A list of ids still means its first (HF's eos_token_id: [2, 32000]).
	rewriteFixture(t, fx, nil, func(m map[string]any) { m["eos_token_id"] = []int{7, 9} })
	if got := convertOK(t, fx.dir).Meta.U32(cflowfmt.KeyEOS, 0); got != 7 {
		t.Fatalf("eos_token_id [7, 9] stored as %d, want 7", got)
	}
}

// TestNonFiniteAcrossChunks: the finiteness scan runs over 4 MiB chunks on
// every core and must still report what a scan in file order meets first:
// the lower index within a tensor whose second chunk and third chunk both
// hold a NaN, and the earlier tensor when a later one (in file order) has
// one in its first chunk.
func TestNonFiniteAcrossChunks(t *testing.T) {
	const rows, cols = 1024, 3000 // F16: 6 MB, two chunks and a bit
	bad := map[int]bool{}
	fill := func(w io.Writer) error {
		var b bytes.Buffer
		for i := 0; i < rows*cols; i++ {
			v := float32(i%5) - 2
			if bad[i] {
				v = float32(math.NaN())
			}
			b.Write(encodeOne("F16", v))
		}
		_, err := w.Write(b.Bytes())
		return err
	}
	first := finiteChunk/2 + 12345 // in the big tensor's second chunk
	bad[first], bad[finiteChunk/2*2+7] = true, true
	b := stBytes(t, []STTensor{
		{Name: "a.big", DType: "F16", Shape: []int{rows, cols}, Fill: fill},
		{Name: "b.small", DType: "F16", Shape: []int{4}, Fill: func(w io.Writer) error {
			_, err := w.Write(bytes.Repeat(encodeOne("F16", float32(math.Inf(1))), 4))
			return err
		}},
	})
	_, err := parseSafetensors("x.safetensors", b)
	want := "tensor a.big: non-finite value NaN at index " + itoa(first)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want %q", err, want)
	}
}

// FuzzConfigDecode: the decoding step takes any bytes as a config document:
// it decodes into the family's struct and derives the geometry, or refuses
// naming the document (or --model); never a panic. Seeds: every golden
// fixture's config.json.
func FuzzConfigDecode(f *testing.F) {
	seeds, _ := filepath.Glob("../golden/*/fixtures/*/config.json")
	more, _ := filepath.Glob("../golden/fixtures/*/config.json")
	for _, p := range append(seeds, more...) {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"architectures":["LlamaForCausalLM"],"hidden_size":[1],"rope_scaling":{"factor":"x"}}`))
	f.Add([]byte(`{"architectures":["Gemma4ForConditionalGeneration"],"text_config":{"rope_parameters":[{}]}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, force := range []string{"", "llama", "gemma4_text", "arch5", "qwen3_moe", "gemma3_text"} {
			p, fc, err := decodeFamily(configDoc{file: "fuzz.json", json: b}, force)
			if err != nil {
				if !strings.Contains(err.Error(), "fuzz.json") && !strings.Contains(err.Error(), "--model") {
					t.Fatalf("--model %q: error names neither the document nor --model: %v", force, err)
				}
				continue
			}
			g, err := fc.base().sizes()
			if err == nil {
				_ = fc.geometry(p, &g)
			}
		}
	})
}
