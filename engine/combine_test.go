package engine

import (
	"testing"

	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/cflowfmt"
)

// TestEveryStyleHasCombiner: a style cflowfmt accepts as Valid must have a
// runtime combiner (adding a style to the format without its combine_*.go
// fails here), and one past the last is refused by name.
func TestEveryStyleHasCombiner(t *testing.T) {
	md := cflowfmt.NewMetadata()
	n := 0
	for ; archspec.CombineStyle(n).Valid(); n++ {
		h := cflowfmt.Header{CombineStyle: archspec.CombineStyle(n)}
		if c, err := newCombiner(&h, md); err != nil || c == nil {
			t.Errorf("%s: no combiner (%v)", h.CombineStyle, err)
		}
	}
	h := cflowfmt.Header{CombineStyle: archspec.CombineStyle(n)}
	if _, err := newCombiner(&h, md); err == nil {
		t.Errorf("%s: accepted", h.CombineStyle)
	}
}

// TestMergeIntervalRefused: DecoupledStreams cannot merge every 0 layers.
func TestMergeIntervalRefused(t *testing.T) {
	md := cflowfmt.NewMetadata()
	md.SetU32(cflowfmt.KeyMergeInterval, 0)
	h := cflowfmt.Header{CombineStyle: archspec.DecoupledStreams}
	if _, err := newCombiner(&h, md); err == nil {
		t.Fatal("merge interval 0 accepted")
	}
}
