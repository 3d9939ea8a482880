package archspec

import "testing"

// TestCombineFacts checks each style's stated facts against the equations
// of docs/ARCHITECTURES.md ("The architectures"), transcribed
// here by hand: what attention, the dense FFN and the router read, whether
// the router has its own norm Nr, and where experts routed at layer 1 of 4
// with δe = 2 join.
func TestCombineFacts(t *testing.T) {
	cases := []struct {
		c                  CombineStyle
		attn, ffn, router  Residual
		ownNorm, delaysFFN bool
		inject             int
		blocks, merges     bool
	}{
		// llama: x_mid = x_in + Attn(Na(x_in)); x_out = x_mid + FFN(Nf(x_mid)); router on Nf(x_mid).
		{PreNorm, ResidualIn, ResidualMid, ResidualMid, false, false, 1, true, false},
		// arch2_4: f = FFN(Nf(x_out(ℓ−δd))); e(ℓ) = MoE(Nr(x_mid)) for T = min(ℓ+δe, L−1).
		{DelayedSum, ResidualIn, ResidualDelayed, ResidualMid, true, true, 3, false, false},
		// arch4: h = Nf(x_in) feeds FFN and MoE; e(ℓ) for target ℓ+δe.
		{AsyncExperts, ResidualIn, ResidualIn, ResidualIn, false, false, 3, false, false},
		// arch1: s_a ← s_a + Attn(Na(s_a)); s_f ← s_f + FFN(Nf(s_f)).
		{DecoupledStreams, StreamAttn, StreamFFN, StreamFFN, false, false, 1, false, true},
		// arch3: f = FFN(Nf(xfm_reg(ℓ−1))); attn_reg advances on Attn(Na(attn_reg)).
		{PipelineRegisters, StreamAttn, ResidualIn, ResidualIn, false, false, 1, false, false},
		// gemma4: h = Nf(x_mid) feeds FFN and MoE.
		{ParallelSqrt2, ResidualIn, ResidualMid, ResidualMid, false, false, 1, false, false},
	}
	for _, k := range cases {
		c := k.c
		if c.AttentionReads() != k.attn || c.FFNReads() != k.ffn || c.RouterReads() != k.router {
			t.Errorf("%s reads attn %d ffn %d router %d, want %d %d %d", c, c.AttentionReads(), c.FFNReads(), c.RouterReads(), k.attn, k.ffn, k.router)
		}
		if c.OwnMoENorm() != k.ownNorm || c.DelaysDense() != k.delaysFFN {
			t.Errorf("%s own MoE norm %v delays dense %v", c, c.OwnMoENorm(), c.DelaysDense())
		}
		if got := c.InjectionLayer(1, 2, 4); got != k.inject || c.DefersExperts() != (k.inject != 1) {
			t.Errorf("%s injects layer-1 experts at %d (defers %v), want %d", c, got, c.DefersExperts(), k.inject)
		}
		if c.IteratesBlocks() != k.blocks || c.MergesStreams() != k.merges {
			t.Errorf("%s block iterations %v merges %v", c, c.IteratesBlocks(), c.MergesStreams())
		}
	}
	// DelayedSum clamps to the last layer; AsyncExperts may target the final residual.
	if DelayedSum.InjectionLayer(3, 2, 4) != 3 || AsyncExperts.InjectionLayer(3, 2, 4) != 5 {
		t.Error("injection past the last layer")
	}
}
