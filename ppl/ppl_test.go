package ppl

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/convert"
	"github.com/cflow-dev/cflow/engine"
	"github.com/cflow-dev/cflow/quant"
	"github.com/cflow-dev/cflow/verify"
	"github.com/cflow-dev/cflow/vflowfmt"
)

const (
	trainedDir  = "../golden/trained"
	resultsPath = "../golden/train/results.json"
	headText    = "../golden/train/text/head.txt"
	// demoModel is the committed arch2_4_combined checkpoint that make demo
	// runs (trained longer than the equal-budget table's models).
	demoModel = "arch2_4_combined_demo"
)

// metrics is one entry of golden/train/results.json.
type metrics struct {
	Loss        float64 `json:"loss"`
	PPL         float64 `json:"ppl"`
	BitsPerByte float64 `json:"bits_per_byte"`
	Tokens      int     `json:"tokens"`
	Ctx         int     `json:"ctx"`
}

type results struct {
	Models map[string]struct {
		Head map[string]metrics `json:"head"`
	} `json:"models"`
}

func loadResults(t *testing.T) *results {
	t.Helper()
	b, err := os.ReadFile(resultsPath)
	if err != nil {
		t.Skipf("no pinned PyTorch numbers yet: %v", err)
	}
	var r results
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

func convertTrained(t *testing.T, arch, ext string, q quant.Type) *cflowfmt.Model {
	t.Helper()
	in := filepath.Join(trainedDir, arch)
	out := filepath.Join(t.TempDir(), arch+"_"+q.String()+ext)
	if _, err := convert.Convert(context.Background(), in, out, convert.Options{Quant: q, NUMANodes: 1, Workers: 2}); err != nil {
		t.Fatalf("convert %s: %v", in, err)
	}
	m, err := vflowfmt.OpenModel(out)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func relErr(got, want float64) float64 { return math.Abs(got-want) / math.Abs(want) }

// TestTrainedPPL: on the committed trained checkpoints and the first 1 KB of
// the test split, the Go perplexity matches golden/train/eval.py's PyTorch
// numbers: the F32 file within 0.1% of the f32 reference (in fact ~1e-6),
// the Q8_0 file within 1% of it (issue 10), and (the demo model) each
// quantized file, with f32 activations, within 0.1% of its own *_replay
// reference; (llama) ctx 64 matches the reference's ctx-64 number. The Q4_0
// gap to f32 is logged. -short runs the demo model only.
func TestTrainedPPL(t *testing.T) {
	res := loadResults(t)
	text, err := os.ReadFile(headText)
	if err != nil {
		t.Skipf("no short text: %v", err)
	}
	archs := []string{demoModel, "llama"}
	if testing.Short() {
		archs = archs[:1]
	}
	for _, arch := range archs {
		ref, ok := res.Models[arch]
		if _, err := os.Stat(filepath.Join(trainedDir, arch, "model.safetensors")); err != nil || !ok {
			t.Logf("%s: no trained checkpoint or pinned numbers, skipped", arch)
			continue
		}
		t.Run(arch, func(t *testing.T) {
			f32 := ref.Head["f32"]
			ext := ".cflow"
			if arch == "llama" {
				ext = ".vflow" // both formats covered across the two models
			}
			var f32Model *cflowfmt.Model
			for _, q := range []quant.Type{quant.F32, quant.Q8_0, quant.Q4_0} {
				m := convertTrained(t, arch, ext, q)
				if q == quant.F32 {
					f32Model = m
				}
				r, err := Text(m, text, Options{Threads: 2})
				if err != nil {
					t.Fatal(err)
				}
				if r.Tokens != f32.Tokens || r.Ctx != f32.Ctx || r.Bytes != len(text) {
					t.Fatalf("%s: %d tokens at ctx %d, reference %d at ctx %d", q, r.Tokens, r.Ctx, f32.Tokens, f32.Ctx)
				}
				gap := relErr(r.PPL, f32.PPL)
				t.Logf("%s %s (kernel %s): ppl %.5f bits/byte %.5f; f32 reference ppl %.5f, gap %+.3f%%",
					arch, q, quant.DefaultKernel(), r.PPL, r.BitsPerByte, f32.PPL, 100*(r.PPL/f32.PPL-1))
				switch q {
				case quant.F32:
					if gap > 1e-3 || relErr(r.BitsPerByte, f32.BitsPerByte) > 1e-3 {
						t.Errorf("F32 ppl %.6f / bpb %.6f, reference %.6f / %.6f: more than 0.1%% apart",
							r.PPL, r.BitsPerByte, f32.PPL, f32.BitsPerByte)
					}
					// The F32 path has no quantization at all: expect float noise only.
					if gap > 1e-5 {
						t.Errorf("F32 ppl %.7f vs reference %.7f: %.2e relative, expected float noise", r.PPL, f32.PPL, gap)
					}
					continue
				case quant.Q8_0:
					if gap > 1e-2 {
						t.Errorf("Q8_0 ppl %.5f vs f32 reference %.5f: %.2f%% > 1%%", r.PPL, f32.PPL, 100*gap)
					}
				}
				if arch != demoModel {
					continue // the replay checks run on one model, to keep the test fast
				}
				replay := ref.Head[map[quant.Type]string{quant.Q8_0: "q8_replay", quant.Q4_0: "q4_replay"}[q]]
				rf, err := Text(m, text, Options{Threads: 2, Kernel: verify.Kernel()})
				if err != nil {
					t.Fatal(err)
				}
				if g := relErr(rf.PPL, replay.PPL); g > 1e-3 {
					t.Errorf("%s with f32 activations: ppl %.6f vs replay reference %.6f (%.3f%%)", q, rf.PPL, replay.PPL, 100*g)
				}
			}
			// A short context exercises many chunks: the reference pins ctx 64.
			if r64, ok := ref.Head["f32_ctx64"]; ok && arch == "llama" {
				r, err := Text(f32Model, text, Options{Ctx: 64, Threads: 2})
				if err != nil {
					t.Fatal(err)
				}
				if r.Chunks != (len(text)+62)/63 || relErr(r.PPL, r64.PPL) > 1e-5 {
					t.Errorf("ctx 64: ppl %.6f over %d chunks, reference %.6f", r.PPL, r.Chunks, r64.PPL)
				}
			}
		})
	}
}

func TestNLL(t *testing.T) {
	logits := []float32{1, 2, 3, 0}
	var s float64
	for _, z := range logits {
		s += math.Exp(float64(z))
	}
	for i, z := range logits {
		want := math.Log(s) - float64(z)
		if got := NLL(logits, i); math.Abs(got-want) > 1e-12 {
			t.Errorf("NLL(%d) = %v, want %v", i, got, want)
		}
	}
	// Large logits must not overflow.
	if got := NLL([]float32{1000, 1000}, 0); math.Abs(got-math.Ln2) > 1e-12 {
		t.Errorf("NLL of two equal large logits = %v, want ln 2", got)
	}
}

// TestEvaluateErrors: bad contexts, empty texts and out-of-vocabulary ids are
// refused before any decoding.
func TestEvaluateErrors(t *testing.T) {
	if _, err := os.Stat(filepath.Join(trainedDir, "llama", "model.safetensors")); err != nil {
		t.Skip("no trained llama checkpoint")
	}
	m := convertTrained(t, "llama", ".cflow", quant.Q4_0)
	e, err := engine.New(m, engine.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	max := int(m.Header.MaxSeqLen)
	for name, c := range map[string]struct {
		ids            []int
		bos, ctx, size int
	}{
		"empty":     {nil, 256, 16, 1},
		"ctx 1":     {[]int{1}, 256, 1, 1},
		"ctx > max": {[]int{1}, 256, max + 1, 1},
		"bad bos":   {[]int{1}, 999, 16, 1},
		"bad id":    {[]int{1, 300}, 256, 16, 2},
		"no bytes":  {[]int{1}, 256, 16, 0},
	} {
		if _, err := Evaluate(e, c.ids, c.bos, c.ctx, c.size, nil); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	// ctx 2: every token is predicted from BOS alone, so each chunk's NLL is
	// the BOS step's; the total over n copies of one byte is n times it.
	r, err := Evaluate(e, []int{'a', 'a', 'a'}, 256, 2, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	e.Reset()
	logits, err := e.Step(256)
	if err != nil {
		t.Fatal(err)
	}
	if want := 3 * NLL(logits, 'a'); r.Chunks != 3 || math.Abs(r.NLL-want) > 1e-9*want {
		t.Errorf("ctx 2: %d chunks, NLL %v, want 3 chunks, %v", r.Chunks, r.NLL, want)
	}
}
