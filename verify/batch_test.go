package verify

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/cflow-dev/cflow/engine"
	"github.com/cflow-dev/cflow/quant"
	"github.com/cflow-dev/cflow/trace"
)

// fixtureModels lists every architecture fixture (golden/fixtures and the
// HF families' golden/families/fixtures) the converter accepts (a refused
// one is reported by refusedFamilyFixture).
func fixtureModels(t *testing.T) []string {
	var dirs []string
	for _, g := range []string{filepath.Join(goldenDir, "fixtures", "*"), filepath.Join(goldenDir, "families", "fixtures", "*")} {
		ms, _ := filepath.Glob(g)
		for _, m := range ms {
			if _, err := os.Stat(filepath.Join(m, "config.json")); err == nil && !refusedFamilyFixture(t, m) {
				dirs = append(dirs, m)
			}
		}
	}
	if len(dirs) == 0 {
		t.Skip("no fixtures")
	}
	return dirs
}

// testTokens is a deterministic token sequence of n ids below vocab, long
// enough to cross a batch boundary and the fixtures' sliding windows.
func testTokens(n, vocab, seed int) []int {
	ts := make([]int, n)
	x := uint32(seed*2654435761 + 12345)
	for i := range ts {
		x = x*1664525 + 1013904223
		ts[i] = int(x>>8) % vocab
	}
	return ts
}

// stepAll feeds toks one Step at a time from an empty sequence and keeps
// every position's logits and observation.
func stepAll(t *testing.T, e *engine.Engine, toks []int) (logits [][]float32, norms [][]float64) {
	t.Helper()
	e.Reset()
	for _, tok := range toks {
		l, err := e.Step(tok)
		if err != nil {
			t.Fatal(err)
		}
		logits = append(logits, append([]float32(nil), l...))
		norms = append(norms, append(append([]float64(nil), e.Observation().ResidualNorms...), e.Observation().PreLMHeadNorm))
	}
	return logits, norms
}

// maxRel is the largest |a−b| / max(|b|, floor) over the pairs.
func maxRel[F float32 | float64](a, b []F, floor float64) float64 {
	var m float64
	for i := range a {
		d := math.Abs(float64(a[i]) - float64(b[i]))
		m = max(m, d/math.Max(math.Abs(float64(b[i])), floor))
	}
	return m
}

// TestBatchedPrefillMatchesSteps: for every architecture fixture, F32 and
// Q4_0 files, with the float-activation kernel and with the default (int8
// activation) kernel, feeding a prompt as batched prefill gives every
// position what feeding it token by token gives, and Prefill the same last
// logits. On float kernels: within 1e-5 relative (DotBatch without a
// multi-column kernel is bit-identical). On int8 kernels, where a
// multi-column kernel may sum in another order: TRACE.md's replay rule
// (norms 1e-3 relative, logits 1e-3 of the largest, same argmax where the
// top-2 gap exceeds 1e-3). Batches of 24 columns put two batch boundaries
// inside the prompt.
func TestBatchedPrefillMatchesSteps(t *testing.T) {
	kernels := []*quant.Kernel{Kernel()}
	if k := quant.DefaultKernel(); k.QuantizesActivations() {
		kernels = append(kernels, k)
	}
	for _, fixture := range fixtureModels(t) {
		for _, q := range []quant.Type{quant.F32, quant.Q4_0} {
			t.Run(filepath.Base(fixture)+"/"+q.String(), func(t *testing.T) {
				for _, k := range kernels {
					e := convertFixture(t, fixture, t.TempDir(), ".cflow", q, engine.Options{Batch: 24, Kernel: k})
					h := e.Header()
					toks := testTokens(min(61, int(h.MaxSeqLen)-1), int(h.VocabSize), 7)
					wantL, wantN := stepAll(t, e, toks)
					e.Reset()
					var worst float64
					var bad []string
					err := e.PrefillEach(toks, func(i int, l []float32, obs *engine.Observation) error {
						gotN := append(append([]float64(nil), obs.ResidualNorms...), obs.PreLMHeadNorm)
						worst = max(worst, maxRel(l, wantL[i], 1e-3), maxRel(gotN, wantN[i], 1e-12))
						if why := replayRule(l, wantL[i], gotN, wantN[i]); why != "" {
							bad = append(bad, fmt.Sprintf("position %d: %s", i, why))
						}
						return nil
					})
					if err != nil {
						t.Fatal(err)
					}
					if e.Pos() != len(toks) {
						t.Errorf("%s: position %d after prefilling %d tokens", k, e.Pos(), len(toks))
					}
					e.Reset()
					last, err := e.Prefill(toks)
					if err != nil {
						t.Fatal(err)
					}
					worst = max(worst, maxRel(last, wantL[len(toks)-1], 1e-3))
					t.Logf("kernel %s: %d tokens, worst relative difference batched vs token by token %.3g", k, len(toks), worst)
					if k.QuantizesActivations() {
						if len(bad) > 0 {
							t.Errorf("kernel %s: batched prefill breaks TRACE.md's replay rule against token by token: %v", k, bad)
						}
					} else if worst > 1e-5 {
						t.Errorf("kernel %s: batched prefill differs from token by token by %.3g relative (> 1e-5)", k, worst)
					}
					// Decoding continues from the prefilled cache as from a stepped one.
					l, err := e.Step(toks[0])
					if err != nil {
						t.Fatal(err)
					}
					l = append([]float32(nil), l...)
					e.Reset()
					for _, tok := range toks {
						if _, err := e.Step(tok); err != nil {
							t.Fatal(err)
						}
					}
					l2, _ := e.Step(toks[0])
					if why := replayRule(l, l2, nil, nil); why != "" {
						t.Errorf("kernel %s: the step after a prefill: %s", k, why)
					}
				}
			})
		}
	}
}

