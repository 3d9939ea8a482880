package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/cflow-dev/cflow/quant"
)

// TestForwardBatchAsData feeds two sequences' tokens, interleaved, as one
// Batch of 10 columns on an engine that runs 3 columns per pass (so the
// batch takes four passes, the last a lone column) and wants every
// column's logits: each column's logits and observation must be what
// stepping its sequence alone gives at that position — including columns
// of early passes, whose workers later passes reuse — and each sequence
// ends at its last position with its last column's observation.
func TestForwardBatchAsData(t *testing.T) {
	for _, c := range archCases() {
		t.Run(c.name, func(t *testing.T) {
			tm := c.build(quant.F32, 3)
			e, err := New(tm.m, Options{Threads: 2, Kernel: testKernel, Batch: 3})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			ref := newEngine(t, tm.m, 1)
			toks := [2][]int{{1, 17, 5, 69, 5}, {33, 0, 2, 7, 9}}
			var want [2][][]float32
			var wantNorm [2][]float64 // the last pass's residual norm per position
			for s, ts := range toks {
				ref.Reset()
				for _, tok := range ts {
					l, err := ref.Step(tok)
					if err != nil {
						t.Fatal(err)
					}
					want[s] = append(want[s], append([]float32(nil), l...))
					o := ref.Observation()
					wantNorm[s] = append(wantNorm[s], o.ResidualNorms[len(o.ResidualNorms)-1])
				}
			}
			seqs := [2]*Sequence{e.NewSequence(), e.NewSequence()}
			var b Batch
			// A: 2 tokens, B: 3, A: 3, B: 2 — each sequence's columns at
			// its next positions, in column order.
			b.Add(seqs[0], toks[0][:2], false)
			b.Add(seqs[1], toks[1][:3], false)
			b.Add(seqs[0], toks[0][2:], false)
			b.Add(seqs[1], toks[1][3:], false)
			for i := range b.Want {
				b.Want[i] = true
			}
			if err := e.Forward(&b); err != nil {
				t.Fatal(err)
			}
			for i := range b.Len() {
				s := 0
				if b.Seqs[i] == seqs[1] {
					s = 1
				}
				p := b.Positions[i]
				got, w := b.Logits(i), want[s][p]
				for j := range w {
					if relErr(float64(got[j]), float64(w[j]), float64(maxAbsF32(w))) > 1e-5 {
						t.Fatalf("column %d (sequence %d, position %d) logit %d = %v, alone %v", i, s, p, j, got[j], w[j])
					}
				}
				o := b.Observation(i)
				if n := o.ResidualNorms[len(o.ResidualNorms)-1]; relErr(n, wantNorm[s][p], wantNorm[s][p]) > 1e-5 {
					t.Fatalf("column %d: residual norm %v, alone %v", i, n, wantNorm[s][p])
				}
			}
			for s, q := range seqs {
				if q.Pos() != len(toks[s]) {
					t.Fatalf("sequence %d at %d, want %d", s, q.Pos(), len(toks[s]))
				}
				o := q.Observation()
				if n, w := o.ResidualNorms[len(o.ResidualNorms)-1], wantNorm[s][len(toks[s])-1]; relErr(n, w, w) > 1e-5 {
					t.Fatalf("sequence %d's observation: residual norm %v, its last token's %v", s, n, w)
				}
			}
		})
	}
}

// TestForwardRefusesMalformedBatch: a column at a position other than its
// sequence's next, a token outside the vocabulary, another engine's
// sequence or mismatched column lists are refused before anything is fed,
// the error naming the column; the sequences stay where they were.
func TestForwardRefusesMalformedBatch(t *testing.T) {
	tm := archCases()[0].build(quant.F32, 1)
	e := newEngine(t, tm.m, 1)
	other := newEngine(t, tm.m, 1)
	q := e.NewSequence()
	if _, err := e.PrefillSequence(q, []int{1, 2, 3}, nil); err != nil {
		t.Fatal(err)
	}
	V := int(tm.m.Header.VocabSize)
	for name, c := range map[string]struct {
		b    Batch
		want string
	}{
		"a skipped position":    {Batch{Seqs: []*Sequence{q, q}, Tokens: []int{1, 2}, Positions: []int{3, 5}, Want: []bool{false, true}}, "batch column 1"},
		"a rewritten position":  {Batch{Seqs: []*Sequence{q}, Tokens: []int{1}, Positions: []int{2}, Want: []bool{true}}, "batch column 0"},
		"a token outside":       {Batch{Seqs: []*Sequence{q, q}, Tokens: []int{1, V}, Positions: []int{3, 4}, Want: []bool{false, true}}, "batch column 1"},
		"another engine's":      {Batch{Seqs: []*Sequence{other.NewSequence()}, Tokens: []int{1}, Positions: []int{0}, Want: []bool{true}}, "another engine"},
		"lists of other length": {Batch{Seqs: []*Sequence{q}, Tokens: []int{1, 2}, Positions: []int{3, 4}, Want: []bool{true, true}}, "1 sequences"},
		"an empty batch":        {Batch{}, "no tokens"},
	} {
		err := e.Forward(&c.b)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error naming %q", name, err, c.want)
		}
		if q.Pos() != 3 {
			t.Fatalf("%s: the refused batch moved the sequence to %d", name, q.Pos())
		}
	}
	var b Batch
	b.Add(q, make([]int, int(tm.m.Header.MaxSeqLen)), true)
	if err := e.Forward(&b); !errors.Is(err, ErrContextFull) || q.Pos() != 3 {
		t.Fatalf("past the context: %v at %d, want ErrContextFull with nothing fed", err, q.Pos())
	}
}

func maxAbsF32(v []float32) float32 {
	var m float32
	for _, x := range v {
		m = max(m, x, -x)
	}
	return m
}
