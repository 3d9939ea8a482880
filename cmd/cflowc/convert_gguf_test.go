package main

import (
	"bytes"
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

// TestConvertRefusesHostileGGUF: a truncated GGUF, one with a count past
// its end and one with a tensor type ggml never had are refused with exit 2 and
// no output file, never a panic.
func TestConvertRefusesHostileGGUF(t *testing.T) {
	good, err := os.ReadFile("../../convert/testdata/qwen3.gguf")
	if err != nil {
		t.Fatal(err)
	}
	huge := append([]byte(nil), good...)
	huge[16] = 0xff // the metadata count's low byte: entries past the end
	// A tensor type ggml never used: the first tensor info's type field
	// follows its name and dims.
	badType := append([]byte(nil), good...)
	name := []byte("token_embd.weight")
	i := bytes.Index(badType, name) + len(name)
	nd := int(badType[i])
	badType[i+4+8*nd] = 4 // Q4_2, removed from ggml
	for name, b := range map[string][]byte{"truncated": good[:len(good)/2], "huge count": huge, "cut header": good[:100], "bad type": badType} {
		dir := t.TempDir()
		in, out := filepath.Join(dir, "m.gguf"), filepath.Join(dir, "m.cflow")
		if err := os.WriteFile(in, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if code, _ := runIO(t, "", "convert", in, "-o", out, "-q"); code != 2 {
			t.Errorf("%s: exit %d, want 2", name, code)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%s: an output file", name)
		}
	}
}

// TestConvertRequantFlag: --requant q8_0 converts a GGUF with Q4_1
// tensors (without it: exit 2, no output); --requant naming another codec
// than --quant is a usage error.
func TestConvertRequantFlag(t *testing.T) {
	in := "../../convert/testdata/qwen3_q41.gguf"
	dir := t.TempDir()
	if code, _ := runIO(t, "", "convert", in, "-o", filepath.Join(dir, "a.cflow"), "--quant", "q8_0", "-q"); code != 2 {
		t.Errorf("Q4_1 without --requant: exit %d, want 2", code)
	}
	if _, err := os.Stat(filepath.Join(dir, "a.cflow")); err == nil {
		t.Error("an output file after a refusal")
	}
	if code, _ := runIO(t, "", "convert", in, "-o", filepath.Join(dir, "b.cflow"), "--requant", "q8_0", "-q"); code != 0 {
		t.Errorf("--requant q8_0: exit %d", code)
	}
	if code, _ := runIO(t, "", "convert", in, "-o", filepath.Join(dir, "c.cflow"), "--requant", "q8_0", "--quant", "q4_0", "-q"); code != 2 {
		t.Errorf("--requant q8_0 --quant q4_0: exit %d, want 2", code)
	}
}
