package main

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/cflow-dev/cflow/gguf"
)

// TestGGUFRoundTrip: an F32 GGUF written by llama.cpp's gguf-py
// (convert/testdata; F16/BF16 become F32, cflow having no 16-bit tile)
// converted to .cflow and .vflow with --quant f32
// and exported again gives back every tensor under its name, with its
// type, shape and bytes (the llama architecture's q/k rows permuted back
// as llama.cpp wants them).
func TestGGUFRoundTrip(t *testing.T) {
	for _, name := range []string{"qwen3", "llama_linear_f32"} {
		for _, ext := range []string{".cflow", ".vflow"} {
			in := filepath.Join("..", "..", "convert", "testdata", name+".gguf")
			dir := t.TempDir()
			mid, out := filepath.Join(dir, "m"+ext), filepath.Join(dir, "back.gguf")
			if code, _ := runIO(t, "", "convert", in, "-o", mid, "--quant", "f32", "-q"); code != 0 {
				t.Fatalf("%s: convert: exit %d", name, code)
			}
			if code, _ := runIO(t, "", "export", "gguf", "-o", out, mid); code != 0 {
				t.Fatalf("%s: export: exit %d", name, code)
			}
			a, err := gguf.Open(in)
			if err != nil {
				t.Fatal(err)
			}
			b, err := gguf.Open(out)
			if err != nil {
				t.Fatal(err)
			}
			for i := range a.Tensors {
				ta := &a.Tensors[i]
				tb, ok := b.Tensor(ta.Name)
				if !ok {
					t.Errorf("%s%s: %s missing after the round trip", name, ext, ta.Name)
					continue
				}
				da, _ := a.TensorData(ta)
				db, _ := b.TensorData(tb)
				if ta.Type != tb.Type || len(ta.Dims) != len(tb.Dims) || !bytes.Equal(da, db) {
					t.Errorf("%s%s: %s is %s %v after the round trip, was %s %v (or its bytes differ)", name, ext, ta.Name, tb.Type, tb.Dims, ta.Type, ta.Dims)
				}
			}
			a.Close()
			b.Close()
		}
	}
}

// TestGGUFRoundTripQuantized: Q8_0 and Q4_0 tensors (gguf-py's own
// quantizers) converted with the matching --quant and exported again come
// back with their type and bytes: carried block for block, never
// requantized.
func TestGGUFRoundTripQuantized(t *testing.T) {
	for _, c := range []struct{ file, quant string }{{"qwen3_q8", "q8_0"}, {"qwen3_q4", "q4_0"}} {
		for _, ext := range []string{".cflow", ".vflow"} {
			in := filepath.Join("..", "..", "convert", "testdata", c.file+".gguf")
			dir := t.TempDir()
			mid, out := filepath.Join(dir, "m"+ext), filepath.Join(dir, "back.gguf")
			if code, _ := runIO(t, "", "convert", in, "-o", mid, "--quant", c.quant, "-q"); code != 0 {
				t.Fatalf("%s: convert: exit %d", c.file, code)
			}
			if code, _ := runIO(t, "", "export", "gguf", "-o", out, mid); code != 0 {
				t.Fatalf("%s: export: exit %d", c.file, code)
			}
			a, err := gguf.Open(in)
			if err != nil {
				t.Fatal(err)
			}
			b, err := gguf.Open(out)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for i := range a.Tensors {
				ta := &a.Tensors[i]
				if ta.Type != gguf.GGMLQ8_0 && ta.Type != gguf.GGMLQ4_0 {
					continue
				}
				n++
				tb, ok := b.Tensor(ta.Name)
				if !ok {
					t.Fatalf("%s%s: %s missing after the round trip", c.file, ext, ta.Name)
				}
				da, _ := a.TensorData(ta)
				db, _ := b.TensorData(tb)
				if ta.Type != tb.Type || !bytes.Equal(da, db) {
					t.Errorf("%s%s: %s is %s after the round trip, was %s (or its bytes differ)", c.file, ext, ta.Name, tb.Type, ta.Type)
				}
			}
			if n != 2 {
				t.Errorf("%s: %d quantized tensors, want 2", c.file, n)
			}
			a.Close()
			b.Close()
		}
	}
}
