package analyze_test

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/cflow-dev/cflow/analyze"
	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/cflowfmt/fmttest"
	"github.com/cflow-dev/cflow/quant"
	"github.com/cflow-dev/cflow/vflowfmt"
)

// TestTruncatedUnderMapping (issue 19 item 6): a model file truncated
// while open (every page of its mapping gone, so a read there raises
// SIGBUS) is still costed — the metadata walk (block iterations, layer
// kinds) reads what the reader copied at open, not the mapping — with the
// same report as before the truncation, instead of the process dying.
func TestTruncatedUnderMapping(t *testing.T) {
	s := fmttest.Tiny(quant.Q8_0, true, true)
	// Large enough to be mapped (files under a page are read instead).
	s.Meta.SetBytes(cflowfmt.KeyTokenizerData, make([]byte, 3*4096))
	path := filepath.Join(t.TempDir(), "tiny.cflow")
	if _, err := fmttest.WriteCflow(path, s, nil); err != nil {
		t.Fatal(err)
	}
	m, err := vflowfmt.OpenModel(path)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	before, err := analyze.Compute(analyze.FromModel(m))
	if err != nil {
		t.Fatal(err)
	}
	if len(before.Passes) != 2 || before.Passes[1].Kind != "sliding" {
		t.Fatalf("passes %+v: want 2 with layer 1 sliding (the metadata's layer kinds)", before.Passes)
	}
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	after, err := analyze.Compute(analyze.FromModel(m))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(before, after) {
		t.Fatalf("after truncation %+v, before %+v", after, before)
	}
}
