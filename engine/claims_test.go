package engine

import (
	"testing"

	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/quant"
)

func tileBytes(ts []cflowfmt.MappedTile) int64 {
	var b int64
	for i := range ts {
		b += int64(ts[i].Bytes())
	}
	return b
}

// TestClaim1OnlySelectedExperts: a MoE token reads attention + dense +
// router bytes and exactly the bytes of the experts the (independent)
// reference router selects; ExpertTiles is never asked for another expert.
func TestClaim1OnlySelectedExperts(t *testing.T) {
	c := archCases()[3] // arch2_4_combined
	c.h.NumExperts, c.h.TopK = 8, 2
	tm := c.build(quant.Q4_0, 11)
	e := newEngine(t, tm.m, 2)
	ref := newRef(tm)
	var attn, dense, router int64
	for _, l := range tm.m.Layers {
		attn += tileBytes(l.QKV) + tileBytes(l.O)
		dense += tileBytes(l.GateUp) + tileBytes(l.Down)
		router += tileBytes(l.Router)
	}
	// DelayedSum's first δd FFNs read the zero vector and are skipped.
	dense -= tileBytes(tm.m.Layers[0].GateUp) + tileBytes(tm.m.Layers[0].Down)
	touched := map[[2]int]bool{}
	for i, tok := range testTokens {
		if _, err := e.Step(tok); err != nil {
			t.Fatal(err)
		}
		_, sels := ref.step(tok)
		var experts int64
		for l, s := range sels {
			for _, x := range s {
				experts += tm.expertBytes[[2]int{l, x}]
				touched[[2]int{l, x}] = true
			}
		}
		got := e.Stats().Last
		if got.Attn != attn || got.Dense != dense || got.Router != router || got.Experts != experts {
			t.Fatalf("token %d read %+v; want attn %d dense %d router %d experts %d", i, got, attn, dense, router, experts)
		}
		var all int64
		for _, b := range tm.expertBytes {
			all += b
		}
		if experts >= all {
			t.Fatalf("test is vacuous: selected experts cover the whole bank")
		}
	}
	for k := range tm.expertCalls {
		if !touched[k] {
			t.Fatalf("expert %v parsed but never selected", k)
		}
	}
}

type read struct {
	off int64
	m   archspec.MatrixID
}

func recordReads(e *Engine) *[]read {
	var rs []read
	e.readHook = func(off int64, m archspec.MatrixID) { rs = append(rs, read{off, m}) }
	return &rs
}

// TestClaim5ForwardReads: within a token, the offsets of non-expert tile
// reads never go backwards (after the one embedding-row lookup); a
// block-iterated model goes back exactly once per repeated pass. On a path
// with a two-stream kernel, which walks each matvec as two runs of stripes
// at once (matvec_pairs.go), the reads are two forward streams: the same
// holds with one cursor per stream.
func TestClaim5ForwardReads(t *testing.T) {
	kernels := []*quant.Kernel{testKernel}
	if k := pairingKernel(); k != nil {
		kernels = append(kernels, k)
	}
	for _, k := range kernels {
		for _, c := range archCases() {
			t.Run(k.Name()+"/"+c.name, func(t *testing.T) {
				tm := c.build(quant.Q4_0, 5)
				e := newEngineOn(t, tm.m, 1, k)
				streams := 1
				if e.pairs {
					streams = 2
				}
				rs := recordReads(e)
				iters := int(tm.m.Meta.U32(cflowfmt.KeyBlockIterations, 1))
				for _, tok := range testTokens[:3] {
					*rs = (*rs)[:0]
					if _, err := e.Step(tok); err != nil {
						t.Fatal(err)
					}
					seq := *rs
					for len(seq) > 0 && seq[0].m == archspec.MatEmbed {
						seq = seq[1:]
					}
					var offs []int64
					for _, r := range seq {
						if !r.m.IsExpert() {
							offs = append(offs, r.off)
						}
					}
					if want := int(c.h.NumLayers) * (iters - 1); backwardReads(offs, streams) != want {
						t.Fatalf("%d backward non-expert reads in a token (%d streams), want %d", backwardReads(offs, streams), streams, want)
					}
				}
			})
		}
	}
}

// backwardReads counts the reads in offs that go backwards from every one
// of `streams` forward cursors. Each read advances the cursor with the
// highest offset still below it (the greedy that splits a sequence into
// the fewest forward runs); a read below them all counts and restarts
// the cursors from it.
func backwardReads(offs []int64, streams int) int {
	cur := make([]int64, streams)
	for i := range cur {
		cur[i] = -1
	}
	back := 0
	for _, off := range offs {
		best := -1
		for i, c := range cur {
			if c < off && (best < 0 || c > cur[best]) {
				best = i
			}
		}
		if best < 0 {
			back++
			for i := range cur {
				cur[i] = -1
			}
			best = 0
		}
		cur[best] = off
	}
	return back
}

// TestClaim4OneActivationLoad: per pass, attention prepares its input once
// for all of Q, K and V (and once for O), the dense FFN once for gate and up
// (and once for down), and the read sequence shows Q, K and V (gate and up)
// tiles interleaved stripe by stripe under that single load.
func TestClaim4OneActivationLoad(t *testing.T) {
	c := archCases()[9] // gemma4: dense + MoE, mixed layer kinds
	tm := c.build(quant.Q8_0, 2)
	e := newEngine(t, tm.m, 1)
	rs := recordReads(e)
	if _, err := e.Step(3); err != nil {
		t.Fatal(err)
	}
	L, k := int(c.h.NumLayers), int(c.h.TopK)
	if got := e.prepCount; got[stAttn] != int64(2*L) || got[stDense] != int64(2*L) || got[stMoE] != int64(L*(1+k)) {
		t.Fatalf("activation preparations %v, want attn %d dense %d moe %d", got, 2*L, 2*L, L*(1+k))
	}
	// Layer 0 is sliding (has V); its Q/K/V reads alternate by stripe.
	var mats []archspec.MatrixID
	for _, r := range *rs {
		if r.m == archspec.MatO {
			break
		}
		if r.m <= archspec.MatV {
			mats = append(mats, r.m)
		}
	}
	switches := 0
	for i := 1; i < len(mats); i++ {
		if mats[i] != mats[i-1] {
			switches++
		}
	}
	if switches < 3 {
		t.Fatalf("Q/K/V reads %v are not interleaved by stripe", mats)
	}
}
