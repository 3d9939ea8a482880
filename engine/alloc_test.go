package engine

import (
	"testing"

	"github.com/cflow-dev/cflow/quant"
)

// TestStepAllocatesNothing: a 1-thread decode step of a dense model posts
// its matvecs and attention loop through the engine's reusable jobs
// (matvecJob, groupsJob), so once the KV block and the scratch exist a
// token allocates nothing — on the int8 path cflowc runs by default and on
// its float twin. Before those jobs a step allocated a closure and an outs
// slice per matvec and a closure per attention loop (200 allocations per
// TinyLlama token). The per-head Go loop of kernels without a multi-vector
// F32 kernel (headsEach) still allocates its closure, so those are skipped.
func TestStepAllocatesNothing(t *testing.T) {
	tm := archCases()[0].build(quant.Q4_0, 5) // llama
	for _, k := range []*quant.Kernel{quant.DefaultKernel(), quant.DefaultKernel().Float()} {
		if !k.HasF32Rows() {
			t.Logf("%s: no multi-vector F32 kernel, heads run headsEach; skipped", k)
			continue
		}
		e := newEngineOn(t, tm.m, 1, k)
		if _, err := e.Step(1); err != nil {
			t.Fatal(err)
		}
		tok := 2
		if n := testing.AllocsPerRun(10, func() {
			if _, err := e.Step(tok % int(e.h.VocabSize)); err != nil {
				t.Fatal(err)
			}
			tok++
		}); n != 0 {
			t.Errorf("%s: %v allocations per 1-thread Step, want 0", k, n)
		}
	}
}