// replayRule checks got against want by TRACE.md's replay rule (norms
// within 1e-3 relative; logits within 1e-3 of the largest |logit|; the
// same argmax wherever want's top-2 gap exceeds 1e-3) and says what fails.
func replayRule(got, want []float32, gotN, wantN []float64) string {
	if r := maxRel(gotN, wantN, 1e-12); r > 1e-3 {
		return fmt.Sprintf("residual norms differ by %.3g relative", r)
	}
	var scale float64
	for _, z := range want {
		scale = max(scale, math.Abs(float64(z)))
	}
	for i := range want {
		if d := math.Abs(float64(got[i]) - float64(want[i])); d > 1e-3*scale {
			return fmt.Sprintf("logit %d differs by %.3g (scale %.3g)", i, d, scale)
		}
	}
	top := trace.TopK(want, 2)
	if len(top) == 2 && float64(want[top[0]]-want[top[1]]) > 1e-3 && trace.TopK(got, 1)[0] != top[0] {
		return fmt.Sprintf("argmax %d, want %d", trace.TopK(got, 1)[0], top[0])
	}
	return ""
}

// TestStepBatchMatchesAlone: several sequences of different lengths (each
// prefilled on its own), then decoded together with StepBatch — one pass
// over the weights for all of them — give each sequence exactly the logits
// it gets alone on a fresh engine, for every architecture fixture.
func TestStepBatchMatchesAlone(t *testing.T) {
	for _, fixture := range fixtureModels(t) {
		t.Run(filepath.Base(fixture), func(t *testing.T) {
			e := convertFixture(t, fixture, t.TempDir(), ".cflow", quant.Q4_0, engine.Options{})
			h := e.Header()
			V, maxLen := int(h.VocabSize), int(h.MaxSeqLen)
			const decode = 6
			var seqs []*engine.Sequence
			var streams [][]int
			for i, plen := range []int{5, 1, 17} {
				plen = min(plen, maxLen-decode)
				toks := testTokens(plen+decode, V, 100+i)
				streams = append(streams, toks)
				q := e.NewSequence()
				if _, err := e.PrefillSequence(q, toks[:plen], nil); err != nil {
					t.Fatal(err)
				}
				seqs = append(seqs, q)
			}
			got := make([][][]float32, len(seqs))
			for d := range decode {
				var in []int
				for i, q := range seqs {
					in = append(in, streams[i][q.Pos()])
				}
				ls, err := e.StepBatch(seqs, in)
				if err != nil {
					t.Fatal(err)
				}
				for i, l := range ls {
					got[i] = append(got[i], append([]float32(nil), l...))
				}
				_ = d
			}
			for i, toks := range streams {
				want, _ := stepAll(t, e, toks)
				plen := len(toks) - decode
				for d := range decode {
					if r := maxRel(got[i][d], want[plen+d], 1e-3); r > 1e-5 {
						t.Errorf("sequence %d, decode step %d: batched logits differ from alone by %.3g", i, d, r)
					}
				}
			}
			// Refusals name the column and feed nothing.
			pos := seqs[0].Pos()
			if _, err := e.StepBatch([]*engine.Sequence{seqs[0], seqs[0]}, []int{1, 1}); err == nil {
				t.Error("a sequence twice in one batch: no error")
			}
			if _, err := e.StepBatch(seqs[:2], []int{1, V}); err == nil {
				t.Error("a token outside the vocabulary: no error")
			}
			if seqs[0].Pos() != pos {
				t.Errorf("a refused batch moved sequence 0 from %d to %d", pos, seqs[0].Pos())
			}
		})
	}
}
