package ppl

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/engine"
	"github.com/cflow-dev/cflow/quant"
)

// heldOut is golden/train/data.py's test split (never trained on; licence
// in golden/train/text/NOTICE). heldOutBytes of it keep CI's two kernel
// runs short while scoring thousands of positions per model.
const (
	heldOut      = "../golden/train/text/test.txt"
	heldOutBytes = 8 << 10
)

// qualityBar is TRACE.md's "Quantization quality" table.
var qualityBar = map[quant.Type]struct{ ratio, kld, same float64 }{
	quant.Q8_0: {1.003, 0.002, 0.98},
	quant.Q4_0: {1.03, 0.03, 0.90},
}

func newEngine(t *testing.T, m *cflowfmt.Model) *engine.Engine {
	t.Helper()
	e, err := engine.New(m, engine.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

// TestQuantizationQuality asserts TRACE.md's quantization-quality table for
// both trained models on held-out text, by the ppl --kl-base protocol, with
// the default kernel (int8 activations where the CPU has them; the scalar
// oracle under -tags noasm).
func TestQuantizationQuality(t *testing.T) {
	text, err := os.ReadFile(heldOut)
	if err != nil {
		t.Skipf("no held-out text: %v", err)
	}
	n := heldOutBytes
	if quant.DefaultKernel().Name() == "scalar" {
		// The pure-Go oracle (-tags noasm) is an order of magnitude slower;
		// 2 KB still scores 2k positions per file.
		n = 2 << 10
		t.Logf("scalar kernel: %d bytes of held-out text", n)
	}
	text = text[:min(len(text), n)]
	for _, arch := range []string{demoModel, "llama"} {
		if _, err := os.Stat(filepath.Join(trainedDir, arch, "model.safetensors")); err != nil {
			t.Logf("%s: no trained checkpoint, skipped", arch)
			continue
		}
		t.Run(arch, func(t *testing.T) {
			baseModel := convertTrained(t, arch, ".cflow", quant.F32)
			ids, bos, err := Tokenize(baseModel, text)
			if err != nil {
				t.Fatal(err)
			}
			base := newEngine(t, baseModel)
			ctx := DefaultCtx(&baseModel.Header)
			for _, q := range []quant.Type{quant.Q8_0, quant.Q4_0} {
				c, err := Compare(newEngine(t, convertTrained(t, arch, ".cflow", q)), base, ids, bos, ctx, len(text), nil)
				if err != nil {
					t.Fatal(err)
				}
				bar := qualityBar[q]
				t.Logf("%s %s (kernel %s, %d tokens): ppl %.5f / base %.5f = %.5f (bar ≤ %g), mean KLD %.5f (≤ %g), same top %.2f%% (≥ %g%%), max KLD %.3f",
					arch, q, quant.DefaultKernel(), c.Tokens, c.PPL, c.BasePPL, c.PPLRatio, bar.ratio, c.MeanKLD, bar.kld, 100*c.SameTop, 100*bar.same, c.MaxKLD)
				if c.PPLRatio > bar.ratio || c.MeanKLD > bar.kld || c.SameTop < bar.same {
					t.Errorf("%s %s misses TRACE.md's quality bar: ratio %.5f, mean KLD %.5f, same top %.4f", arch, q, c.PPLRatio, c.MeanKLD, c.SameTop)
				}
			}
		})
	}
}

// TestCompareAgreesWithEvaluate: Compare's two perplexities are exactly
// what Evaluate gives for each file alone on the same chunks, a file held
// against itself has KL 0 and the same top token everywhere, and the KL of
// two different files is the textbook Σ p log(p/q) (checked on one
// position computed independently here).
func TestCompareAgreesWithEvaluate(t *testing.T) {
	if _, err := os.Stat(filepath.Join(trainedDir, "llama", "model.safetensors")); err != nil {
		t.Skip("no trained llama checkpoint")
	}
	text, err := os.ReadFile(headText)
	if err != nil {
		t.Skipf("no short text: %v", err)
	}
	fm, bm := convertTrained(t, "llama", ".cflow", quant.Q4_0), convertTrained(t, "llama", ".cflow", quant.F32)
	ids, bos, err := Tokenize(fm, text)
	if err != nil {
		t.Fatal(err)
	}
	file, base := newEngine(t, fm), newEngine(t, bm)
	const ctx = 100 // several chunks, the last one short
	c, err := Compare(file, base, ids, bos, ctx, len(text), nil)
	if err != nil {
		t.Fatal(err)
	}
	rf, err := Evaluate(file, ids, bos, ctx, len(text), nil)
	if err != nil {
		t.Fatal(err)
	}
	rb, err := Evaluate(base, ids, bos, ctx, len(text), nil)
	if err != nil {
		t.Fatal(err)
	}
	if relErr(c.PPL, rf.PPL) > 1e-12 || relErr(c.BasePPL, rb.PPL) > 1e-12 || c.Tokens != rf.Tokens || c.Chunks != rf.Chunks {
		t.Errorf("Compare ppl %v / base %v over %d tokens, Evaluate %v / %v over %d", c.PPL, c.BasePPL, c.Tokens, rf.PPL, rb.PPL, rf.Tokens)
	}
	if c.MeanKLD <= 0 || c.SameTop >= 1 || c.SameTop <= 0 {
		t.Errorf("Q4_0 vs F32: mean KLD %v, same top %v: expected a small positive divergence", c.MeanKLD, c.SameTop)
	}
	self, err := Compare(base, base, ids, bos, ctx, len(text), nil)
	if err != nil {
		t.Fatal(err)
	}
	if self.MeanKLD != 0 || self.SameTop != 1 || self.PPLRatio != 1 {
		t.Errorf("base vs itself: %+v", self)
	}
	// One position by hand: KL of the distributions after BOS.
	var pb, pf []float64
	for _, e := range []*engine.Engine{base, file} {
		e.Reset()
		z, err := e.Step(bos)
		if err != nil {
			t.Fatal(err)
		}
		var s float64
		p := make([]float64, len(z))
		for i, v := range z {
			p[i] = math.Exp(float64(v))
			s += p[i]
		}
		for i := range p {
			p[i] /= s
		}
		if e == base {
			pb = p
		} else {
			pf = p
		}
	}
	var want float64
	for i := range pb {
		want += pb[i] * math.Log(pb[i]/pf[i])
	}
	lb := make([]float64, len(pb))
	base.Reset()
	zb, _ := base.Step(bos)
	logSoftmax(lb, zb)
	file.Reset()
	zf, _ := file.Step(bos)
	if got := klFrom(lb, zf, make([]float64, len(zf))); math.Abs(got-want) > 1e-9*math.Max(want, 1e-6) {
		t.Errorf("KL after BOS: %v, textbook %v", got, want)
	}
}
