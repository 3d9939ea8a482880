package engine_test

import (
	"math"
	"slices"
	"testing"

	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/engine"
	"github.com/cflow-dev/cflow/engine/expertio"
	"github.com/cflow-dev/cflow/verify"
	"github.com/cflow-dev/cflow/vflowfmt"
)

// batchRun is what one engine's batched prefill produced at every position.
type batchRun struct {
	logits [][]float32
	obs    []engine.Observation
	total  engine.StreamBytes
	io     expertio.Stats
}

func cloneObs(o *engine.Observation) engine.Observation {
	cp := engine.Observation{ResidualNorms: slices.Clone(o.ResidualNorms), PreLMHeadNorm: o.PreLMHeadNorm}
	for _, s := range o.Experts {
		cp.Experts = append(cp.Experts, slices.Clone(s))
	}
	return cp
}

func newBatchEngine(t *testing.T, m *cflowfmt.Model, mode expertio.Mode, threads, batch int) *engine.Engine {
	t.Helper()
	e, err := engine.New(m, engine.Options{Threads: threads, ExpertIO: mode, Kernel: verify.Kernel(), Batch: batch})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

// prefillRun feeds toks as batched prefill (PrefillEach) or, with batch 1,
// one Step at a time, keeping every position's logits and observation.
func prefillRun(t *testing.T, m *cflowfmt.Model, mode expertio.Mode, threads, batch int, toks []int) batchRun {
	t.Helper()
	e := newBatchEngine(t, m, mode, threads, batch)
	var r batchRun
	keep := func(l []float32, o *engine.Observation) {
		r.logits = append(r.logits, slices.Clone(l))
		r.obs = append(r.obs, cloneObs(o))
	}
	if batch == 1 {
		for _, tok := range toks {
			l, err := e.Step(tok)
			if err != nil {
				t.Fatal(err)
			}
			keep(l, e.Observation())
		}
	} else if err := e.PrefillEach(toks, func(_ int, l []float32, o *engine.Observation) error {
		keep(l, o)
		return nil
	}); err != nil {
		t.Fatalf("%s prefill: %v", mode, err)
	}
	r.total, r.io = e.Stats().Total, e.ExpertIOStats()
	return r
}

func sameLogits(t *testing.T, where string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d logits, want %d", where, len(got), len(want))
	}
	for j := range want {
		if math.Float32bits(got[j]) != math.Float32bits(want[j]) {
			t.Fatalf("%s: logit %d = %v, want %v", where, j, got[j], want[j])
		}
	}
}

func sameObs(t *testing.T, where string, got, want engine.Observation) {
	t.Helper()
	if !slices.Equal(got.ResidualNorms, want.ResidualNorms) || got.PreLMHeadNorm != want.PreLMHeadNorm {
		t.Fatalf("%s: norms differ", where)
	}
	if !slices.EqualFunc(got.Experts, want.Experts, slices.Equal) {
		t.Fatalf("%s: experts %v, want %v", where, got.Experts, want.Experts)
	}
}

// unionReads is the expert reads a batched staged prefill makes: per batch
// of columns and per routing pass, the number of distinct experts the
// columns selected (each read once per batch).
func unionReads(obs []engine.Observation, batch int) int64 {
	var n int64
	for b := 0; b < len(obs); b += batch {
		cols := obs[b:min(b+batch, len(obs))]
		for p := range cols[0].Experts {
			seen := map[int]bool{}
			for _, o := range cols {
				for _, x := range o.Experts[p] {
					seen[x] = true
				}
			}
			n += int64(len(seen))
		}
	}
	return n
}

