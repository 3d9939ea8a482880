package main

import (
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/cflowfmt/fmttest"
	"github.com/cflow-dev/cflow/quant"
	"github.com/cflow-dev/cflow/trace"
	"github.com/cflow-dev/cflow/verify"
)

// TestRunKernel: --kernel chooses the dot kernel even with --trace-out
// (which otherwise records on the default's float twin): naming that twin
// gives the same trace, naming an int8 kernel (where this CPU has one)
// moves the logits by its activation rounding, and an unknown name exits 2
// writing no trace.
func TestRunKernel(t *testing.T) {
	s := fmttest.Random(rand.New(rand.NewSource(6)), quant.Q4_0)
	s.Header.CombineStyle, s.Header.DenseDelay, s.Header.ExpertDelay, s.Header.VocabSize = archspec.PreNorm, 0, 0, 60
	dir := t.TempDir()
	model := filepath.Join(dir, "m.cflow")
	if _, err := fmttest.WriteCflow(model, s, nil); err != nil {
		t.Fatal(err)
	}
	runTrace := func(name string, kernel ...string) *trace.Trace {
		t.Helper()
		out := filepath.Join(dir, name+".json")
		args := append([]string{"run", model, "--prompt-ids", "1,2,3", "--temperature", "0", "--max-tokens", "3", "--threads", "1", "--trace-out", out}, kernel...)
		if code := runApp(args...); code != 0 {
			t.Fatalf("run %v: exit %d", kernel, code)
		}
		tr, err := trace.Load(out)
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	logits := func(tr *trace.Trace) []float64 {
		var out []float64
		for _, st := range tr.Steps {
			out = append(out, st.TopLogits...)
		}
		return out
	}
	base := logits(runTrace("default"))
	if twin := logits(runTrace("twin", "--kernel", verify.Kernel().Name())); !slices.Equal(base, twin) {
		t.Errorf("--kernel %s (the trace default) changed the logits", verify.Kernel())
	}
	for _, k := range quant.Kernels() {
		if k.QuantizesActivations() {
			if slices.Equal(base, logits(runTrace(k.Name(), "--kernel", k.Name()))) {
				t.Errorf("--kernel %s: logits equal the float kernel's, so the flag was ignored", k)
			}
		}
	}
	bad := filepath.Join(dir, "bad.json")
	if code := runApp("run", model, "--prompt-ids", "1", "--max-tokens", "1", "--kernel", "nonesuch", "--trace-out", bad); code != exitUsage {
		t.Errorf("--kernel nonesuch: exit %d, want %d", code, exitUsage)
	}
	if _, err := os.Stat(bad); err == nil {
		t.Error("--kernel nonesuch left a trace")
	}
}
