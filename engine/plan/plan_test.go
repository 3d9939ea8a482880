package plan

import (
	"testing"

	"github.com/cflow-dev/cflow/archspec"
)

func TestDelayedSumOrder(t *testing.T) {
	// Hand-derived from the spec for L=3, δd=1: FFN(0) first (zero input),
	// then per layer attention, router/experts, and the next layer's FFN.
	steps, err := Build(Params{Layers: 3, BlockIterations: 1, DenseDelay: 1, ExpertDelay: 2,
		Combine: archspec.DelayedSum, HasDense: true, HasMoE: true})
	if err != nil {
		t.Fatal(err)
	}
	want := []Step{{0, 0, Dense, true}, {0, 0, Attn, false}, {0, 0, MoE, false}, {0, 1, Dense, false},
		{1, 1, Attn, false}, {1, 1, MoE, false}, {1, 2, Dense, false}, {2, 2, Attn, false}, {2, 2, MoE, false}}
	if len(steps) != len(want) {
		t.Fatalf("got %v", steps)
	}
	for i := range want {
		if steps[i] != want[i] {
			t.Fatalf("step %d = %+v, want %+v (all %v)", i, steps[i], want[i], steps)
		}
	}
}

func TestBlockIterationsLayout(t *testing.T) {
	steps, err := Build(Params{Layers: 2, BlockIterations: 3, Combine: archspec.PreNorm, HasDense: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 12 || steps[11].Pass != 5 || steps[11].Layer != 1 {
		t.Fatalf("passes wrong: %v", steps)
	}
	lay := Layout(steps)
	want := []Step{{0, 0, Attn, false}, {0, 0, Dense, false}, {3, 1, Attn, false}, {3, 1, Dense, false}}
	if len(lay) != len(want) {
		t.Fatalf("layout %v", lay)
	}
	for i := range want {
		if lay[i] != want[i] {
			t.Fatalf("layout %d = %+v, want %+v", i, lay[i], want[i])
		}
	}
}

func TestRejectsUndefinedDelays(t *testing.T) {
	for _, p := range []Params{
		{Layers: 2, Combine: archspec.DelayedSum, HasDense: true},
		{Layers: 2, Combine: archspec.PreNorm, DenseDelay: 1, HasDense: true},
		{Layers: 2, Combine: archspec.ParallelSqrt2, ExpertDelay: 1, HasMoE: true},
		{Layers: 2, Combine: archspec.DecoupledStreams, BlockIterations: 2},
	} {
		if _, err := Build(p); err == nil {
			t.Errorf("%+v accepted", p)
		}
	}
}
