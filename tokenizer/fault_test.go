package tokenizer

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/cflowfmt/fmttest"
	"github.com/cflow-dev/cflow/quant"
)

// TestTruncatedUnderMapping (issue 19 item 6): a model file truncated
// while open (every page of its mapping gone: a read there raises SIGBUS)
// still gives its tokenizer, and a tokenizer opened before the truncation
// still encodes and decodes — the piece table lives in the metadata the
// reader copied at open, never in the mapping — instead of the process
// dying.
func TestTruncatedUnderMapping(t *testing.T) {
	flat, err := Compile([]byte(smallByteLevelJSON), nil)
	if err != nil {
		t.Fatal(err)
	}
	s := fmttest.Tiny(quant.Q8_0, false, false)
	s.Header.VocabSize = 13
	s.Meta.SetString(cflowfmt.KeyTokenizerKind, KindHF)
	// Padded past a page so the file is mapped (smaller files are read).
	s.Meta.SetBytes(cflowfmt.KeyTokenizerData, flat)
	s.Meta.SetBytes("test.padding", make([]byte, 3*4096))
	path := filepath.Join(t.TempDir(), "tok.cflow")
	if _, err := fmttest.WriteCflow(path, s, nil); err != nil {
		t.Fatal(err)
	}
	f, err := cflowfmt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Model.Close()
	before, err := FromMetadata(f.Model.Meta, 13)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	after, err := FromMetadata(f.Model.Meta, 13)
	if err != nil {
		t.Fatal(err)
	}
	for _, tk := range []Tokenizer{before, after} {
		ids, err := tk.Encode("hello world")
		if err != nil {
			t.Fatal(err)
		}
		if want := []int{10, 3, 11, 3, 6, 2, 7}; !eq(ids, want) {
			t.Fatalf("Encode = %v, want %v", ids, want)
		}
		if got := Decode(tk, ids); got != "hello world" {
			t.Fatalf("Decode = %q", got)
		}
	}
}
