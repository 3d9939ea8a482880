package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
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

// TestTokenizeOllama: ollama:NAME[:TAG] finds the GGUF in $OLLAMA_MODELS
// (a store laid out as ollama does) and tokenizes with it; an unknown name
// is exit 2.
func TestTokenizeOllama(t *testing.T) {
	p := "../../bench/llama.cpp/models/ggml-vocab-qwen2.gguf"
	model, err := os.ReadFile(p)
	if err != nil {
		t.Skip("bench/llama.cpp absent (make llama-src)")
	}
	dir := t.TempDir()
	sum := sha256.Sum256(model)
	digest := hex.EncodeToString(sum[:])
	if err := os.MkdirAll(filepath.Join(dir, "blobs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "blobs", "sha256-"+digest), model, 0o644); err != nil {
		t.Fatal(err)
	}
	man := filepath.Join(dir, "manifests", "registry.ollama.ai", "library", "qwen-vocab", "latest")
	if err := os.MkdirAll(filepath.Dir(man), 0o755); err != nil {
		t.Fatal(err)
	}
	m := fmt.Sprintf(`{"schemaVersion":2,"layers":[{"mediaType":"application/vnd.ollama.image.model","digest":"sha256:%s","size":%d}]}`, digest, len(model))
	if err := os.WriteFile(man, []byte(m), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("OLLAMA_MODELS", dir)
	_, want := runIO(t, "Hello world", "tokenize", p, "--text", "-")
	if code, got := runIO(t, "Hello world", "tokenize", "ollama:qwen-vocab", "--text", "-"); code != 0 || got != want || want == "" {
		t.Errorf("ollama:qwen-vocab: exit %d %q, want %q", code, got, want)
	}
	if code, _ := runIO(t, "Hello", "tokenize", "ollama:absent", "--text", "-"); code != 2 {
		t.Errorf("ollama:absent: exit %d, want 2", code)
	}
}
