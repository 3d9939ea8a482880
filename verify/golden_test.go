package verify

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/cflow-dev/cflow/convert"
	"github.com/cflow-dev/cflow/engine"
	"github.com/cflow-dev/cflow/quant"
	"github.com/cflow-dev/cflow/trace"
	"github.com/cflow-dev/cflow/vflowfmt"
)

const goldenDir = "../golden"

// convertFixture converts a golden fixture with the converter's API into
// dir, as .cflow or .vflow (ext), and opens it with the format readers.
func convertFixture(t *testing.T, fixture, dir, ext string, q quant.Type, opt ...engine.Options) *engine.Engine {
	t.Helper()
	out := filepath.Join(dir, filepath.Base(fixture)+"_"+q.String()+ext)
	if _, err := convert.Convert(context.Background(), fixture, out, convert.Options{Quant: q, NUMANodes: 1, Workers: 1}); err != nil {
		t.Fatalf("convert %s: %v", fixture, err)
	}
	m, err := vflowfmt.OpenModel(out)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	o := engine.Options{Kernel: Kernel()}
	if len(opt) > 0 {
		o = opt[0]
	}
	o.Threads = 2
	if o.Kernel == nil {
		o.Kernel = Kernel()
	}
	e, err := engine.New(m, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

// TestGoldenTraces is the "done when": every pinned trace verifies
// on both formats — F32 files against f32 traces, Q8_0/Q4_0 files against
// their *_replay traces.
func TestGoldenTraces(t *testing.T) {
	checkPinned(t, filepath.Join(goldenDir, "fixtures"), filepath.Join(goldenDir, "traces"))
}

// TestFamilyTraces verifies the real Hugging Face families' pinned traces
// (golden/families: Llama 3 / Llama 2 rope scaling and biases, Mistral,
// Qwen2.5, Qwen3, Qwen3-MoE, Gemma 3) on both formats in all three quant
// types, exactly as TestGoldenTraces does for the pipeline-native ones.
func TestFamilyTraces(t *testing.T) {
	fam := filepath.Join(goldenDir, "families")
	checkPinned(t, filepath.Join(fam, "fixtures"), filepath.Join(fam, "traces"))
}

// TestGemma4TextTraces verifies the real Gemma 4 (gemma4_text: the
// 26B-A4B-shaped text-only checkpoint and the multimodal form) on both
// formats in all three quant types.
func TestGemma4TextTraces(t *testing.T) {
	g := filepath.Join(goldenDir, "gemma4_text")
	checkPinned(t, filepath.Join(g, "fixtures"), filepath.Join(g, "traces"))
}

// refusedFamilyFixture reports whether a family fixture uses a config key
// the converter refuses by design (Qwen3-MoE checkpoints with dense layers
// among the MoE ones: mlp_only_layers, decoder_sparse_step ≠ 1 — the
// published Qwen3-MoE models have none). The conversion must then fail
// naming the key; the fixture's traces cannot be replayed and the test
// says so instead of passing silently.
func refusedFamilyFixture(t *testing.T, fixture string) bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixture, "config.json"))
	if err != nil {
		return false
	}
	var cfg struct {
		MLPOnly []int `json:"mlp_only_layers"`
		Step    *int  `json:"decoder_sparse_step"`
	}
	if json.Unmarshal(b, &cfg) != nil {
		return false
	}
	key := ""
	switch {
	case len(cfg.MLPOnly) > 0:
		key = "mlp_only_layers"
	case cfg.Step != nil && *cfg.Step != 1:
		key = "decoder_sparse_step"
	default:
		return false
	}
	out := filepath.Join(t.TempDir(), "refused.cflow")
	_, err = convert.Convert(context.Background(), fixture, out, convert.Options{Quant: quant.F32, NUMANodes: 1, Workers: 1})
	if err == nil || !strings.Contains(err.Error(), key) {
		t.Errorf("%s: converting a config with %s gave %v, want a refusal naming the key", filepath.Base(fixture), key, err)
	}
	if _, statErr := os.Stat(out); statErr == nil {
		t.Errorf("%s: refused conversion left %s", filepath.Base(fixture), out)
	}
	t.Logf("%s: NOT VERIFIED — %s (dense layers among MoE layers) is refused by the converter (exit 2, key named), so its traces cannot be replayed", filepath.Base(fixture), key)
	return true
}

