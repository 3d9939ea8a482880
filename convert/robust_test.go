package convert

import (
	"context"
	"encoding/binary"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/x448/float16"

	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/quant"
)

// encodeOne is value v in dtype dt, as a checkpoint stores it.
func encodeOne(dt string, v float32) []byte {
	switch dt {
	case "F16":
		return binary.LittleEndian.AppendUint16(nil, uint16(float16.Fromfloat32(v)))
	case "BF16":
		return binary.LittleEndian.AppendUint16(nil, uint16(math.Float32bits(v)>>16))
	}
	return binary.LittleEndian.AppendUint32(nil, math.Float32bits(v))
}

// TestNonFiniteWeightsRefused (issue 19 item 3): a NaN or ±Inf anywhere in
// an F32, F16 or BF16 safetensors tensor is refused when the checkpoint is
// read, naming the tensor and the element; finite extremes pass.
func TestNonFiniteWeightsRefused(t *testing.T) {
	for _, dt := range []string{"F32", "F16", "BF16"} {
		for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 65504} {
			const rows, cols, at = 3, 37, 2*37 + 5 // index 79: past the 8-byte fast path's first words
			fill := func(w io.Writer) error {
				for i := 0; i < rows*cols; i++ {
					v := float32(i%7) - 3
					if i == at {
						v = bad
					}
					if _, err := w.Write(encodeOne(dt, v)); err != nil {
						return err
					}
				}
				return nil
			}
			b := stBytes(t, []STTensor{{Name: "ok", DType: dt, Shape: []int{4}, Fill: zeros(4 * map[string]int{"F32": 4, "F16": 2, "BF16": 2}[dt])},
				{Name: "model.layers.0.mlp.up_proj.weight", DType: dt, Shape: []int{rows, cols}, Fill: fill}})
			_, err := parseSafetensors("x.safetensors", b)
			finite := !math.IsNaN(float64(bad)) && !math.IsInf(float64(bad), 0)
			switch {
			case finite && err != nil:
				t.Errorf("%s %v: finite value refused: %v", dt, bad, err)
			case !finite && err == nil:
				t.Errorf("%s %v: accepted", dt, bad)
			case !finite && !(strings.Contains(err.Error(), "model.layers.0.mlp.up_proj.weight") && strings.Contains(err.Error(), "index 79 (row 2, column 5)")):
				t.Errorf("%s %v: error does not name tensor and index: %v", dt, bad, err)
			}
		}
	}
}

// TestLlama2cNonFiniteRefused: the same for a llama2.c .bin (one NaN in
// layer 0's attention norm of the vendored stories260K).
func TestLlama2cNonFiniteRefused(t *testing.T) {
	raw, err := os.ReadFile(stories)
	if err != nil {
		t.Fatal(err)
	}
	dim, vocab := int(binary.LittleEndian.Uint32(raw[0:])), int(binary.LittleEndian.Uint32(raw[20:]))
	off := 28 + 4*(vocab*dim+3) // rms_att_weight[0][3]: after the embedding
	binary.LittleEndian.PutUint32(raw[off:], math.Float32bits(float32(math.NaN())))
	p := filepath.Join(t.TempDir(), "nan.bin")
	if err := os.WriteFile(p, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "o.cflow")
	_, err = Convert(context.Background(), p, out, Options{})
	if err == nil || !strings.Contains(err.Error(), "non-finite value NaN at index 3") {
		t.Fatalf("want the NaN named, got %v", err)
	}
	if _, serr := os.Stat(out); !os.IsNotExist(serr) {
		t.Fatal("output written")
	}
}

// TestSafetensorsDuplicateKey (item 10): a header naming a tensor (or a
// field of one) twice is refused instead of the last one silently winning.
func TestSafetensorsDuplicateKey(t *testing.T) {
	for _, hdr := range []string{
		`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`,
		`{"a":{"dtype":"F32","dtype":"F16","shape":[1],"data_offsets":[0,4]}}`,
	} {
		b := binary.LittleEndian.AppendUint64(nil, uint64(len(hdr)))
		b = append(append(b, hdr...), make([]byte, 8)...)
		if _, err := parseSafetensors("dup.safetensors", b); err == nil || !strings.Contains(err.Error(), "twice") {
			t.Errorf("%s: want a duplicate-key error, got %v", hdr, err)
		}
	}
	if _, ok := duplicateKey([]byte(`{"a":{"x":1},"b":{"x":[{"y":1},{"y":2}]}}`)); ok {
		t.Error("same key in different objects reported as a duplicate")
	}
}

// TestConvertOutputChecksFirst (items 2 and 9): an output that is an
// existing directory, or the input itself under another name (hard link),
// fails before a single tile is converted.
func TestConvertOutputChecksFirst(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "s.bin")
	raw, err := os.ReadFile(stories)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(in, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	asDir := filepath.Join(dir, "out.cflow")
	if err := os.Mkdir(asDir, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "same.cflow")
	if err := os.Link(in, link); err != nil {
		t.Fatal(err)
	}
	for out, want := range map[string]string{asDir: "existing directory", link: "is the input"} {
		opt := Options{onProgress: func() { t.Errorf("%s: a tile was converted before the output check", out) }}
		_, err := Convert(context.Background(), in, out, opt)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: want %q, got %v", out, want, err)
		}
	}
	if b, _ := os.ReadFile(in); len(b) != len(raw) {
		t.Fatal("input changed")
	}
}

// TestGeneralNameNotAPath (newcomer finding): general.name is the model's
// name — the hub id a config names, else the checkpoint's base name — never
// the relative or absolute path the converter was given.
func TestGeneralNameNotAPath(t *testing.T) {
	for _, c := range []struct{ nameOrPath, want string }{
		{"", "llama"},
		{"../../ckpt/my-llama", "my-llama"},
		{"/home/u/models/tiny/", "tiny"},
		{"meta-llama/Llama-3.2-1B", "meta-llama/Llama-3.2-1B"},
	} {
		dir := filepath.Join(t.TempDir(), "llama")
		writeFixture(t, dir, "llama", "F32")
		if c.nameOrPath != "" {
			p := filepath.Join(dir, "config.json")
			b, _ := os.ReadFile(p)
			b = []byte(strings.Replace(string(b), "{", `{"_name_or_path": "`+c.nameOrPath+`",`, 1))
			os.WriteFile(p, b, 0o644)
		}
		out := filepath.Join(t.TempDir(), "m.cflow")
		rel, _ := filepath.Rel(mustWd(t), dir)
		if _, err := Convert(context.Background(), rel, out, Options{Quant: quant.F32}); err != nil {
			t.Fatal(err)
		}
		f, err := cflowfmt.Open(out)
		if err != nil {
			t.Fatal(err)
		}
		if got := f.Meta.String(cflowfmt.KeyName, ""); got != c.want {
			t.Errorf("_name_or_path %q: general.name %q, want %q", c.nameOrPath, got, c.want)
		}
		f.Close()
	}
}

func mustWd(t *testing.T) string {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return wd
}
