package convert

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/x448/float16"
)

// fixture is a tiny checkpoint written by the test itself, with the exact
// values (after dtype rounding) kept as the truth converted tiles are
// compared with.
type fixture struct {
	dir   string
	arch  string
	cfg   map[string]any
	truth map[string][]float32
	shape map[string][2]int
}

// tiny geometry: d = 288 gives a 256+32 column split, Q rows 288 give
// stripes of 128, 128 and 32, FFN 160 a short stripe, expert width 48 a
// short group, vocab 300 three stripes.
const (
	fxD, fxL, fxH, fxKV, fxHD, fxF, fxE, fxK, fxFe, fxV = 288, 3, 6, 2, 48, 160, 4, 2, 48, 300
	fxGHD                                               = 64 // gemma4 full-attention head dim
)

var fixtureArchs = []string{"llama", "mixtral", "arch1_decoupled_streams", "arch2_4_combined", "arch2_4_sync",
	"arch3_pipeline_registers", "arch4_async_experts", "arch5_fixed_point", "gemma4"}

func archConfig(arch string) map[string]any {
	c := map[string]any{
		"hidden_size": fxD, "num_hidden_layers": fxL, "num_attention_heads": fxH, "num_key_value_heads": fxKV,
		"head_dim": fxHD, "intermediate_size": fxF, "vocab_size": fxV, "max_position_embeddings": 64,
		"rms_norm_eps": 1e-6, "rope_theta": 10000.0, "tie_word_embeddings": false, "bos_token_id": 1, "eos_token_id": []int{2, 3},
	}
	moe := func() {
		c["num_experts"], c["num_experts_per_tok"], c["expert_intermediate_size"] = fxE, fxK, fxFe
	}
	pn := func(cs string) {
		c["model_type"], c["architecture"] = "pipeline_native", arch
		if cs != "" {
			c["combine_style"] = cs
		}
	}
	switch arch {
	case "llama":
		c["architectures"], c["model_type"], c["rms_norm_eps"] = []string{"LlamaForCausalLM"}, "llama", 1e-5
	case "mixtral":
		c["architectures"], c["model_type"] = []string{"MixtralForCausalLM"}, "mixtral"
		c["num_local_experts"], c["num_experts_per_tok"], c["intermediate_size"] = fxE, fxK, fxFe
	case "arch1_decoupled_streams":
		pn("")
		c["merge_interval"] = 2
	case "arch2_4_combined":
		pn("DelayedSum")
		c["dense_delay"], c["expert_delay"] = 1, 2
		moe()
	case "arch2_4_sync":
		pn("DelayedSum")
		c["dense_delay"], c["expert_delay"] = 1, 0
		moe()
	case "arch3_pipeline_registers":
		pn("")
	case "arch4_async_experts":
		pn("AsyncExperts")
		c["expert_delay"] = 2
		moe()
	case "arch5_fixed_point":
		pn("")
		c["block_iterations"] = 2
	case "gemma4":
		pn("ParallelSqrt2")
		moe()
		c["layer_types"] = []string{"sliding_attention", "full_attention", "sliding_attention"}
		c["sliding_window"], c["global_head_dim"], c["rope_theta_global"] = 16, fxGHD, 1e6
		c["partial_rotary_factor"], c["attention_k_eq_v"], c["final_logit_softcapping"] = 0.25, true, 30.0
		c["hidden_act"], c["use_embedding_scale"], c["use_v_norm"], c["tie_word_embeddings"] = "gelu_pytorch_tanh", true, true, true
	}
	return c
}

// fixtureTensors lists (name, rows, cols) for a config; rows 0 = 1-D.
func fixtureTensors(arch string, c map[string]any) [][3]any {
	var out [][3]any
	add := func(name string, r, cc int) { out = append(out, [3]any{name, r, cc}) }
	out = append(out, [3]any{"model.embed_tokens.weight", fxV, fxD})
	mixtral := arch == "mixtral"
	for l := 0; l < fxL; l++ {
		p := fmt.Sprintf("model.layers.%d.", l)
		hd := fxHD
		full := arch != "gemma4" || l == 1
		if arch == "gemma4" && full {
			hd = fxGHD
		}
		add(p+"input_layernorm.weight", 0, fxD)
		add(p+"self_attn.q_proj.weight", fxH*hd, fxD)
		add(p+"self_attn.k_proj.weight", fxKV*hd, fxD)
		if !(arch == "gemma4" && full) {
			add(p+"self_attn.v_proj.weight", fxKV*hd, fxD)
		}
		add(p+"self_attn.o_proj.weight", fxD, fxH*hd)
		add(p+"post_attention_layernorm.weight", 0, fxD)
		if !mixtral {
			add(p+"mlp.gate_proj.weight", fxF, fxD)
			add(p+"mlp.up_proj.weight", fxF, fxD)
			add(p+"mlp.down_proj.weight", fxD, fxF)
		}
		if c["combine_style"] == "DelayedSum" {
			add(p+"moe_norm.weight", 0, fxD)
		}
		if mixtral {
			add(p+"block_sparse_moe.gate.weight", fxE, fxD)
			for e := 0; e < fxE; e++ {
				q := fmt.Sprintf("%sblock_sparse_moe.experts.%d.", p, e)
				add(q+"w1.weight", fxFe, fxD)
				add(q+"w2.weight", fxD, fxFe)
				add(q+"w3.weight", fxFe, fxD)
			}
		} else if c["num_experts"] != nil {
			add(p+"moe.router.weight", fxE, fxD)
			for e := 0; e < fxE; e++ {
				q := fmt.Sprintf("%smoe.experts.%d.", p, e)
				add(q+"gate_proj.weight", fxFe, fxD)
				add(q+"up_proj.weight", fxFe, fxD)
				add(q+"down_proj.weight", fxD, fxFe)
			}
		}
	}
	add("model.norm.weight", 0, fxD)
	if c["tie_word_embeddings"] != true {
		add("lm_head.weight", fxV, fxD)
	}
	return out
}