// TestTrainedTraces does the same for the trained TinyStories models, and
// also holds their Q8_0 files to the f32 traces with TRACE.md's Q8 rule: on
// trained weights that bar is meaningful and holds. Q4_0 against f32 is
// still short of TRACE.md's 5% norm bar at d 128 (issue 6, docs/PARITY.md).
func TestTrainedTraces(t *testing.T) {
	checkPinned(t, filepath.Join(goldenDir, "trained"), filepath.Join(goldenDir, "trained", "traces"), quant.Q8_0)
}

// checkPinned converts every model in modelDir that has traces in traceDir
// to F32, Q8_0 and Q4_0 in both formats and replays each applicable trace.
// Quantized files are checked against f32 traces only for the quant types
// in crossChecked.
func checkPinned(t *testing.T, modelDir, traceDir string, crossChecked ...quant.Type) {
	traces, _ := filepath.Glob(filepath.Join(traceDir, "*.json"))
	if len(traces) == 0 {
		t.Skipf("no pinned traces in %s", traceDir)
	}
	byModel := map[string][]string{}
	for _, p := range traces {
		base := strings.TrimSuffix(filepath.Base(p), ".json")
		i := strings.LastIndex(base, "_")
		if strings.HasSuffix(base, "_replay") {
			i = strings.LastIndex(base[:i], "_")
		}
		byModel[base[:i]] = append(byModel[base[:i]], p)
	}
	names := make([]string, 0, len(byModel))
	for n := range byModel {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		fixture := filepath.Join(modelDir, name)
		if _, err := os.Stat(fixture); err != nil {
			t.Errorf("%s: traces but no checkpoint: %v", name, err)
			continue
		}
		if refusedFamilyFixture(t, fixture) {
			continue
		}
		for _, q := range []quant.Type{quant.F32, quant.Q8_0, quant.Q4_0} {
			for _, ext := range []string{".cflow", ".vflow"} {
				t.Run(name+"/"+q.String()+ext, func(t *testing.T) {
					e := convertFixture(t, fixture, t.TempDir(), ext, q)
					for _, p := range byModel[name] {
						tr, err := trace.Load(p)
						if err != nil {
							t.Fatal(err)
						}
						rule, err := SelectRule(tr.Weights, q)
						if err != nil {
							continue // e.g. a q4_replay trace against an F32 file
						}
						if tr.Weights == "f32" && q != quant.F32 && !slices.Contains(crossChecked, q) {
							// The f32-vs-Q8/Q4 rows measure quantization noise, not the
							// runtime: TRACE.md's bars are set for trained 512-wide
							// models, and the random fixtures and d 128 Q4_0 miss them
							// (docs/PARITY.md, made by scripts/parity-report.sh). The
							// runtime's exact check is the replay trace.
							continue
						}
						rep, err := Replay(e, tr, rule)
						if err != nil {
							t.Fatalf("%s: %v", filepath.Base(p), err)
						}
						if !rep.Pass {
							var b strings.Builder
							rep.WriteTable(&b)
							t.Errorf("%s:\n%s", filepath.Base(p), b.String())
						}
					}
				})
			}
		}
	}
}

// TestStories260KGreedy: stories260K converted as F32 and decoded greedily
// from BOS (id 1) prints llama2.c's tokens.
func TestStories260KGreedy(t *testing.T) {
	fixture := filepath.Join(goldenDir, "fixtures", "stories260k")
	if _, err := os.Stat(fixture); err != nil {
		t.Skip("golden/fixtures/stories260k not present yet")
	}
	want := []int{461, 461, 401, 401, 401, 461, 378, 455, 473, 456}
	for _, ext := range []string{".cflow", ".vflow"} {
		e := convertFixture(t, fixture, t.TempDir(), ext, quant.F32)
		tok := 1
		for i, w := range want {
			logits, err := e.Step(tok)
			if err != nil {
				t.Fatal(err)
			}
			if tok = trace.TopK(logits, 1)[0]; tok != w {
				t.Fatalf("%s: token %d = %d, llama2.c gives %d", ext, i, tok, w)
			}
		}
	}
}
