package engine

import (
	"fmt"
	"slices"
	"testing"

	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/quant"
)

// pairingKernel is a path with a two-stream Q4 kernel (avx2i8 on any
// AVX2 CPU), so the paired walk is tested whatever the default path is;
// nil where this CPU and build have none.
func pairingKernel() *quant.Kernel {
	for _, k := range quant.Kernels() {
		if k.PairsQ4() {
			return k
		}
	}
	return nil
}

// pairKernel is pairingKernel, skipping the test where there is none.
func pairKernel(t *testing.T) *quant.Kernel {
	t.Helper()
	k := pairingKernel()
	if k == nil {
		t.Skip("no path with a two-stream kernel on this CPU/build")
	}
	return k
}

// wideCase is a llama whose matrices tile 128×256 like real models', so
// paired stripes reach the two-stream kernel itself (the arch cases'
// 16×32 tiles have one group a row and take DotPair's Dot fallback). Its
// LM head has three stripes, the last of 44 rows: an odd count.
func wideCase() archCase {
	h := baseHeader()
	h.HiddenSize, h.IntermediateSize, h.VocabSize = 256, 512, 300
	h.NumHeads, h.NumKVHeads, h.HeadDim = 4, 2, 64
	h.TileRows, h.TileCols = 128, 256
	return archCase{"llama_128x256", h, nil}
}

// TestPairedStripesSameBits: the two-stripe walk gives the same logits,
// residual norms and expert choices, bit for bit, as the one-stripe walk,
// for every architecture, at 1 and 2 threads.
func TestPairedStripesSameBits(t *testing.T) {
	k := pairKernel(t)
	for _, c := range append(archCases(), wideCase()) {
		tm := c.build(quant.Q4_0, 13)
		for _, threads := range []int{1, 2} {
			paired, single := newEngineOn(t, tm.m, threads, k), newEngineOn(t, tm.m, threads, k)
			if !paired.pairs {
				t.Fatalf("%s: engine on %s does not pair stripes", c.name, k)
			}
			single.pairs = false
			stepsSameBits(t, fmt.Sprintf("%s, %d threads", c.name, threads), paired, single)
		}
	}
}

// stepsSameBits steps both engines through testTokens and fails unless
// every step's logits, residual norms and expert choices are the same bits.
func stepsSameBits(t *testing.T, what string, paired, single *Engine) {
	t.Helper()
	for i, tok := range testTokens {
		a, err := paired.Step(tok)
		if err != nil {
			t.Fatal(err)
		}
		b, err := single.Step(tok)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(a, b) {
			t.Fatalf("%s, step %d: paired logits differ from one stripe at a time", what, i)
		}
		oa, ob := paired.Observation(), single.Observation()
		if !slices.Equal(oa.ResidualNorms, ob.ResidualNorms) || oa.PreLMHeadNorm != ob.PreLMHeadNorm ||
			!slices.EqualFunc(oa.Experts, ob.Experts, slices.Equal) {
			t.Fatalf("%s, step %d: paired observation differs", what, i)
		}
	}
}

// TestPairedStripesReadEveryTileOnce: a paired token reads each tile the
// one-stripe walk reads, once, in two forward streams per matvec.
func TestPairedStripesReadEveryTileOnce(t *testing.T) {
	k := pairKernel(t)
	tm := wideCase().build(quant.Q4_0, 2)
	paired, single := newEngineOn(t, tm.m, 1, k), newEngineOn(t, tm.m, 1, k)
	single.pairs = false
	rp, rs := recordReads(paired), recordReads(single)
	for _, tok := range testTokens[:2] {
		*rp, *rs = (*rp)[:0], (*rs)[:0]
		if _, err := paired.Step(tok); err != nil {
			t.Fatal(err)
		}
		if _, err := single.Step(tok); err != nil {
			t.Fatal(err)
		}
		offs := func(rs []read) []int64 {
			var o []int64
			for _, r := range rs {
				if r.m != archspec.MatEmbed {
					o = append(o, r.off)
				}
			}
			return o
		}
		po, so := offs(*rp), offs(*rs)
		if slices.Equal(po, so) {
			t.Fatal("paired reads come in the one-stripe order: nothing was paired")
		}
		if backwardReads(so, 1) != 0 || backwardReads(po, 2) != 0 {
			t.Fatalf("backward reads: one stripe %d, paired (two streams) %d", backwardReads(so, 1), backwardReads(po, 2))
		}
		slices.Sort(po)
		if !slices.Equal(po, so) {
			t.Fatal("paired walk reads other tiles than the one-stripe walk")
		}
	}
}

// TestPairedOneColumnFeeds: a one-column StepFeeds (a server with one
// client decoding) walks the pairs too, with the bits of the one-stripe
// walk, and a prompt's feed (several columns) is untouched by pairing.
func TestPairedOneColumnFeeds(t *testing.T) {
	k := pairKernel(t)
	for _, c := range append(archCases(), wideCase()) {
		tm := c.build(quant.Q4_0, 17)
		paired, single := newEngineOn(t, tm.m, 2, k), newEngineOn(t, tm.m, 2, k)
		single.pairs = false
		qp, qs := paired.NewSequence(), single.NewSequence()
		feed := func(e *Engine, q *Sequence, toks []int) []float32 {
			out, err := e.StepFeeds([]Feed{{Seq: q, Toks: toks, Logits: true}})
			if err != nil {
				t.Fatal(err)
			}
			return out[0]
		}
		if a, b := feed(paired, qp, testTokens[:3]), feed(single, qs, testTokens[:3]); !slices.Equal(a, b) {
			t.Fatalf("%s: a 3-token feed's logits differ with pairing on", c.name)
		}
		for i, tok := range testTokens[3:] {
			if a, b := feed(paired, qp, []int{tok}), feed(single, qs, []int{tok}); !slices.Equal(a, b) {
				t.Fatalf("%s, token %d: one-column feed's logits differ with pairing on", c.name, i)
			}
		}
	}
	tm := wideCase().build(quant.Q4_0, 3)
	paired, single := newEngineOn(t, tm.m, 1, k), newEngineOn(t, tm.m, 1, k)
	single.pairs = false
	rp, rs := recordReads(paired), recordReads(single)
	for _, e := range []*Engine{paired, single} {
		if _, err := e.StepFeeds([]Feed{{Seq: e.NewSequence(), Toks: []int{5}, Logits: true}}); err != nil {
			t.Fatal(err)
		}
	}
	if slices.Equal(*rp, *rs) {
		t.Fatal("a one-column feed reads in the one-stripe order: nothing was paired")
	}
}
