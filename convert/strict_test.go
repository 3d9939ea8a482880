package convert

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/cflowfmt"
)

// rewriteFixture rewrites fx's safetensors with the fixture's own tensors
// plus extra (name → values, 1-D), and its config.json with edit applied.
func rewriteFixture(t *testing.T, fx *fixture, extra map[string][]float32, edit func(map[string]any)) {
	t.Helper()
	var ts []STTensor
	add := func(name string, shape []int, v []float32) {
		ts = append(ts, STTensor{Name: name, DType: "F32", Shape: shape, Fill: func(w io.Writer) error { _, err := w.Write(encodeAs("F32", v)); return err }})
	}
	for name, v := range fx.truth {
		sh := fx.shape[name]
		shape := []int{sh[0], sh[1]}
		if !strings.Contains(name, "proj") && !strings.Contains(name, "embed") && !strings.Contains(name, "lm_head") && !strings.Contains(name, "gate.weight") && !strings.Contains(name, "router") {
			shape = []int{sh[1]}
		}
		add(name, shape, v)
	}
	for name, v := range extra {
		add(name, []int{len(v)}, v)
	}
	if err := WriteSafetensors(filepath.Join(fx.dir, "model.safetensors"), ts); err != nil {
		t.Fatal(err)
	}
	cfg := map[string]any{}
	for k, v := range fx.cfg {
		cfg[k] = v
	}
	if edit != nil {
		edit(cfg)
	}
	b, _ := json.Marshal(cfg)
	if err := os.WriteFile(filepath.Join(fx.dir, "config.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func convertOK(t *testing.T, dir string) *cflowfmt.File {
	t.Helper()
	out := filepath.Join(t.TempDir(), "ok.cflow")
	if _, err := Convert(context.Background(), dir, out, Options{NUMANodes: 1}); err != nil {
		t.Fatal(err)
	}
	return openChecked(t, out)
}

// TestUnclaimedTensorRefused: a tensor the family's mapping does not
// consume (the q_proj.bias on a Llama without attention_bias) is
// named, exit-2 style, with no output; once the config says attention_bias
// the same checkpoint's biases land in the file.
func TestUnclaimedTensorRefused(t *testing.T) {
	fx := writeFixture(t, filepath.Join(t.TempDir(), "m"), "llama", "F32")
	bias := make([]float32, fxH*fxHD)
	bias[3] = 0.5
	rewriteFixture(t, fx, map[string][]float32{"model.layers.1.self_attn.q_proj.bias": bias}, nil)
	convertErr(t, fx.dir, Options{}, "model.layers.1.self_attn.q_proj.bias", "unclaimed")
	// With attention_bias every q/k/v/o bias is required…
	rewriteFixture(t, fx, map[string][]float32{"model.layers.1.self_attn.q_proj.bias": bias}, func(c map[string]any) { c["attention_bias"] = true })
	convertErr(t, fx.dir, Options{}, "missing tensor model.layers.0.self_attn.q_proj.bias")
	// …and, all present, stored per layer.
	extra := map[string][]float32{}
	for l := 0; l < fxL; l++ {
		for _, p := range []string{"q", "k", "v", "o"} {
			n := map[string]int{"q": fxH * fxHD, "k": fxKV * fxHD, "v": fxKV * fxHD, "o": fxD}[p]
			v := make([]float32, n)
			v[0] = float32(l) + 0.25
			extra["model.layers."+itoa(l)+".self_attn."+p+"_proj.bias"] = v
		}
	}
	rewriteFixture(t, fx, extra, func(c map[string]any) { c["attention_bias"] = true })
	f := convertOK(t, fx.dir)
	if got := f.Meta.F32s(cflowfmt.LayerKey(2, archspec.VecOBias)); len(got) != fxD || got[0] != 2.25 {
		t.Fatalf("layer 2 o bias = %v…", got[:min(3, len(got))])
	}
	if !f.Header.Has(cflowfmt.FlagFeatures) || f.Meta.String(cflowfmt.KeyFeatures, "") != archspec.FeatBias {
		t.Fatalf("features %q flag %v", f.Meta.String(cflowfmt.KeyFeatures, ""), f.Header.Has(cflowfmt.FlagFeatures))
	}
	// A tied config with an lm_head that differs from the embedding.
	fx2 := writeFixture(t, filepath.Join(t.TempDir(), "m2"), "llama", "F32")
	rewriteFixture(t, fx2, nil, func(c map[string]any) { c["tie_word_embeddings"] = true })
	convertErr(t, fx2.dir, Options{}, "lm_head.weight differs from model.embed_tokens.weight")
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

// TestConfigKeysRefused: every computation-changing config value the
// runtime does not implement, and every value out of range, is refused
// naming the key and the value, leaving no output (issues 15 and 19).
func TestConfigKeysRefused(t *testing.T) {
	fx := writeFixture(t, filepath.Join(t.TempDir(), "m"), "llama", "F32")
	for _, c := range []struct {
		edit  func(map[string]any)
		wants []string
	}{
		{func(c map[string]any) { c["rope_scaling"] = map[string]any{"rope_type": "yarn", "factor": 4.0} }, []string{"rope_scaling.rope_type", "yarn"}},
		{func(c map[string]any) { c["rope_scaling"] = map[string]any{"type": "dynamic", "factor": 2.0} }, []string{"rope_scaling.rope_type", "dynamic"}},
		{func(c map[string]any) { c["rope_scaling"] = map[string]any{"rope_type": "llama3", "factor": 8.0} }, []string{"rope_scaling.low_freq_factor"}},
		{func(c map[string]any) { c["rope_scaling"] = map[string]any{"rope_type": "linear", "factor": 0.5} }, []string{"rope_scaling.factor", "0.5"}},
		{func(c map[string]any) { c["hidden_act"] = "relu" }, []string{"hidden_act", "relu"}},
		{func(c map[string]any) { c["hidden_act"] = "gelu" }, []string{"hidden_act", "gelu"}},
		{func(c map[string]any) { c["partial_rotary_factor"] = 0.5 }, []string{"partial_rotary_factor", "0.5"}},
		{func(c map[string]any) { c["rms_norm_eps"] = 0 }, []string{"rms_norm_eps", "0"}},
		{func(c map[string]any) { c["rms_norm_eps"] = -1e-5 }, []string{"rms_norm_eps", "-1e-05"}},
		{func(c map[string]any) { c["rms_norm_eps"] = 10.0 }, []string{"rms_norm_eps", "10"}},
		{func(c map[string]any) { c["rope_theta"] = 0 }, []string{"rope_theta", "0"}},
		{func(c map[string]any) { c["rope_theta"] = -10000.0 }, []string{"rope_theta", "-10000"}},
		{func(c map[string]any) { c["num_hidden_layers"] = fxL - 1 }, []string{"num_hidden_layers = 2", "layer 2"}},
		{func(c map[string]any) {
			c["architectures"] = []string{"Qwen2ForCausalLM"}
			c["use_sliding_window"] = true
		}, []string{"use_sliding_window", "true"}},
		{func(c map[string]any) {
			c["architectures"], c["model_type"], c["hidden_activation"] = []string{"Gemma3ForCausalLM"}, "gemma3_text", "gelu_pytorch_tanh"
			c["attn_logit_softcapping"] = 50.0
		}, []string{"attn_logit_softcapping", "50"}},
		{func(c map[string]any) {
			c["architectures"], c["model_type"], c["hidden_activation"] = []string{"Gemma3ForCausalLM"}, "gemma3_text", "gelu"
		}, []string{"hidden_activation", "gelu"}},
	} {
		rewriteFixture(t, fx, nil, c.edit)
		convertErr(t, fx.dir, Options{}, c.wants...)
	}
	// The pipeline-native families: partial_rotary_factor outside (0, 1],
	// hidden_act relu (once run as SiLU).
	g := writeFixture(t, filepath.Join(t.TempDir(), "g"), "gemma4", "F32")
	for _, c := range []struct {
		edit  func(map[string]any)
		wants []string
	}{
		{func(c map[string]any) { c["partial_rotary_factor"] = 10.0 }, []string{"partial_rotary_factor", "10"}},
		{func(c map[string]any) { c["partial_rotary_factor"] = 0.0 }, []string{"partial_rotary_factor", "0"}},
		{func(c map[string]any) { c["hidden_act"] = "relu" }, []string{"hidden_act", "relu"}},
		{func(c map[string]any) { c["rope_theta_global"] = -1.0 }, []string{"rope_theta_global", "-1"}},
	} {
		rewriteFixture(t, g, nil, c.edit)
		convertErr(t, g.dir, Options{}, c.wants...)
	}
}

// TestRopeParameters: the newer rope_parameters form means what the older
// keys mean — flat for Llama-style families (its rope_theta wins), per
// layer kind for Gemma 3 — and an unimplemented type inside it is refused
// by its full key.
func TestRopeParameters(t *testing.T) {
	fx := writeFixture(t, filepath.Join(t.TempDir(), "m"), "llama", "F32")
	rewriteFixture(t, fx, nil, func(c map[string]any) {
		c["rope_parameters"] = map[string]any{"rope_type": "llama3", "rope_theta": 500000.0, "factor": 32.0,
			"low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}
	})
	f := convertOK(t, fx.dir)
	if th, k := f.Meta.F32(cflowfmt.KeyRopeTheta, 0), f.Meta.String(cflowfmt.KeyRopeScaling, ""); th != 500000 || k != "llama3" ||
		f.Meta.U32(cflowfmt.KeyRopeOriginalContext, 0) != 8192 || f.Meta.F32(cflowfmt.KeyRopeScalingFactor, 0) != 32 {
		t.Fatalf("rope_parameters gave θ %v, scaling %q", th, k)
	}
	rewriteFixture(t, fx, nil, func(c map[string]any) {
		c["rope_parameters"] = map[string]any{"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0}
	})
	convertErr(t, fx.dir, Options{}, "rope_parameters.rope_type", "yarn")

	g := writeGemma3(t)
	rewriteFixture(t, g, nil, func(c map[string]any) {
		c["rope_parameters"] = map[string]any{
			"sliding_attention": map[string]any{"rope_type": "default", "rope_theta": 10000.0},
			"full_attention":    map[string]any{"rope_type": "linear", "factor": 8.0, "rope_theta": 1000000.0},
		}
	})
	f = convertOK(t, g.dir)
	if l, gl, k := f.Meta.F32(cflowfmt.KeyRopeTheta, 0), f.Meta.F32(cflowfmt.KeyRopeThetaGlobal, 0), f.Meta.String(cflowfmt.KeyRopeScaling, ""); l != 1e4 || gl != 1e6 || k != "linear" {
		t.Fatalf("gemma3 rope_parameters: local θ %v, global θ %v, scaling %q", l, gl, k)
	}
	rewriteFixture(t, g, nil, func(c map[string]any) {
		c["rope_parameters"] = map[string]any{
			"sliding_attention": map[string]any{"rope_type": "linear", "factor": 2.0, "rope_theta": 10000.0},
			"full_attention":    map[string]any{"rope_type": "default", "rope_theta": 1000000.0},
		}
	})
	convertErr(t, g.dir, Options{}, "rope_parameters.sliding_attention.rope_type", "linear")
}

// writeGemma3 is the llama fixture renamed into a Gemma 3 checkpoint: the
// four norms, q/k norms, tied embeddings.
func writeGemma3(t *testing.T) *fixture {
	fx := writeFixture(t, filepath.Join(t.TempDir(), "g3"), "llama", "F32")
	truth, shape := map[string][]float32{}, map[string][2]int{}
	for n, v := range fx.truth {
		if n == "lm_head.weight" {
			continue
		}
		truth[n], shape[n] = v, fx.shape[n]
	}
	for l := 0; l < fxL; l++ {
		p := "model.layers." + itoa(l) + "."
		for _, n := range []string{"pre_feedforward_layernorm.weight", "post_feedforward_layernorm.weight"} {
			truth[p+n], shape[p+n] = make([]float32, fxD), [2]int{1, fxD}
		}
		for _, n := range []string{"self_attn.q_norm.weight", "self_attn.k_norm.weight"} {
			truth[p+n], shape[p+n] = make([]float32, fxHD), [2]int{1, fxHD}
		}
	}
	fx.truth, fx.shape = truth, shape
	fx.cfg = map[string]any{}
	for k, v := range archConfig("llama") {
		fx.cfg[k] = v
	}
	fx.cfg["architectures"], fx.cfg["model_type"] = []string{"Gemma3ForCausalLM"}, "gemma3_text"
	fx.cfg["tie_word_embeddings"], fx.cfg["sliding_window"], fx.cfg["sliding_window_pattern"] = true, 4, 3
	delete(fx.cfg, "rms_norm_eps")
	rewriteFixture(t, fx, nil, nil)
	return fx
}
