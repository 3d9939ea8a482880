package verify

import (
	"path/filepath"
	"testing"

	"github.com/cflow-dev/cflow/engine"
	"github.com/cflow-dev/cflow/quant"
)

// TestStepFeedsMatchesAlone: one StepFeeds pass mixing a decode token, a
// middle prompt chunk without logits, a prompt's last chunk and a whole
// prompt longer than a batch (the continuous-batching server's tick), then
// a decode pass of all of them, give each sequence exactly the logits it
// gets fed alone token by token on a fresh engine, for every architecture
// fixture; refused feeds feed nothing.
func TestStepFeedsMatchesAlone(t *testing.T) {
	for _, fixture := range fixtureModels(t) {
		t.Run(filepath.Base(fixture), func(t *testing.T) {
			e := convertFixture(t, fixture, t.TempDir(), ".cflow", quant.Q4_0, engine.Options{})
			h := e.Header()
			V, maxLen := int(h.VocabSize), int(h.MaxSeqLen)
			// before: tokens fed before the mixed pass; mixed: fed in it.
			plans := []struct{ before, mixed int }{{5, 1}, {3, 20}, {2, 5}, {0, 70}}
			var seqs []*engine.Sequence
			var streams [][]int
			var feeds []engine.Feed
			for i, p := range plans {
				n := min(p.before+p.mixed, maxLen-1)
				before := min(p.before, n-1)
				toks := testTokens(n+1, V, 200+i)
				streams = append(streams, toks)
				q := e.NewSequence()
				if before > 0 {
					if _, err := e.PrefillSequence(q, toks[:before], nil); err != nil {
						t.Fatal(err)
					}
				}
				seqs = append(seqs, q)
				feeds = append(feeds, engine.Feed{Seq: q, Toks: toks[before:n], Logits: i != 2})
			}
			got, err := e.StepFeeds(feeds)
			if err != nil {
				t.Fatal(err)
			}
			mixed := make([][]float32, len(got))
			for i, l := range got {
				if (l != nil) != feeds[i].Logits {
					t.Fatalf("feed %d: logits %v, asked %v", i, l != nil, feeds[i].Logits)
				}
				mixed[i] = append([]float32(nil), l...)
			}
			var dec []engine.Feed
			for i, q := range seqs {
				dec = append(dec, engine.Feed{Seq: q, Toks: streams[i][q.Pos() : q.Pos()+1], Logits: true})
			}
			last, err := e.StepFeeds(dec)
			if err != nil {
				t.Fatal(err)
			}
			for i, toks := range streams {
				want, _ := stepAll(t, e, toks)
				n := len(toks) - 1
				if seqs[i].Pos() != n+1 {
					t.Errorf("sequence %d at position %d, want %d", i, seqs[i].Pos(), n+1)
				}
				if feeds[i].Logits {
					if r := maxRel(mixed[i], want[n-1], 1e-3); r > 1e-5 {
						t.Errorf("sequence %d, mixed pass: logits differ from alone by %.3g", i, r)
					}
				}
				if r := maxRel(last[i], want[n], 1e-3); r > 1e-5 {
					t.Errorf("sequence %d, decode pass: logits differ from alone by %.3g", i, r)
				}
			}
			pos := seqs[0].Pos()
			for name, bad := range map[string][]engine.Feed{
				"a sequence twice":               {{Seq: seqs[0], Toks: []int{1}}, {Seq: seqs[0], Toks: []int{1}}},
				"a token outside the vocabulary": {{Seq: seqs[0], Toks: []int{1}}, {Seq: seqs[1], Toks: []int{V}}},
				"an empty feed":                  {{Seq: seqs[0], Toks: []int{1}}, {Seq: seqs[1]}},
				"past the context":               {{Seq: seqs[0], Toks: []int{1}}, {Seq: seqs[1], Toks: make([]int, maxLen)}},
			} {
				if _, err := e.StepFeeds(bad); err == nil {
					t.Errorf("%s: no error", name)
				}
			}
			if seqs[0].Pos() != pos {
				t.Errorf("refused feeds moved sequence 0 from %d to %d", pos, seqs[0].Pos())
			}
		})
	}
}
