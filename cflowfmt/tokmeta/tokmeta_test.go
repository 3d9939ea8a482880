package tokmeta_test

import (
	"bytes"
	"testing"

	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/cflowfmt/tokmeta"
	"github.com/cflow-dev/cflow/tokenizer"
)

// TestPutStoredRoundTrip: what a reader decodes (Stored) and a writer puts
// back gives the same metadata bytes, so a file re-written from another
// (export, re-layout) keeps its tokenizer entries; and the ids
// tokenizer_config.json names by text replace config.json's, which stays
// the first stop id.
func TestPutStoredRoundTrip(t *testing.T) {
	cfg := []byte(`{"eos_token":"<|endoftext|>","chat_template":"{{ messages }}"}`)
	src := &tokenizer.Source{JSON: []byte(smallByteLevelJSON), Config: cfg, Path: "t"}
	md := cflowfmt.NewMetadata()
	md.SetU32(cflowfmt.KeyEOS, 7) // config.json's eos_token_id
	if err := tokmeta.Write(md, src, 13); err != nil {
		t.Fatal(err)
	}
	if got := md.U32(cflowfmt.KeyEOS, 0); got != 12 {
		t.Fatalf("EOS = %d, want 12 (tokenizer_config's <|endoftext|>)", got)
	}
	if got := md.U32s(cflowfmt.KeyEndOfTurn); len(got) != 2 || got[0] != 7 || got[1] != 12 {
		t.Fatalf("stop ids = %v, want [7 12]", got)
	}
	again := cflowfmt.NewMetadata()
	tokmeta.Put(again, tokmeta.Stored(md))
	a, _ := md.MarshalBinary()
	b, _ := again.MarshalBinary()
	if !bytes.Equal(a, b) {
		t.Fatalf("metadata after Put(Stored(md)) differs: %d vs %d bytes", len(b), len(a))
	}
}
