package trace

import "testing"

// TestTopKOrder: descending, ties to the lower id.
func TestTopKOrder(t *testing.T) {
	got := TopK([]float32{1, 5, 3, 5, 0, 3}, 4)
	want := []int{1, 3, 2, 5}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("TopK = %v, want %v", got, want)
		}
	}
}

// TestCheckRefusesInconsistentTraces: a step whose input is not the
// teacher-forced token, or whose top lists differ in length, is refused.
func TestCheckRefusesInconsistentTraces(t *testing.T) {
	good := func() *Trace {
		return &Trace{Schema: Schema, Prompt: []int{4}, Generated: []int{7},
			Steps: []Step{Record(0, 4, []float64{1}, 1, []float32{0, 2, 1}), Record(1, 7, []float64{1}, 1, []float32{3, 2, 1})}}
	}
	if err := good().Check(); err != nil {
		t.Fatalf("consistent trace refused: %v", err)
	}
	for name, spoil := range map[string]func(*Trace){
		"schema":     func(tr *Trace) { tr.Schema = "cflow-trace/0" },
		"input":      func(tr *Trace) { tr.Steps[1].InputToken = 4 },
		"top lists":  func(tr *Trace) { tr.Steps[0].TopLogits = tr.Steps[0].TopLogits[:1] },
		"over steps": func(tr *Trace) { tr.Generated = nil },
	} {
		tr := good()
		spoil(tr)
		if tr.Check() == nil {
			t.Errorf("%s: inconsistent trace accepted", name)
		}
	}
}
