package convert

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/cflow-dev/cflow/quant"
)

func stBytes(t testing.TB, ts []STTensor) []byte {
	p := filepath.Join(t.TempDir(), "x.safetensors")
	if err := WriteSafetensors(p, ts); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func zeros(n int) func(io.Writer) error {
	return func(w io.Writer) error { _, err := w.Write(make([]byte, n)); return err }
}

// FuzzSafetensorsHeader: arbitrary bytes must give tensors whose data lie
// inside the buffer, or an error naming the file; never a panic.
func FuzzSafetensorsHeader(f *testing.F) {
	f.Add(stBytes(f, []STTensor{{Name: "a", DType: "F16", Shape: []int{2, 3}, Fill: zeros(12)},
		{Name: "b", DType: "F32", Shape: []int{4}, Fill: zeros(16)}}))
	f.Add([]byte{8, 0, 0, 0, 0, 0, 0, 0, '{', '}', ' ', ' ', ' ', ' ', ' ', ' '})
	f.Add(binary.LittleEndian.AppendUint64(nil, 1<<62))
	// Issue 19's red-team inputs: a duplicate key, a NaN weight in each dtype.
	dup := `{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`
	f.Add(append(append(binary.LittleEndian.AppendUint64(nil, uint64(len(dup))), dup...), 0, 0, 0, 0))
	for _, dt := range []string{"F32", "F16", "BF16"} {
		nan := encodeOne(dt, float32(math.NaN()))
		f.Add(stBytes(f, []STTensor{{Name: "w", DType: dt, Shape: []int{2, 2}, Fill: func(w io.Writer) error {
			_, err := w.Write(bytes.Repeat(nan, 4))
			return err
		}}}))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ts, err := parseSafetensors("fuzz.safetensors", b)
		if err != nil {
			if !bytes.Contains([]byte(err.Error()), []byte("fuzz.safetensors")) {
				t.Fatalf("error without the file name: %v", err)
			}
			return
		}
		for name, tn := range ts {
			if tn.unsupported != "" {
				continue
			}
			if len(tn.data) != tn.rows*tn.cols*tn.dt.size() {
				t.Fatalf("tensor %s: %d bytes for %dx%d %s", name, len(tn.data), tn.rows, tn.cols, tn.dt)
			}
			for i, v := range tn.vector() { // reads every element
				if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
					t.Fatalf("tensor %s: accepted non-finite value %v at %d", name, v, i)
				}
			}
		}
	})
}

func TestSafetensorsUnsupportedDtype(t *testing.T) {
	fx := writeFixture(t, filepath.Join(t.TempDir(), "m"), "llama", "F32")
	// Relabel one F32 tensor as I32 (same element size, so the file stays
	// self-consistent): refused with file and tensor named.
	st := filepath.Join(fx.dir, "model.safetensors")
	b, _ := os.ReadFile(st)
	hdr := b[8 : 8+binary.LittleEndian.Uint64(b)]
	key := []byte(`"model.layers.1.mlp.up_proj.weight":{"data_offsets":`)
	i := bytes.Index(hdr, key)
	if i < 0 {
		t.Fatalf("header layout changed: %.200s", hdr)
	}
	j := bytes.Index(hdr[i:], []byte(`"dtype":"F32"`))
	copy(hdr[i+j:], `"dtype":"I32"`)
	os.WriteFile(st, b, 0o644)
	convertErr(t, fx.dir, Options{}, st, "model.layers.1.mlp.up_proj.weight", "unsupported I32")
}

// TestShardedBF16 converts a sharded bf16 checkpoint from the synthetic
// generator and checks it against the same model written as one f32 file.
func TestShardedBF16(t *testing.T) {
	g, _ := GeometryByName("tiny")
	dir := t.TempDir()
	if err := Synthesize(filepath.Join(dir, "bf16"), SynthOptions{Geometry: g, DType: "bf16", Seed: 3, Shards: 3}); err != nil {
		t.Fatal(err)
	}
	if err := Synthesize(filepath.Join(dir, "f32"), SynthOptions{Geometry: g, DType: "f32", Seed: 3}); err != nil {
		t.Fatal(err)
	}
	// Both must convert (every tensor found across the shards) and pass
	// Check; the f32 twin shows the geometry is the same.
	for _, name := range []string{"bf16", "f32"} {
		out := filepath.Join(dir, name+".cflow")
		res, err := Convert(context.Background(), filepath.Join(dir, name), out, Options{Quant: quant.Q8_0, NUMANodes: 2})
		if err != nil {
			t.Fatal(err)
		}
		f := openChecked(t, out)
		if f.Header.NumLayers != uint32(g.Layers) || res.InputBytes == 0 {
			t.Fatalf("%s: %+v", name, f.Header)
		}
	}
}