// TestExpertIOBatchedPrefillBitIdentical: on the MoE golden fixtures
// (DelayedSum, AsyncExperts, Mixtral's PreNorm; .cflow and .vflow), a
// batched prefill with staged experts (sync and direct, 1 and 2 threads,
// batches of 16 so the prompt crosses two batch boundaries) gives at every
// position the logits, norms and expert selections of the token-by-token
// mmap engine and of the batched mmap engine, bit for bit, counts the same
// weight bytes per token, and reads each expert once per batch and routing
// (the union of the columns' selections), fewer reads than token by token.
func TestExpertIOBatchedPrefillBitIdentical(t *testing.T) {
	const batch = 16
	for _, name := range []string{"arch2_4_combined", "arch4_async_experts", "mixtral"} {
		for _, ext := range []string{".cflow", ".vflow"} {
			out, _ := engine.ConvertFixtureDirect(t, name, ext)
			m, err := vflowfmt.OpenModel(out)
			if err != nil {
				t.Fatal(err)
			}
			toks := verifyTokens(40, int(m.Header.VocabSize))
			steps := prefillRun(t, m, expertio.Mmap, 1, 1, toks)
			ref := prefillRun(t, m, expertio.Mmap, 2, batch, toks)
			for i := range toks {
				sameLogits(t, name+ext+" mmap batched vs steps", ref.logits[i], steps.logits[i])
				sameObs(t, name+ext+" mmap batched vs steps", ref.obs[i], steps.obs[i])
			}
			wantReads := unionReads(ref.obs, batch)
			perToken := int64(len(toks)) * int64(m.Header.NumLayers) * int64(m.Header.TopK)
			if wantReads >= perToken {
				t.Fatalf("%s%s: the fixture's batches select every expert of every token apart (%d reads): the test cannot show sharing", name, ext, wantReads)
			}
			for _, mode := range []expertio.Mode{expertio.Sync, expertio.Direct} {
				for _, threads := range []int{1, 2} {
					where := name + ext + " " + mode.String()
					got := prefillRun(t, m, mode, threads, batch, toks)
					for i := range toks {
						sameLogits(t, where, got.logits[i], ref.logits[i])
						sameObs(t, where, got.obs[i], ref.obs[i])
					}
					if got.total != ref.total {
						t.Fatalf("%s: weight bytes %+v, mmap %+v", where, got.total, ref.total)
					}
					if got.io.Reads != wantReads {
						t.Fatalf("%s: %d expert reads, want %d (each selected expert once per batch and routing; %d token by token)", where, got.io.Reads, wantReads, perToken)
					}
				}
			}
			m.Close()
		}
	}
}

// TestExpertIOStepFeedsBitIdentical: StepFeeds over several sequences — a
// decode token, a prompt chunk and a new prompt spanning two passes — with
// staged experts gives every feed's logits and observation bit for bit as
// the mmap engine does, over two rounds.
func TestExpertIOStepFeedsBitIdentical(t *testing.T) {
	for _, name := range []string{"arch2_4_combined", "arch4_async_experts", "mixtral"} {
		out, _ := engine.ConvertFixtureDirect(t, name, ".cflow")
		m, err := vflowfmt.OpenModel(out)
		if err != nil {
			t.Fatal(err)
		}
		toks := verifyTokens(60, int(m.Header.VocabSize))
		type arm struct {
			logits [][]float32
			obs    []engine.Observation
		}
		run := func(mode expertio.Mode) arm {
			e := newBatchEngine(t, m, mode, 2, 16)
			a, b, c := e.NewSequence(), e.NewSequence(), e.NewSequence()
			if _, err := e.PrefillSequence(a, toks[:5], nil); err != nil {
				t.Fatalf("%s: %v", mode, err)
			}
			if _, err := e.PrefillSequence(b, toks[5:8], nil); err != nil {
				t.Fatalf("%s: %v", mode, err)
			}
			var r arm
			for round, fs := range [][]engine.Feed{
				{{Seq: a, Toks: toks[8:9], Logits: true}, {Seq: b, Toks: toks[9:21], Logits: true}, {Seq: c, Toks: toks[21:41], Logits: true}},
				{{Seq: c, Toks: toks[41:42], Logits: true}, {Seq: a, Toks: toks[42:43], Logits: true}, {Seq: b, Toks: toks[43:50], Logits: true}},
			} {
				outs, err := e.StepFeeds(fs)
				if err != nil {
					t.Fatalf("%s round %d: %v", mode, round, err)
				}
				for i, f := range fs {
					r.logits = append(r.logits, slices.Clone(outs[i]))
					r.obs = append(r.obs, cloneObs(f.Seq.Observation()))
				}
			}
			return r
		}
		ref := run(expertio.Mmap)
		for _, mode := range []expertio.Mode{expertio.Sync, expertio.Direct} {
			got := run(mode)
			for i := range ref.logits {
				where := name + " " + mode.String() + " feed"
				sameLogits(t, where, got.logits[i], ref.logits[i])
				sameObs(t, where, got.obs[i], ref.obs[i])
			}
		}
		m.Close()
	}
}

// verifyTokens is a deterministic token sequence of n ids below vocab.
func verifyTokens(n, vocab int) []int {
	ts := make([]int, n)
	x := uint32(12345)
	for i := range ts {
		x = x*1664525 + 1013904223
		ts[i] = int(x>>8) % vocab
	}
	return ts
}
