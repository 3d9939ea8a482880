package recipe

import (
	"strings"
	"testing"

	"github.com/cflow-dev/cflow/quant"
)

// The cases the snapshots do not reach (overrides, --pure, an imatrix,
// Mixtral's eight experts, Falcon, tied embeddings, q4_0's q4_1 under an
// imatrix, the f16 choice cflow cannot store), each worked out from llama-quant.cpp's
// llama_tensor_get_type_impl by hand; the comment on each says which
// branch it exercises.

func typesByName(t *testing.T, r Recipe, m Model, ts []Tensor, opt Options) map[string]quant.Type {
	t.Helper()
	got, err := Choose(r, m, ts, opt)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]quant.Type{}
	for i, x := range ts {
		out[x.Name] = got[i]
	}
	return out
}

func expect(t *testing.T, got map[string]quant.Type, want map[string]quant.Type) {
	t.Helper()
	for n, w := range want {
		if got[n] != w {
			t.Errorf("%s: got %s, want %s", n, got[n], w)
		}
	}
}

var llama32 = geometry{embd: 4096, ff: 11008, vocab: 32000, layers: 32, heads: 32, kvHeads: 32, headDim: 128, outputTensor: true}

// An override skips the rules for its tensor, so the attn_v counter does
// not advance there: overriding blk.0's attn_v shifts every later layer's
// "more bits" slot by one (blk.4 takes slot 3, inside the first eighth).
func TestOverrideShiftsCounters(t *testing.T) {
	o, err := ParseOverride(`BLK\.0\.attn_v=Q5_K`)
	if err != nil {
		t.Fatal(err)
	}
	m := Model{Arch: "llama", Layers: 32}
	plain := typesByName(t, Q4_K_M, m, llama32.tensors(), Options{})
	expect(t, plain, map[string]quant.Type{"blk.0.attn_v.weight": quant.Q6_K, "blk.4.attn_v.weight": quant.Q4_K,
		"blk.6.attn_v.weight": quant.Q6_K, "blk.7.attn_v.weight": quant.Q4_K, "blk.4.ffn_down.weight": quant.Q4_K})
	got := typesByName(t, Q4_K_M, m, llama32.tensors(), Options{Overrides: []Override{o}})
	expect(t, got, map[string]quant.Type{"blk.0.attn_v.weight": quant.Q5_K, "blk.4.attn_v.weight": quant.Q6_K,
		"blk.6.attn_v.weight": quant.Q4_K, "blk.7.attn_v.weight": quant.Q6_K,
		// ffn_down has its own counter, untouched.
		"blk.4.ffn_down.weight": quant.Q4_K, "blk.6.ffn_down.weight": quant.Q6_K})
}

// An override's type still falls back when the row is not whole blocks,
// the first matching override wins, and f32 recipes ignore overrides
// (llama_tensor_get_type applies them only to a quantized default).
func TestOverrideFallbackAndOrder(t *testing.T) {
	g := geometry{embd: 2880, ff: 7680, vocab: 1000, layers: 8, heads: 8, kvHeads: 8, headDim: 64, outputTensor: true}
	o1, _ := ParseOverride("attn_q=q6_k")
	o2, _ := ParseOverride("attn=q8_0")
	m := Model{Arch: "llama", Layers: 8}
	got := typesByName(t, Q4_K_M, m, g.tensors(), Options{Overrides: []Override{o1, o2}})
	expect(t, got, map[string]quant.Type{
		"blk.1.attn_q.weight":      quant.Q8_0, // q6_K, 2880 % 256 ≠ 0 → q8_0
		"blk.1.attn_k.weight":      quant.Q8_0, // second override
		"blk.1.attn_output.weight": quant.Q8_0, // 512 columns, q8_0 as given
		"blk.1.ffn_up.weight":      quant.Q5_0, // q4_K fallback
		"blk.1.ffn_down.weight":    quant.Q4_K, // 7680 = 30·256, not a more-bits layer
		"blk.0.ffn_down.weight":    quant.Q6_K,
		"output.weight":            quant.Q8_0, // 2880 % 256 ≠ 0
	})
	f := typesByName(t, F32, m, g.tensors(), Options{Overrides: []Override{o1}})
	if f["blk.1.attn_q.weight"] != quant.F32 {
		t.Errorf("f32 recipe applied an override: %s", f["blk.1.attn_q.weight"])
	}
}

