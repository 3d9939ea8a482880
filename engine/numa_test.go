package engine

import (
	"math"
	"strings"
	"testing"

	"github.com/cflow-dev/cflow/engine/numa"
	"github.com/cflow-dev/cflow/quant"
)

// twoNodes simulates two nodes on this machine: node 0 owns CPU 0 and
// node 1 owns CPU 1 (both exist here, so pinning must succeed).
func twoNodes(t *testing.T) *numa.Topology {
	t.Helper()
	topo, err := numa.Parse("0:0;1:1")
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

// decodeRun feeds prompt then decodes greedily, returning every step's
// logits and the generated tokens.
func decodeRun(t *testing.T, e *Engine, prompt []int, gen int) ([][]float32, []int) {
	t.Helper()
	var all [][]float32
	var toks []int
	var logits []float32
	var err error
	for _, tok := range prompt {
		if logits, err = e.Step(tok); err != nil {
			t.Fatal(err)
		}
		all = append(all, append([]float32(nil), logits...))
	}
	for i := 0; i < gen; i++ {
		next := argmax(logits)
		toks = append(toks, next)
		if logits, err = e.Step(next); err != nil {
			t.Fatal(err)
		}
		all = append(all, append([]float32(nil), logits...))
	}
	return all, toks
}

// sameDecode checks the multi-node run decoded the same tokens with every
// logit within tol of the single-node run, relative to the step's largest
// |logit| (reduction order may differ, nothing else).
func sameDecode(t *testing.T, what string, want, got [][]float32, wantT, gotT []int, tol float64) {
	t.Helper()
	if !equalInts(wantT, gotT) {
		t.Fatalf("%s: tokens %v, single node %v", what, gotT, wantT)
	}
	for s := range want {
		var scale float64
		for _, v := range want[s] {
			scale = math.Max(scale, math.Abs(float64(v)))
		}
		for i := range want[s] {
			if r := relErr(float64(got[s][i]), float64(want[s][i]), scale); r > tol {
				t.Fatalf("%s: step %d logit %d: %v vs single node %v (rel %.2g)", what, s, i, got[s][i], want[s][i], r)
			}
		}
	}
}

// TestNUMATestModels: every in-memory architecture (16×32 tiles, so the
// re-plan cuts every matrix, O and down into partial sums) decodes the
// same on 2 simulated nodes as on one, for each quant type. The tiles sit
// in separate slices, not one mapping, so only copies are placed.
func TestNUMATestModels(t *testing.T) {
	for _, c := range archCases() {
		for _, q := range []quant.Type{quant.F32, quant.Q4_0} {
			t.Run(c.name+"/"+q.String(), func(t *testing.T) {
				tm := c.build(q, 3)
				want, wantT := decodeRun(t, newNUMAEngine(t, tm.m, numa.Single([]int{0}), nil), testTokens[:4], 3)
				e := newNUMAEngine(t, tm.m, twoNodes(t), &numa.Recorder{})
				if r := e.NUMA(); r.Mode != "copy" || r.PlanNodes != 0 {
					t.Fatalf("%s", r)
				}
				got, gotT := decodeRun(t, e, testTokens[:4], 3)
				sameDecode(t, c.name, want, got, wantT, gotT, 1e-4)
				if len(e.layers[0].o.numa.reds) == 0 || len(e.layers[0].qkv.numa.nodes[1]) == 0 {
					t.Errorf("the re-plan did not split layer 0 across nodes")
				}
			})
		}
	}
}

// TestNUMAOneNodeIsPlain: a one-node topology starts the plain pool and
// asks for no placement at all.
func TestNUMAOneNodeIsPlain(t *testing.T) {
	tm := archCases()[0].build(quant.Q8_0, 1)
	rec := &numa.Recorder{}
	e := newNUMAEngine(t, tm.m, numa.Single([]int{0, 1}), rec)
	if e.numa != nil || e.pool.Groups() != nil || len(rec.Log()) != 0 || e.NUMA().Mode != "plain" {
		t.Fatalf("one node: numa %v, groups %d, %d requests, %s", e.numa, len(e.pool.Groups()), len(rec.Log()), e.NUMA())
	}
}

// TestNUMATopologyEnv: CFLOW_NUMA_TOPOLOGY drives detection, and a
// malformed value fails New with a message naming the variable.
func TestNUMATopologyEnv(t *testing.T) {
	tm := archCases()[0].build(quant.Q8_0, 1)
	t.Setenv(numa.EnvTopology, "0:0;1:1")
	e, err := New(tm.m, Options{Threads: 2, Placer: &numa.Recorder{}, Kernel: testKernel})
	if err != nil {
		t.Fatal(err)
	}
	r := e.NUMA()
	e.Close()
	if r.Nodes != 2 || r.Source != numa.EnvTopology {
		t.Fatalf("env topology: %s", r)
	}
	t.Setenv(numa.EnvTopology, "0:0;1")
	if _, err := New(tm.m, Options{Threads: 2}); err == nil || !strings.Contains(err.Error(), numa.EnvTopology) {
		t.Fatalf("bad topology: err %v", err)
	}
}

// argmax is the greedy choice, ties to the lower id (generate.Argmax; the
// runtime's tests cannot import the package that imports the runtime).
func argmax(logits []float32) int {
	best := 0
	for i, v := range logits {
		if v > logits[best] {
			best = i
		}
	}
	return best
}
