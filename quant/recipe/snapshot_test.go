package recipe

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// llama.cpp publishes its own answers: tests/snapshots/<model>.schema holds,
// per file type, every tensor whose type llama_quant_compute_types (the
// same llama_tensor_get_type llama-quantize runs) sets apart from the
// default, for real models' tensor lists. These tests rebuild those
// models' GGUF tensor lists from their published geometry and require
// Choose to give exactly the snapshot's types — for a dense Llama (the 70B
// rule included), two Qwen3s and gpt-oss-120b (128 experts, rows of 2880
// that need the 32-block fallbacks).

// snapshotRecipes are the snapshot sections this package reproduces.
var snapshotRecipes = map[string]Recipe{"F32": F32, "Q4_0": Q4_0, "Q8_0": Q8_0, "Q4_K_S": Q4_K_S, "Q4_K_M": Q4_K_M,
	"Q5_K_S": Q5_K_S, "Q5_K_M": Q5_K_M, "Q6_K": Q6_K}

type snapshotSection struct {
	def       string
	overrides map[string]string
}

func readSnapshot(t *testing.T, model string) map[string]snapshotSection {
	t.Helper()
	p := filepath.Join("..", "..", "bench", "llama.cpp", "tests", "snapshots", model+".schema")
	f, err := os.Open(p)
	if err != nil {
		if os.Getenv("CFLOW_REQUIRE_LLAMA_SRC") == "1" {
			t.Fatalf("%v (run make llama-src): CFLOW_REQUIRE_LLAMA_SRC=1 requires it", err)
		}
		t.Skipf("%v (run make llama-src): skipping the comparison with llama.cpp's type snapshots", err)
	}
	defer f.Close()
	out := map[string]snapshotSection{}
	var cur *snapshotSection
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		if line[0] == '[' {
			name, def, ok := strings.Cut(line[1:], "] ")
			if !ok {
				t.Fatalf("%s: bad section %q", p, line)
			}
			s := snapshotSection{def: def, overrides: map[string]string{}}
			out[name] = s
			cur = &s
			continue
		}
		name, typ, ok := strings.Cut(line, " ")
		if !ok || cur == nil {
			t.Fatalf("%s: bad line %q", p, line)
		}
		cur.overrides[name] = typ
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// geometry is what the snapshots' headers (and the models' configs) give.
type geometry struct {
	embd, ff, vocab, layers, heads, kvHeads, headDim, experts int
	qkNorm, sinks, outputTensor                               bool
}

// tensors is the model's GGUF tensor list as llama.cpp's converter writes
// it, norms and 1-D tensors included (Choose must leave them f32 and out
// of the counters).
func (g geometry) tensors() []Tensor {
	ts := []Tensor{{"token_embd.weight", []int{g.embd, g.vocab}}, {"output_norm.weight", []int{g.embd}}}
	if g.outputTensor {
		ts = append(ts, Tensor{"output.weight", []int{g.embd, g.vocab}})
	}
	q, kv := g.heads*g.headDim, g.kvHeads*g.headDim
	for l := 0; l < g.layers; l++ {
		b := fmt.Sprintf("blk.%d.", l)
		add := func(n string, shape ...int) { ts = append(ts, Tensor{b + n, shape}) }
		add("attn_norm.weight", g.embd)
		add("attn_q.weight", g.embd, q)
		add("attn_k.weight", g.embd, kv)
		add("attn_v.weight", g.embd, kv)
		add("attn_output.weight", q, g.embd)
		if g.qkNorm {
			add("attn_q_norm.weight", g.headDim)
			add("attn_k_norm.weight", g.headDim)
		}
		if g.sinks {
			add("attn_sinks.weight", g.heads)
		}
		if g.experts > 1 {
			add("post_attention_norm.weight", g.embd)
			add("ffn_gate_inp.weight", g.embd, g.experts)
			add("ffn_gate_exps.weight", g.embd, g.ff, g.experts)
			add("ffn_up_exps.weight", g.embd, g.ff, g.experts)
			add("ffn_down_exps.weight", g.ff, g.embd, g.experts)
		} else {
			add("ffn_norm.weight", g.embd)
			add("ffn_gate.weight", g.embd, g.ff)
			add("ffn_up.weight", g.embd, g.ff)
			add("ffn_down.weight", g.ff, g.embd)
		}
	}
	return ts
}

var snapshotModels = []struct {
	name  string
	arch  string
	geom  geometry
	is70B bool
}{
	{"meta-llama-3.1-70b-instruct", "llama", geometry{embd: 8192, ff: 28672, vocab: 128256, layers: 80, heads: 64, kvHeads: 8, headDim: 128, outputTensor: true}, true},
	{"qwen3-0.6b", "qwen3", geometry{embd: 1024, ff: 3072, vocab: 151936, layers: 28, heads: 16, kvHeads: 8, headDim: 128, qkNorm: true, outputTensor: true}, false},
	{"qwen3-14b", "qwen3", geometry{embd: 5120, ff: 17408, vocab: 151936, layers: 40, heads: 40, kvHeads: 8, headDim: 128, qkNorm: true, outputTensor: true}, false},
	{"gpt-oss-120b", "gpt-oss", geometry{embd: 2880, ff: 2880, vocab: 201088, layers: 36, heads: 64, kvHeads: 8, headDim: 64, experts: 128, sinks: true, outputTensor: true}, false},
}

func TestChooseMatchesLlamaCppSnapshots(t *testing.T) {
	for _, sm := range snapshotModels {
		snap := readSnapshot(t, sm.name)
		ts := sm.geom.tensors()
		m := Model{Arch: sm.arch, Layers: sm.geom.layers, Experts: sm.geom.experts, Is70B: sm.is70B}
		names := map[string]bool{}
		for _, x := range ts {
			names[x.Name] = true
		}
		checked := 0
		for sec, r := range snapshotRecipes {
			s, ok := snap[sec]
			if !ok {
				t.Fatalf("%s: snapshot has no [%s] section", sm.name, sec)
			}
			for n := range s.overrides {
				if !names[n] {
					t.Fatalf("%s [%s]: snapshot names %s, which the rebuilt tensor list lacks", sm.name, sec, n)
				}
			}
			got, err := Choose(r, m, ts, Options{})
			if err != nil {
				t.Fatalf("%s %s: %v", sm.name, r, err)
			}
			for i, x := range ts {
				want := s.def
				if o, ok := s.overrides[x.Name]; ok {
					want = o
				}
				if !allowsQuantization(x) {
					// Not in the snapshot (llama.cpp keeps the source
					// type); cflow stores them f32.
					want = "f32"
				} else {
					checked++
				}
				if g := got[i].String(); g != want {
					t.Errorf("%s [%s] %s %v: got %s, llama.cpp %s", sm.name, sec, x.Name, x.Shape, g, want)
				}
			}
		}
		t.Logf("%s: %d quantized (tensor, recipe) choices as llama.cpp's snapshot", sm.name, checked)
	}
}