// Mixtral (exactly 8 experts): attn_v and attn_k go to q8_0, attn_output
// to q5_K for Q4_K_M/Q4_K_S; expert ffn_down layers come from the names;
// without output.weight the embedding is the output (q6_K).
func TestMixtralRules(t *testing.T) {
	g := geometry{embd: 4096, ff: 14336, vocab: 32000, layers: 32, heads: 32, kvHeads: 8, headDim: 128, experts: 8}
	m := Model{Arch: "llama", Layers: 32, Experts: 8}
	got := typesByName(t, Q4_K_M, m, g.tensors(), Options{})
	expect(t, got, map[string]quant.Type{
		"token_embd.weight": quant.Q6_K, "blk.3.attn_v.weight": quant.Q8_0, "blk.3.attn_k.weight": quant.Q8_0,
		"blk.3.attn_q.weight": quant.Q4_K, "blk.3.attn_output.weight": quant.Q5_K,
		"blk.3.ffn_down_exps.weight": quant.Q6_K, "blk.4.ffn_down_exps.weight": quant.Q4_K,
		"blk.4.ffn_gate_exps.weight": quant.Q4_K, "blk.4.ffn_gate_inp.weight": quant.F32,
		"blk.4.attn_norm.weight": quant.F32,
	})
	got = typesByName(t, Q5_K_M, m, g.tensors(), Options{})
	expect(t, got, map[string]quant.Type{"blk.3.attn_output.weight": quant.Q5_K, "blk.3.attn_v.weight": quant.Q8_0})
	if _, err := Choose(Q4_K_M, m, []Tensor{{"ffn_down_exps.weight", []int{256, 256, 8}}}, Options{}); err == nil ||
		!strings.Contains(err.Error(), "failed to determine the layer") {
		t.Errorf("expert tensor without a layer: err = %v", err)
	}
}

// Falcon: the output is always q8_0, and Q4_K_M's ffn_down takes q6_K in
// the first sixteenth, q5_K on the more-bits layers, q4_K elsewhere.
func TestFalconRules(t *testing.T) {
	g := geometry{embd: 4544, ff: 18176, vocab: 65024, layers: 32, heads: 71, kvHeads: 1, headDim: 64, outputTensor: true}
	m := Model{Arch: "falcon", Layers: 32}
	got := typesByName(t, Q4_K_M, m, g.tensors(), Options{})
	expect(t, got, map[string]quant.Type{"output.weight": quant.Q8_0, "blk.1.ffn_down.weight": quant.Q6_K,
		"blk.3.ffn_down.weight": quant.Q5_K, "blk.4.ffn_down.weight": quant.Q4_K,
		"blk.1.attn_q.weight": quant.Q5_0}) // 4544 = 142·32, not whole super-blocks
}

// --pure keeps the default everywhere, fallbacks aside.
func TestPure(t *testing.T) {
	got := typesByName(t, Q4_K_M, Model{Arch: "llama", Layers: 32}, llama32.tensors(), Options{Pure: true})
	expect(t, got, map[string]quant.Type{"output.weight": quant.Q4_K, "blk.0.attn_v.weight": quant.Q4_K,
		"blk.0.ffn_down.weight": quant.Q4_K, "blk.0.ffn_norm.weight": quant.F32})
}

// q4_0 with an imatrix gives the first eighth's ffn_down q4_1; what
// cflow cannot store is an error naming the tensor: a row that is not a
// multiple of 32 falls back to f16.
func TestUnstorableChoicesAreErrors(t *testing.T) {
	m := Model{Arch: "llama", Layers: 32}
	im := typesByName(t, Q4_0, m, llama32.tensors(), Options{Imatrix: true})
	expect(t, im, map[string]quant.Type{"blk.0.ffn_down.weight": quant.Q4_1, "blk.3.ffn_down.weight": quant.Q4_1,
		"blk.4.ffn_down.weight": quant.Q4_0, "blk.0.attn_v.weight": quant.Q4_0})
	if got := typesByName(t, Q4_0, m, llama32.tensors(), Options{}); got["blk.0.ffn_down.weight"] != quant.Q4_0 ||
		got["output.weight"] != quant.Q6_K {
		t.Errorf("q4_0 without imatrix: ffn_down %s, output %s", got["blk.0.ffn_down.weight"], got["output.weight"])
	}
	odd := []Tensor{{"blk.0.attn_q.weight", []int{100, 64}}}
	if _, err := Choose(Q8_0, Model{Layers: 1}, odd, Options{}); err == nil || !strings.Contains(err.Error(), "as f16") {
		t.Errorf("row of 100: err = %v", err)
	}
}

func TestParse(t *testing.T) {
	for _, r := range []Recipe{F32, Q4_0, Q8_0, Q4_K_S, Q4_K_M, Q5_K_S, Q5_K_M, Q6_K} {
		for _, s := range []string{r.String(), strings.ToUpper(r.String())} {
			if got, err := Parse(s); err != nil || got != r {
				t.Errorf("Parse(%q) = %v, %v", s, got, err)
			}
		}
	}
	if _, err := Parse("q3_k_m"); err == nil {
		t.Error("Parse accepted q3_k_m")
	}
	for s, want := range map[string]string{"attn_v": "want REGEX=TYPE", "=q4_k": "missing tensor name",
		"attn_v=": "missing quantization type", "attn_v=f16": "no f16 codec", "attn_v=q9": "unknown tensor type",
		"(=q4_k": "error parsing regexp"} {
		if _, err := ParseOverride(s); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseOverride(%q): err = %v, want %q", s, err, want)
		}
	}
	o, err := ParseOverride("FFN_DOWN=Q6_K")
	if err != nil || o.Type != quant.Q6_K || !o.Pattern.MatchString("blk.1.ffn_down.weight") {
		t.Errorf("ParseOverride(FFN_DOWN=Q6_K) = %+v, %v", o, err)
	}
}
