package gguf_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/gguf"
	"github.com/cflow-dev/cflow/quant"
)

var dense = geom{q: quant.Q4_0, d: 64, ffn: 96, vocab: 40, L: 2, heads: 4, kv: 2, hd: 16}

func same(q uint32) func(string, int) uint32 { return func(string, int) uint32 { return q } }

func TestDenseQ4Header(t *testing.T) {
	f := build(t, dense)
	g := export(t, f, gguf.Options{})
	if g.version != 3 {
		t.Errorf("version %d, want 3", g.version)
	}
	if a := kvU32(t, g, "general.alignment"); a != 32 || g.dataStart%32 != 0 {
		t.Errorf("alignment %d, data start %d", a, g.dataStart)
	}
	for k, want := range map[string]uint32{
		"general.file_type": 2, "llama.embedding_length": 64, "llama.block_count": 2,
		"llama.feed_forward_length": 96, "llama.attention.head_count": 4, "llama.attention.head_count_kv": 2,
		"llama.rope.dimension_count": 16, "llama.context_length": 64, "llama.vocab_size": 40,
		"tokenizer.ggml.bos_token_id": 1, "tokenizer.ggml.eos_token_id": 2,
	} {
		if got := kvU32(t, g, k); got != want {
			t.Errorf("%s = %d, want %d", k, got, want)
		}
	}
	if g.kv["general.architecture"].value != "llama" || g.kv["tokenizer.ggml.model"].value != "llama" {
		t.Errorf("architecture/tokenizer model: %v %v", g.kv["general.architecture"], g.kv["tokenizer.ggml.model"])
	}
	if v := g.kv["llama.attention.layer_norm_rms_epsilon"].value; v != float32(1e-5) {
		t.Errorf("rms eps %v", v)
	}
	if v := g.kv["llama.rope.freq_base"].value; v != float32(500) {
		t.Errorf("rope base %v", v)
	}
	toks := g.kv["tokenizer.ggml.tokens"].value.([]any)
	types := g.kv["tokenizer.ggml.token_type"].value.([]any)
	scores := g.kv["tokenizer.ggml.scores"].value.([]any)
	if len(toks) != 40 || len(types) != 40 || len(scores) != 40 {
		t.Fatalf("vocab arrays %d/%d/%d, want 40", len(toks), len(types), len(scores))
	}
	if toks[0] != "<unk>" || toks[1] != "<s>" || toks[2] != "</s>" || toks[37] != "[37]" || types[1] != int32(3) || types[37] != int32(4) {
		t.Errorf("tokens %v…, types %v…", toks[:4], types[:4])
	}
	if _, ok := g.byName["output.weight"]; !ok {
		t.Error("untied model has no output.weight")
	}
}

func TestDenseQ4Data(t *testing.T) {
	f := build(t, dense)
	check(t, f, export(t, f, gguf.Options{}), same(2))
}

func TestQ8AndTied(t *testing.T) {
	g := dense
	g.q, g.tied = quant.Q8_0, true
	f := build(t, g)
	out := export(t, f, gguf.Options{})
	check(t, f, out, same(8))
	if _, ok := out.byName["output.weight"]; ok {
		t.Error("tied model exported output.weight; llama.cpp falls back to token_embd")
	}
	if ft := kvU32(t, out, "general.file_type"); ft != 7 {
		t.Errorf("file_type %d, want 7 (MOSTLY_Q8_0)", ft)
	}
}

func TestF32Exact(t *testing.T) {
	g := dense
	g.q = quant.F32
	f := build(t, g)
	check(t, f, export(t, f, gguf.Options{}), same(0))
}

func TestForceF32Dequantizes(t *testing.T) {
	f := build(t, dense)
	out := export(t, f, gguf.Options{F32: true})
	check(t, f, out, same(0))
	if ft := kvU32(t, out, "general.file_type"); ft != 0 {
		t.Errorf("file_type %d, want 0", ft)
	}
}

// A row length that is not a multiple of 32 (stories260K's FFN is 172) cannot
// be a ggml Q4_0 tensor; it is exported as F32 holding the dequantized
// values, and Padded names it.
func TestPaddedRowsBecomeF32(t *testing.T) {
	g := dense
	g.ffn = 80
	f := build(t, g)
	check(t, f, export(t, f, gguf.Options{}), func(_ string, cols int) uint32 {
		if cols%32 != 0 {
			return 0
		}
		return 2
	})
	want := []string{"blk.0.ffn_down.weight", "blk.1.ffn_down.weight"}
	if got := gguf.Padded(f.m); !slices.Equal(got, want) {
		t.Errorf("Padded = %v, want %v", got, want)
	}
}

func TestMixtralExperts(t *testing.T) {
	g := dense
	g.ffn, g.experts, g.topK, g.eff, g.q = 0, 3, 2, 64, quant.Q8_0
	f := build(t, g)
	out := export(t, f, gguf.Options{})
	check(t, f, out, func(name string, _ int) uint32 {
		if strings.HasSuffix(name, "gate_inp.weight") {
			return 0
		}
		return 8
	})
	if kvU32(t, out, "llama.expert_count") != 3 || kvU32(t, out, "llama.expert_used_count") != 2 || kvU32(t, out, "llama.feed_forward_length") != 64 {
		t.Error("expert KVs wrong")
	}
}

func TestRefusesOtherArchitectures(t *testing.T) {
	for name, mut := range map[string]func(*cflowfmt.Model){
		"delayed sum": func(m *cflowfmt.Model) { m.Header.CombineStyle = archspec.DelayedSum },
		"gelu":        func(m *cflowfmt.Model) { m.Header.FeatureFlags |= cflowfmt.FlagGELU },
		"softcap":     func(m *cflowfmt.Model) { m.Header.FinalLogitSoftcap = 30 },
		"block iters": func(m *cflowfmt.Model) { m.Meta.SetU32(cflowfmt.KeyBlockIterations, 3) },
	} {
		f := build(t, dense)
		mut(f.m)
		dir := t.TempDir()
		err := gguf.Write(f.m, filepath.Join(dir, "x.gguf"), gguf.Options{})
		if err == nil || !strings.Contains(err.Error(), "cannot export") {
			t.Errorf("%s: err = %v", name, err)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Errorf("%s: left %d files", name, len(ents))
		}
	}
}

// A missing tile is an error naming the tensor, and nothing is left behind.
func TestMissingTileNamesTensor(t *testing.T) {
	f := build(t, dense)
	ly := &f.m.Layers[1]
	for i, tl := range ly.QKV {
		if tl.Matrix == archspec.MatK {
			ly.QKV = slices.Delete(ly.QKV, i, i+1)
			break
		}
	}
	dir := t.TempDir()
	err := gguf.Write(f.m, filepath.Join(dir, "x.gguf"), gguf.Options{})
	if err == nil || !strings.Contains(err.Error(), "blk.1.attn_k.weight") {
		t.Fatalf("err = %v, want it to name blk.1.attn_k.weight", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("left %d files after a failed export", len(ents))
	}
}