// writeFixture writes config.json and model.safetensors for arch in
// dtype dt ("F32", "F16", "BF16"), returning the truth values.
func writeFixture(t testing.TB, dir, arch, dt string) *fixture {
	t.Helper()
	fx := &fixture{dir: dir, arch: arch, cfg: archConfig(arch), truth: map[string][]float32{}, shape: map[string][2]int{}}
	rng := rand.New(rand.NewPCG(uint64(len(arch)), 7))
	var ts []STTensor
	for _, e := range fixtureTensors(arch, fx.cfg) {
		name, r, c := e[0].(string), e[1].(int), e[2].(int)
		n, shape := max(r, 1)*c, []int{r, c}
		if r == 0 {
			shape = []int{c}
		}
		v := make([]float32, n)
		for i := range v {
			x := float32(rng.NormFloat64() * 0.05)
			if r == 0 {
				x += 1
			}
			v[i] = roundTo(dt, x)
		}
		fx.truth[name], fx.shape[name] = v, [2]int{max(r, 1), c}
		ts = append(ts, STTensor{Name: name, DType: dt, Shape: shape, Fill: func(w io.Writer) error {
			_, err := w.Write(encodeAs(dt, v))
			return err
		}})
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cb, _ := json.Marshal(fx.cfg)
	if err := os.WriteFile(filepath.Join(dir, "config.json"), cb, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteSafetensors(filepath.Join(dir, "model.safetensors"), ts); err != nil {
		t.Fatal(err)
	}
	return fx
}

func roundTo(dt string, x float32) float32 {
	switch dt {
	case "F16":
		return float16.Fromfloat32(x).Float32()
	case "BF16":
		return math.Float32frombits(math.Float32bits(x) &^ 0xffff)
	}
	return x
}

func encodeAs(dt string, v []float32) []byte {
	var b []byte
	for _, x := range v {
		switch dt {
		case "F16":
			h := float16.Fromfloat32(x).Bits()
			b = append(b, byte(h), byte(h>>8))
		case "BF16":
			u := math.Float32bits(x) >> 16
			b = append(b, byte(u), byte(u>>8))
		default:
			u := math.Float32bits(x)
			b = append(b, byte(u), byte(u>>8), byte(u>>16), byte(u>>24))
		}
	}
	return b
}

// tensorName is the test's own (layer, matrix, expert) → HF name table.
func (fx *fixture) tensorName(th cflowfmt.TileHeader) string {
	l, e := int(th.Layer), int(th.Expert)
	p := fmt.Sprintf("model.layers.%d.", l)
	mx := fx.arch == "mixtral"
	switch th.Matrix {
	case archspec.MatEmbed:
		return "model.embed_tokens.weight"
	case archspec.MatLMHead:
		return "lm_head.weight"
	case archspec.MatFinalNorm:
		return "model.norm.weight"
	case archspec.MatAttnNorm:
		return p + "input_layernorm.weight"
	case archspec.MatFFNNorm:
		if fx.arch == "gemma3_text" {
			return p + "pre_feedforward_layernorm.weight"
		}
		return p + "post_attention_layernorm.weight"
	case archspec.MatMoENorm:
		return p + "moe_norm.weight"
	case archspec.MatQ:
		return p + "self_attn.q_proj.weight"
	case archspec.MatK:
		return p + "self_attn.k_proj.weight"
	case archspec.MatV:
		return p + "self_attn.v_proj.weight"
	case archspec.MatO:
		return p + "self_attn.o_proj.weight"
	case archspec.MatGate:
		return p + "mlp.gate_proj.weight"
	case archspec.MatUp:
		return p + "mlp.up_proj.weight"
	case archspec.MatDown:
		return p + "mlp.down_proj.weight"
	case archspec.MatRouter:
		if fx.arch == "qwen3_moe" {
			return p + "mlp.gate.weight"
		}
		if mx {
			return p + "block_sparse_moe.gate.weight"
		}
		return p + "moe.router.weight"
	case archspec.MatExpertGate:
		if fx.arch == "qwen3_moe" {
			return fmt.Sprintf("%smlp.experts.%d.gate_proj.weight", p, e)
		}
		if mx {
			return fmt.Sprintf("%sblock_sparse_moe.experts.%d.w1.weight", p, e)
		}
		return fmt.Sprintf("%smoe.experts.%d.gate_proj.weight", p, e)
	case archspec.MatExpertUp:
		if fx.arch == "qwen3_moe" {
			return fmt.Sprintf("%smlp.experts.%d.up_proj.weight", p, e)
		}
		if mx {
			return fmt.Sprintf("%sblock_sparse_moe.experts.%d.w3.weight", p, e)
		}
		return fmt.Sprintf("%smoe.experts.%d.up_proj.weight", p, e)
	case archspec.MatExpertDown:
		if fx.arch == "qwen3_moe" {
			return fmt.Sprintf("%smlp.experts.%d.down_proj.weight", p, e)
		}
		if mx {
			return fmt.Sprintf("%sblock_sparse_moe.experts.%d.w2.weight", p, e)
		}
		return fmt.Sprintf("%smoe.experts.%d.down_proj.weight", p, e)
	}
	return ""
}
