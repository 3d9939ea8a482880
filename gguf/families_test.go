package gguf_test

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/gguf"
	"github.com/cflow-dev/cflow/quant"
)

// family turns the dense fixture into a file of a cflow family with the
// given features; vecs are per-layer metadata vectors (role → length),
// which the export must carry as llama.cpp's tensor of that role, in
// `norms` so check compares them value by value (rowOf permutes them the
// way the export must).
func family(t *testing.T, name string, feats []string, vecs map[string]int, ggufName map[string]string, rowOf map[string]func(int) int) *fixture {
	t.Helper()
	g := dense
	g.q = quant.F32
	f := build(t, g)
	md := f.m.Meta
	md.SetString(cflowfmt.KeyArchitecture, name)
	if len(feats) > 0 {
		f.m.Header.FeatureFlags |= cflowfmt.FlagFeatures
		md.SetString(cflowfmt.KeyFeatures, strings.Join(feats, ","))
	}
	for l := 0; l < g.L; l++ {
		for role, n := range vecs {
			v := make([]float32, n)
			for i := range v {
				v[i] = float32(l*1000 + i + 1)
			}
			md.SetF32s(cflowfmt.LayerKey(l, role), v)
			want := v
			if p := rowOf[role]; p != nil {
				want = make([]float32, n)
				for i := range want {
					want[i] = v[p(i)]
				}
			}
			f.norms[fmt.Sprintf("blk.%d.%s", l, ggufName[role])] = want
		}
	}
	return f
}

// ropeOrder is the llama.cpp adjacent-pair row order of a q/k bias.
func ropeOrder(hd int) func(int) int {
	order := llamaCppRowOrder(dense.heads*hd, hd)
	return func(i int) int { return order[i] }
}

func kvStr(t *testing.T, g *ggufFile, k string) string {
	t.Helper()
	v, ok := g.kv[k]
	if !ok {
		t.Fatalf("kv %s missing", k)
	}
	s, _ := v.value.(string)
	return s
}

func kvF32(t *testing.T, g *ggufFile, k string) float32 {
	t.Helper()
	v, ok := g.kv[k]
	if !ok {
		t.Fatalf("kv %s missing", k)
	}
	x, _ := v.value.(float32)
	return x
}

