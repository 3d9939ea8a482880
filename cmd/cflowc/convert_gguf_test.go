package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestConvertOllama: convert ollama:NAME finds the model's GGUF in
// $OLLAMA_MODELS (a store laid out as ollama does) and converts it; a name
// not in the store is exit 2 with no output.
func TestConvertOllama(t *testing.T) {
	model, err := os.ReadFile("../../convert/testdata/qwen3.gguf")
	if err != nil {
		t.Fatal(err)
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
	man := filepath.Join(dir, "manifests", "registry.ollama.ai", "library", "tiny-qwen3", "f32")
	if err := os.MkdirAll(filepath.Dir(man), 0o755); err != nil {
		t.Fatal(err)
	}
	m := fmt.Sprintf(`{"schemaVersion":2,"layers":[{"mediaType":"application/vnd.ollama.image.model","digest":"sha256:%s","size":%d}]}`, digest, len(model))
	if err := os.WriteFile(man, []byte(m), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("OLLAMA_MODELS", dir)
	out := filepath.Join(t.TempDir(), "m.cflow")
	if code, _ := runIO(t, "", "convert", "ollama:tiny-qwen3:f32", "-o", out, "--quant", "q8_0", "-q"); code != 0 {
		t.Fatalf("ollama:tiny-qwen3:f32: exit %d", code)
	}
	if st, err := os.Stat(out); err != nil || st.Size() == 0 {
		t.Fatalf("no output: %v", err)
	}
	absent := filepath.Join(t.TempDir(), "n.cflow")
	if code, _ := runIO(t, "", "convert", "ollama:tiny-qwen3", "-o", absent, "-q"); code != 2 {
		t.Errorf("ollama:tiny-qwen3 (no latest tag): exit %d, want 2", code)
	}
	if _, err := os.Stat(absent); err == nil {
		t.Error("an output file for a model not in the store")
	}
}
