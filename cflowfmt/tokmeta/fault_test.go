package tokmeta_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/cflowfmt/fmttest"
	"github.com/cflow-dev/cflow/cflowfmt/tokmeta"
	"github.com/cflow-dev/cflow/quant"
	"github.com/cflow-dev/cflow/tokenizer"
)

// TestTruncatedUnderMapping (issue 19 item 6): a model file truncated
// while open (every page of its mapping gone: a read there raises SIGBUS)
// still gives its tokenizer, and a tokenizer opened before the truncation
// still encodes and decodes — the piece table lives in the metadata the
// reader copied at open, never in the mapping — instead of the process
// dying.
func TestTruncatedUnderMapping(t *testing.T) {
	flat, err := tokenizer.Compile([]byte(smallByteLevelJSON), nil)
	if err != nil {
		t.Fatal(err)
	}
	s := fmttest.Tiny(quant.Q8_0, false, false)
	s.Header.VocabSize = 13
	s.Meta.SetString(cflowfmt.KeyTokenizerKind, tokenizer.KindHF)
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
	before, err := tokmeta.Load(f.Model.Meta, 13)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	after, err := tokmeta.Load(f.Model.Meta, 13)
	if err != nil {
		t.Fatal(err)
	}
	for _, tk := range []tokenizer.Tokenizer{before, after} {
		ids, err := tk.Encode("hello world")
		if err != nil {
			t.Fatal(err)
		}
		if want := []int{10, 3, 11, 3, 6, 2, 7}; !slices.Equal(ids, want) {
			t.Fatalf("Encode = %v, want %v", ids, want)
		}
		if got := tokenizer.Decode(tk, ids); got != "hello world" {
			t.Fatalf("Decode = %q", got)
		}
	}
}

// smallByteLevelJSON is a 13-id byte-level BPE: "hello world" is
// hell·o·Ġw·o·r·l·d by its merges.
const smallByteLevelJSON = `{"model":{"type":"BPE","vocab":{"h":0,"e":1,"l":2,"o":3,"Ġ":4,"w":5,"r":6,"d":7,"he":8,"ll":9,"hell":10,"Ġw":11,"<|endoftext|>":12},
	"merges":["h e","l l","he ll","Ġ w"]},"added_tokens":[{"id":12,"content":"<|endoftext|>","special":true}],
	"pre_tokenizer":{"type":"ByteLevel","add_prefix_space":false},"decoder":{"type":"ByteLevel"}}`
