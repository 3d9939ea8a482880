package engine

import (
	"math"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/engine/numa"
	"github.com/cflow-dev/cflow/quant"
)

// TestNUMABatchedPrefill: on 2 simulated nodes (the file's 2-node plan,
// so O and down are summed across nodes), a batched prefill of 40 tokens
// in batches of 16 gives every position the logits and norms of the same
// engine fed token by token, bit for bit, for a dense model and the MoE
// fixtures (Q8_0 .cflow, Q4_0 .vflow). And a batch reads each tile once:
// a 16-column prefill of the dense model walks exactly the tiles one
// token walks (the per-column path walked them 16 times).
func TestNUMABatchedPrefill(t *testing.T) {
	toks := make([]int, 40)
	for _, arch := range []string{"llama", "arch2_4_combined", "mixtral"} {
		for _, f := range []struct {
			ext string
			q   quant.Type
		}{{".cflow", quant.Q8_0}, {".vflow", quant.Q4_0}} {
			m := convertFixture(t, filepath.Join("../golden/fixtures", arch), f.ext, f.q, 2)
			for i := range toks {
				toks[i] = (i*37 + 11) % int(m.Header.VocabSize)
			}
			where := arch + f.ext
			steps := newNUMABatchEngine(t, m, 1)
			var want [][]float32
			var wantN [][]float64
			for _, tok := range toks {
				l, err := steps.Step(tok)
				if err != nil {
					t.Fatal(err)
				}
				want = append(want, append([]float32(nil), l...))
				wantN = append(wantN, append([]float64(nil), steps.Observation().ResidualNorms...))
			}
			e := newNUMABatchEngine(t, m, 16)
			if len(e.layers[0].o.numa.reds) == 0 {
				t.Fatalf("%s: O is not summed across nodes: the test would not cover the reductions", where)
			}
			if err := e.PrefillEach(toks, func(i int, l []float32, o *Observation) error {
				for j := range want[i] {
					if math.Float32bits(l[j]) != math.Float32bits(want[i][j]) {
						t.Fatalf("%s: position %d logit %d = %v, token by token %v", where, i, j, l[j], want[i][j])
					}
				}
				for p, n := range o.ResidualNorms {
					if n != wantN[i][p] {
						t.Fatalf("%s: position %d pass %d norm %v, token by token %v", where, i, p, n, wantN[i][p])
					}
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if arch == "llama" {
				steps.Reset()
				e.Reset()
				one := tileWalks(t, steps, func() error { _, err := steps.Step(toks[0]); return err })
				batch := tileWalks(t, e, func() error { _, err := e.Prefill(toks[:16]); return err })
				if batch != one {
					t.Fatalf("%s: a 16-column batch made %d tile reads, one token %d", where, batch, one)
				}
			}
		}
	}
}

func newNUMABatchEngine(t *testing.T, m *cflowfmt.Model, batch int) *Engine {
	t.Helper()
	topo, err := numa.Parse("0:0;1:1")
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(m, Options{Threads: 2, NUMA: topo, Placer: &numa.Recorder{}, Kernel: testKernel, Batch: batch})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	if e.numa == nil {
		t.Fatal("the 2-node topology started the plain path")
	}
	return e
}

// tileWalks counts the weight tile dots run does (the read hook sees one
// per tile a stripe walk applies, to however many columns), leaving out
// the embedding rows, which each token reads its own of.
func tileWalks(t *testing.T, e *Engine, run func() error) int64 {
	t.Helper()
	var n atomic.Int64
	e.readHook = func(_ int64, m archspec.MatrixID) {
		if m != archspec.MatEmbed {
			n.Add(1)
		}
	}
	if err := run(); err != nil {
		t.Fatal(err)
	}
	e.readHook = nil
	return n.Load()
}