// TestFamilyArchitectures: each family is written under llama.cpp's own
// architecture name and key prefix, with its extra tensors under
// llama.cpp's names; q/k rows (and q/k biases) are permuted to adjacent
// pairs only for llama, whose graph rotates them (NEOX architectures
// rotate split halves, as cflow does).
func TestFamilyArchitectures(t *testing.T) {
	hd, d := dense.hd, dense.d
	kv := dense.kv * hd
	t.Run("llama biases", func(t *testing.T) {
		f := family(t, "llama", []string{archspec.FeatBias},
			map[string]int{archspec.VecQBias: dense.heads * hd, archspec.VecKBias: kv, archspec.VecVBias: kv, archspec.VecOBias: d},
			map[string]string{archspec.VecQBias: "attn_q.bias", archspec.VecKBias: "attn_k.bias", archspec.VecVBias: "attn_v.bias", archspec.VecOBias: "attn_output.bias"},
			map[string]func(int) int{archspec.VecQBias: ropeOrder(hd), archspec.VecKBias: func(i int) int { return llamaCppRowOrder(kv, hd)[i] }})
		g := export(t, f, gguf.Options{})
		check(t, f, g, same(0))
		if a := kvStr(t, g, "general.architecture"); a != "llama" {
			t.Fatalf("architecture %q", a)
		}
	})
	t.Run("qwen3", func(t *testing.T) {
		f := family(t, "qwen3", []string{archspec.FeatQKNorm},
			map[string]int{archspec.VecQNorm: hd, archspec.VecKNorm: hd},
			map[string]string{archspec.VecQNorm: "attn_q_norm.weight", archspec.VecKNorm: "attn_k_norm.weight"}, nil)
		for name, ss := range f.src {
			for i := range ss {
				ss[i].rope = false // NEOX: rows as cflow holds them
			}
			f.src[name] = ss
		}
		g := export(t, f, gguf.Options{})
		check(t, f, g, same(0))
		if a := kvStr(t, g, "general.architecture"); a != "qwen3" || kvU32(t, g, "qwen3.block_count") != uint32(dense.L) {
			t.Fatalf("architecture %q", a)
		}
	})
	t.Run("gemma3", func(t *testing.T) {
		f := family(t, "gemma3_text", []string{archspec.FeatQKNorm, archspec.FeatPostNorms, archspec.FeatAttnScale, archspec.FeatEmbedScale},
			map[string]int{archspec.VecQNorm: hd, archspec.VecKNorm: hd, archspec.VecPostAttnNorm: d, archspec.VecPostFFNNorm: d},
			map[string]string{archspec.VecQNorm: "attn_q_norm.weight", archspec.VecKNorm: "attn_k_norm.weight",
				archspec.VecPostAttnNorm: "post_attention_norm.weight", archspec.VecPostFFNNorm: "post_ffw_norm.weight"}, nil)
		for name, ss := range f.src {
			for i := range ss {
				ss[i].rope = false
			}
			f.src[name] = ss
		}
		h, md := &f.m.Header, f.m.Meta
		h.FeatureFlags |= cflowfmt.FlagGELU | cflowfmt.FlagEmbedScale
		h.SlidingWindow, h.FinalLogitSoftcap = 7, 30
		md.SetBytes(cflowfmt.KeyLayerKinds, []byte{archspec.LayerSliding, archspec.LayerFull})
		md.SetF32(cflowfmt.KeyRopeThetaGlobal, 1e6)
		md.SetF32(cflowfmt.KeyAttnScale, 0.25)
		md.SetF32(cflowfmt.KeyEmbedScale, 8)
		md.SetString(cflowfmt.KeyRopeScaling, "linear")
		md.SetF32(cflowfmt.KeyRopeScalingFactor, 8)
		f.m.Header.FeatureFlags |= cflowfmt.FlagFeatures
		md.SetString(cflowfmt.KeyFeatures, md.String(cflowfmt.KeyFeatures, "")+","+archspec.FeatRopeScaling)
		g := export(t, f, gguf.Options{})
		check(t, f, g, same(0))
		for k, want := range map[string]uint32{"gemma3.attention.sliding_window": 7, "gemma3.attention.sliding_window_pattern": 2} {
			if v := kvU32(t, g, k); v != want {
				t.Errorf("%s = %d, want %d", k, v, want)
			}
		}
		for k, want := range map[string]float32{"gemma3.rope.freq_base": 1e6, "gemma3.rope.freq_base_swa": 500,
			"gemma3.rope.scaling.factor": 8, "gemma3.final_logit_softcapping": 30} {
			if v := kvF32(t, g, k); v != want {
				t.Errorf("%s = %v, want %v", k, v, want)
			}
		}
		if s := kvStr(t, g, "gemma3.rope.scaling.type"); s != "linear" {
			t.Errorf("scaling type %q", s)
		}
		if n := gguf.Notes(f.m); len(n) < 3 {
			t.Errorf("notes %q: want the embedding scale, GeLU table and attention scale departures", n)
		}
	})
	t.Run("llama3 rope factors", func(t *testing.T) {
		f := family(t, "llama", []string{archspec.FeatRopeScaling}, nil, nil, nil)
		md := f.m.Meta
		md.SetString(cflowfmt.KeyRopeScaling, "llama3")
		md.SetF32(cflowfmt.KeyRopeScalingFactor, 8)
		md.SetF32(cflowfmt.KeyRopeLowFreqFactor, 1)
		md.SetF32(cflowfmt.KeyRopeHighFreqFactor, 4)
		md.SetU32(cflowfmt.KeyRopeOriginalContext, 64)
		md.SetF32(cflowfmt.KeyRopeTheta, 10000)
		g := export(t, f, gguf.Options{})
		rf := g.byName["rope_freqs.weight"]
		if rf == nil || len(rf.dims) != 1 || rf.dims[0] != uint64(hd/2) {
			t.Fatalf("rope_freqs.weight %+v, want F32 [%d]", rf, hd/2)
		}
		// Bands at head_dim 16, θ 1e4: wavelengths 2π·θ^(2i/16). Below
		// 64/4 = 16 the factor is 1, above 64/1 = 64 it is 8, between
		// 1/((1−s)/8 + s) with s = (64/λ − 1)/3.
		for i, got := range dequant(0, rf.data, hd/2) {
			lambda := 2 * math.Pi * math.Pow(10000, float64(2*i)/float64(hd))
			want := 1.0
			switch {
			case lambda > 64:
				want = 8
			case lambda >= 16:
				s := (64/lambda - 1) / 3
				want = 1 / ((1-s)/8 + s)
			}
			if math.Abs(float64(got)-want) > 1e-5*want {
				t.Errorf("factor %d (λ %.1f) = %v, want %v", i, lambda, got, want)
			}
		}
	})
}

// TestExportRefusals: what llama.cpp's architecture cannot state is refused
// before any file exists.
func TestExportRefusals(t *testing.T) {
	for name, c := range map[string]struct {
		fam  string
		feat string
		mut  func(*cflowfmt.Model)
		want string
	}{
		"qk norm on llama":        {"llama", archspec.FeatQKNorm, nil, `feature "qk_norm"`},
		"biases on qwen3":         {"qwen3", archspec.FeatBias, nil, `feature "bias"`},
		"llama3 scaling on qwen2": {"qwen2", archspec.FeatRopeScaling, func(m *cflowfmt.Model) { m.Meta.SetString(cflowfmt.KeyRopeScaling, "llama3") }, "llama3 rope scaling"},
		"gemma3 kinds without a pattern": {"gemma3_text", "", func(m *cflowfmt.Model) {
			m.Header.FeatureFlags |= cflowfmt.FlagGELU | cflowfmt.FlagEmbedScale
			m.Header.SlidingWindow = 4
			m.Meta.SetBytes(cflowfmt.KeyLayerKinds, []byte{archspec.LayerFull, archspec.LayerSliding})
		}, "sliding_window_pattern"},
		"unknown feature": {"llama", "telepathy", nil, "does not implement"},
	} {
		var feats []string
		if c.feat != "" {
			feats = []string{c.feat}
		}
		f := family(t, c.fam, feats, nil, nil, nil)
		if c.mut != nil {
			c.mut(f.m)
		}
		dir := t.TempDir()
		err := gguf.Write(f.m, filepath.Join(dir, "x.gguf"), gguf.Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want one mentioning %q", name, err, c.want)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Errorf("%s: left %d files", name, len(ents))
		}
	}
}
