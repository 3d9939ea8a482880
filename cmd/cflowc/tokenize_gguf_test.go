package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTokenizeGGUF: tokenize takes a vocabulary-only GGUF directly and
// gives llama.cpp's ids for the first text of its own test vectors
// (models/ggml-vocab-*.gguf.inp/.out); a vocabulary of a type cflow does
// not implement is refused with exit 2.
func TestTokenizeGGUF(t *testing.T) {
	dir := "../../bench/llama.cpp/models"
	if _, err := os.Stat(filepath.Join(dir, "ggml-vocab-llama-spm.gguf")); err != nil {
		if os.Getenv("CFLOW_REQUIRE_LLAMA_SRC") == "1" {
			t.Fatal("bench/llama.cpp/models is absent (make llama-src)")
		}
		t.Skip("bench/llama.cpp absent (make llama-src)")
	}
	for _, name := range []string{"llama-spm", "qwen2"} {
		p := filepath.Join(dir, "ggml-vocab-"+name+".gguf")
		inp, err := os.ReadFile(p + ".inp")
		if err != nil {
			t.Fatal(err)
		}
		out, err := os.ReadFile(p + ".out")
		if err != nil {
			t.Fatal(err)
		}
		text, _, _ := strings.Cut(string(inp), "\n__ggml_vocab_test__\n")
		want, _, _ := strings.Cut(string(out), "\n")
		code, got := runIO(t, text, "tokenize", p, "--text", "-", "--no-special")
		if code != 0 || strings.TrimSpace(got) != strings.TrimSpace(want) {
			t.Errorf("%s: exit %d, %q; want %q", name, code, got, want)
		}
	}
	if code, _ := runIO(t, "hi", "tokenize", filepath.Join(dir, "ggml-vocab-bert-bge.gguf"), "--text", "-"); code != 2 {
		t.Errorf("a bert vocabulary: exit %d, want 2", code)
	}
}
