package gguf_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cflow-dev/cflow/cflowfmt/tokmeta"
	"github.com/cflow-dev/cflow/gguf"
	"github.com/cflow-dev/cflow/tokenizer"
)

// vocabCase is one of llama.cpp's tokenizer test vectors
// (tests/test-tokenizer-0.cpp reads them): .inp holds texts separated by
// "\n__ggml_vocab_test__\n", .out one line of ids per text, tokenized
// without BOS and without parsing special tokens.
type vocabCase struct {
	text string
	ids  []int
}

func readVocabCases(t *testing.T, gg string) []vocabCase {
	t.Helper()
	inp, err := os.ReadFile(gg + ".inp")
	if err != nil {
		return nil
	}
	out := mustRead(t, gg+".out")
	texts := strings.Split(string(inp), "\n__ggml_vocab_test__\n")
	if texts[len(texts)-1] == "" {
		texts = texts[:len(texts)-1]
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != len(texts) {
		t.Fatalf("%s: %d texts, %d id lines", gg, len(texts), len(lines))
	}
	var cs []vocabCase
	for i, l := range lines {
		c := vocabCase{text: texts[i]}
		for _, f := range strings.Fields(l) {
			id, err := strconv.Atoi(f)
			if err != nil {
				t.Fatal(err)
			}
			c.ids = append(c.ids, id)
		}
		cs = append(cs, c)
	}
	return cs
}

// mustMatch are the vocabularies the issue names: every vector exact.
var mustMatch = map[string]bool{"llama-bpe": true, "qwen2": true, "gpt-2": true, "llama-spm": true, "gemma-4": true, "phi-3": true}

// TestTokenizerFromGGUF runs llama.cpp's own tokenizer vectors through the
// tokenizer a GGUF's keys translate to. The six named vocabularies must
// give every .out; every other one is exact or refused naming its type
// (those only without -short).
func TestTokenizerFromGGUF(t *testing.T) {
	for _, p := range llamaVocabFiles(t) {
		name := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(p), "ggml-vocab-"), ".gguf")
		if testing.Short() && !mustMatch[name] {
			continue // seconds each on a loaded machine; make test runs them
		}
		t.Run(name, func(t *testing.T) {
			cases := readVocabCases(t, p)
			f, err := gguf.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			md, vocab, err := f.TokenizerMetadata()
			if err != nil {
				if mustMatch[name] {
					t.Fatal(err)
				}
				if !strings.Contains(err.Error(), "not implemented") {
					t.Errorf("refused without naming what: %v", err)
				}
				t.Logf("refused: %v", err)
				return
			}
			tk, err := tokmeta.Load(md, vocab)
			if err != nil {
				t.Fatal(err)
			}
			bad := 0
			for _, c := range cases {
				got, err := tokenizer.EncodeText(tk, c.text, true)
				if err != nil || !equalIDs(got, c.ids) {
					bad++
					if bad <= 5 {
						t.Errorf("%q: %v %v, want %v", c.text, got, err, c.ids)
					}
				}
			}
			if bad > 0 {
				t.Errorf("%d of %d vectors differ", bad, len(cases))
			}
		})
	}
}

func equalIDs(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
