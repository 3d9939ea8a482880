package engine

import (
	"testing"

	"github.com/cflow-dev/cflow/quant"
)

// TestTruncateRefeeds: for every combine style the test models cover, a
// sequence that fed one continuation, was cut back to a shared prefix
// and fed another gives bit for bit what a fresh engine stepping the
// prefix and the other continuation gives; a cut past the sequence's end
// is refused and changes nothing; Release frees the KV memory and empties
// the sequence, which then feeds again from position 0.
func TestTruncateRefeeds(t *testing.T) {
	for _, c := range archCases() {
		t.Run(c.name, func(t *testing.T) {
			tm := c.build(quant.F32, 3)
			e := newEngine(t, tm.m, 1)
			ref := newEngine(t, tm.m, 1)
			prefix, a, b := []int{1, 17, 5}, []int{69, 5, 2}, []int{33, 0}
			q := e.NewSequence()
			for _, ts := range [][]int{prefix, a} {
				for _, tok := range ts {
					if _, err := e.StepFeeds([]Feed{{Seq: q, Toks: []int{tok}, Logits: true}}); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := q.Truncate(q.Pos() + 1); err == nil || q.Pos() != len(prefix)+len(a) {
				t.Fatalf("a cut past the end: %v, position %d", err, q.Pos())
			}
			if err := q.Truncate(len(prefix)); err != nil || q.Pos() != len(prefix) {
				t.Fatalf("truncate to %d: %v, position %d", len(prefix), err, q.Pos())
			}
			for _, tok := range prefix {
				if _, err := ref.Step(tok); err != nil {
					t.Fatal(err)
				}
			}
			for i, tok := range b {
				want, err := ref.Step(tok)
				if err != nil {
					t.Fatal(err)
				}
				got, err := e.StepFeeds([]Feed{{Seq: q, Toks: []int{tok}, Logits: true}})
				if err != nil {
					t.Fatal(err)
				}
				for k := range want {
					if got[0][k] != want[k] {
						t.Fatalf("token %d after the cut: logit %d is %v, a fresh sequence gives %v", i, k, got[0][k], want[k])
					}
				}
			}
			if q.KVBytes() == 0 {
				t.Fatal("a fed sequence holds no KV memory")
			}
			q.Release()
			if q.KVBytes() != 0 || q.Pos() != 0 {
				t.Fatalf("after Release: %d bytes, position %d", q.KVBytes(), q.Pos())
			}
			ref.Reset()
			want, _ := ref.Step(b[0])
			got, err := e.StepFeeds([]Feed{{Seq: q, Toks: b[:1], Logits: true}})
			if err != nil || q.Pos() != 1 || got[0][0] != want[0] {
				t.Fatalf("feeding after Release: %v, position %d", err, q.Pos())
			}
		})
	}
}
