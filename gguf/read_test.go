package gguf_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/cflow-dev/cflow/gguf"
)

// TestReadGGUFPy reads testdata/reader.gguf, written by llama.cpp's gguf-py
// writer, and holds every entry and tensor to what gguf-py's own reader
// found in it (testdata/reader.json; testdata/mkreader.py made both).
func TestReadGGUFPy(t *testing.T) {
	b, err := os.ReadFile("testdata/reader.gguf")
	if err != nil {
		t.Fatal(err)
	}
	var want struct {
		KV []struct {
			Key   string
			Types []uint32
			Value json.RawMessage
		}
		Tensors []struct {
			Name   string
			Type   uint32
			Dims   []uint64
			Offset uint64
			Bytes  int64
			SHA256 string
		}
		DataOffset int64 `json:"data_offset"`
		Alignment  int64
	}
	if err := json.Unmarshal(mustRead(t, "testdata/reader.json"), &want); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if f.Version != 3 || f.Alignment != want.Alignment || f.DataOffset != want.DataOffset {
		t.Errorf("version %d alignment %d data at %d, want 3 %d %d", f.Version, f.Alignment, f.DataOffset, want.Alignment, want.DataOffset)
	}
	if len(f.KVs) != len(want.KV) {
		t.Fatalf("%d entries, want %d", len(f.KVs), len(want.KV))
	}
	for i, w := range want.KV {
		kv := f.KVs[i]
		if kv.Key != w.Key || uint32(kv.Value.Type) != w.Types[0] || len(w.Types) > 1 && uint32(kv.Value.Elem) != w.Types[1] {
			t.Errorf("entry %d: %s %s, want %s %v", i, kv.Key, kv.Value.TypeName(), w.Key, w.Types)
			continue
		}
		if err := sameValue(kv.Value.Any(), w.Value); err != nil {
			t.Errorf("%s: %v", kv.Key, err)
		}
	}
	if len(f.Tensors) != len(want.Tensors) {
		t.Fatalf("%d tensors, want %d", len(f.Tensors), len(want.Tensors))
	}
	for i, w := range want.Tensors {
		ti := &f.Tensors[i]
		data, err := f.TensorData(ti)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		if ti.Name != w.Name || uint32(ti.Type) != w.Type || fmt.Sprint(ti.Dims) != fmt.Sprint(w.Dims) ||
			ti.Offset != w.Offset || ti.Size != w.Bytes || hex.EncodeToString(sum[:]) != w.SHA256 {
			t.Errorf("tensor %d: %s %s %v at %d, %d bytes; want %s %d %v at %d, %d bytes (or its bytes differ)",
				i, ti.Name, ti.Type, ti.Dims, ti.Offset, ti.Size, w.Name, w.Type, w.Dims, w.Offset, w.Bytes)
		}
	}
	// The same through NewFile's ReaderAt path, and typed accessors.
	g, err := gguf.NewFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	ti, _ := g.Tensor("q4k.weight")
	d1, _ := g.TensorData(ti)
	d2, _ := f.TensorData(ti)
	if !bytes.Equal(d1, d2) {
		t.Error("NewFile and Parse read different tensor bytes")
	}
	if s, err := f.StringOr("t.str", ""); s != "héllo ▁wörld" || err != nil {
		t.Errorf("StringOr: %q %v", s, err)
	}
	if _, err := f.StringOr("t.u32", ""); err == nil || !strings.Contains(err.Error(), `"t.u32" is u32, want str`) {
		t.Errorf("a u32 read as a string: %v", err)
	}
	if x, err := f.Lookup("t.arr_i16").Ints(); err != nil || fmt.Sprint(x) != "[-1 2 -3]" {
		t.Errorf("Ints: %v %v", x, err)
	}
	if _, err := f.Lookup("t.u64").Int(); err == nil {
		t.Error("a u64 over int64's range read as an int")
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sameValue compares a decoded value with gguf-py's JSON: integers by their
// decimal text, floats by value (and sign), everything else as JSON.
func sameValue(got any, raw json.RawMessage) error {
	rv := reflect.ValueOf(got)
	if rv.Kind() == reflect.Slice {
		var elems []json.RawMessage
		if err := json.Unmarshal(raw, &elems); err != nil {
			return err
		}
		if len(elems) != rv.Len() {
			return fmt.Errorf("%d elements, want %d", rv.Len(), len(elems))
		}
		for i := range elems {
			if err := sameValue(rv.Index(i).Interface(), elems[i]); err != nil {
				return fmt.Errorf("element %d: %w", i, err)
			}
		}
		return nil
	}
	switch rv.Kind() {
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if s := strconv.FormatInt(rv.Int(), 10); s != string(raw) {
			return fmt.Errorf("%s, want %s", s, raw)
		}
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if s := strconv.FormatUint(rv.Uint(), 10); s != string(raw) {
			return fmt.Errorf("%s, want %s", s, raw)
		}
	case reflect.Float32, reflect.Float64:
		w, err := strconv.ParseFloat(string(raw), 64)
		if g := rv.Float(); err != nil || g != w || math.Signbit(g) != math.Signbit(w) {
			return fmt.Errorf("%v, want %s", g, raw)
		}
	default:
		j, _ := json.Marshal(got)
		var a, b any
		_ = json.Unmarshal(j, &a)
		_ = json.Unmarshal(raw, &b)
		if !reflect.DeepEqual(a, b) {
			return fmt.Errorf("%s, want %s", j, raw)
		}
	}
	return nil
}

// TestReadLlamaCppVocabs parses every vocabulary file llama.cpp ships
// (models/ggml-vocab-*.gguf, written by its converters): each parses and
// has a token list.
func TestReadLlamaCppVocabs(t *testing.T) {
	files := llamaVocabFiles(t)
	for _, p := range files {
		f, err := gguf.Open(p)
		if err != nil {
			t.Errorf("%s: %v", filepath.Base(p), err)
			continue
		}
		toks, err := f.Lookup("tokenizer.ggml.tokens").Strings()
		if err != nil || len(toks) < 100 {
			t.Errorf("%s: %d tokens, %v", filepath.Base(p), len(toks), err)
		}
		_ = f.Close()
	}
}

func llamaVocabFiles(t *testing.T) []string {
	t.Helper()
	files, _ := filepath.Glob("../bench/llama.cpp/models/ggml-vocab-*.gguf")
	if len(files) == 0 {
		if os.Getenv("CFLOW_REQUIRE_LLAMA_SRC") == "1" {
			t.Fatal("bench/llama.cpp/models has no ggml-vocab-*.gguf (make llama-src)")
		}
		t.Skip("bench/llama.cpp absent (make llama-src)")
	}
	return files
}

// raw builds GGUF bytes field by field, independent of the package's
// writer, so each hostile case says exactly what is wrong.
type raw struct{ bytes.Buffer }

func (r *raw) u32(v uint32) *raw { _ = binary.Write(r, binary.LittleEndian, v); return r }
func (r *raw) u64(v uint64) *raw { _ = binary.Write(r, binary.LittleEndian, v); return r }
func (r *raw) str(s string) *raw { r.u64(uint64(len(s))); r.WriteString(s); return r }

func header(nt, nkv uint64) *raw {
	r := &raw{}
	r.WriteString("GGUF")
	return r.u32(3).u64(nt).u64(nkv)
}

func (r *raw) kvU32(k string, v uint32) *raw { return r.str(k).u32(4).u32(v) }

func (r *raw) tensor(name string, typ uint32, off uint64, dims ...uint64) *raw {
	r.str(name).u32(uint32(len(dims)))
	for _, d := range dims {
		r.u64(d)
	}
	return r.u32(typ).u64(off)
}

// pad aligns to 32 and appends n data bytes.
func (r *raw) data(n int) []byte {
	for r.Len()%32 != 0 {
		r.WriteByte(0)
	}
	r.Write(make([]byte, n))
	return r.Bytes()
}

// TestReadRefusesHostile: each malformed file is refused with a
// FormatError saying what is wrong, and nothing panics.
func TestReadRefusesHostile(t *testing.T) {
	cases := []struct {
		name string
		b    []byte
		want string
	}{
		{"magic", []byte("GGUX\x03\x00\x00\x00"), "not a GGUF file"},
		{"empty", nil, "magic: 4 bytes past the end"},
		{"v1", append([]byte("GGUF"), 1, 0, 0, 0), "v1 is not supported"},
		{"v4", append([]byte("GGUF"), 4, 0, 0, 0), "unsupported GGUF version 4"},
		{"big-endian", append([]byte("GGUF"), 0, 0, 0, 3), "big-endian"},
		{"kv count", header(0, 1<<40).Bytes(), "1099511627776 metadata entries cannot fit"},
		{"tensor count", header(1<<50, 0).Bytes(), "tensors cannot fit"},
		{"key length", header(0, 1).u64(1 << 62).u64(0).Bytes(), "runs past the end"},
		{"empty key", header(0, 1).str("").u32(4).u32(1).Bytes(), "empty key"},
		{"duplicate key", header(0, 2).kvU32("a", 1).kvU32("a", 2).Bytes(), `duplicate metadata key "a"`},
		{"value type", header(0, 1).str("a").u32(13).u32(0).Bytes(), "unknown value type 13"},
		{"array of arrays", header(0, 1).str("a").u32(9).u32(9).u64(1).Bytes(), "array of arrays"},
		{"array length", header(0, 1).str("a").u32(9).u32(4).u64(1 << 61).Bytes(), "array of 2305843009213693952 u32 runs past the end"},
		{"string array length", header(0, 1).str("a").u32(9).u32(8).u64(1 << 40).u64(0).Bytes(), "runs past the end"},
		{"bool byte", append(header(0, 1).str("a").u32(7).Bytes(), 2), "bool byte 2"},
		{"truncated value", header(0, 1).str("a").u32(10).u32(0).Bytes(), "8 bytes past the end"},
		{"alignment type", header(0, 1).str("general.alignment").u32(5).u32(64).Bytes(), "must be u32"},
		{"alignment 0", header(0, 1).kvU32("general.alignment", 0).Bytes(), "not a power of two"},
		{"alignment 48", header(0, 1).kvU32("general.alignment", 48).Bytes(), "not a power of two"},
		{"alignment past end", header(1, 1).kvU32("general.alignment", 1<<30).tensor("t", 0, 0, 8).Bytes(), "past the end of the"},
		{"dims", header(1, 0).tensor("t", 0, 0, 1, 1, 1, 1, 1).data(32), "5 dimensions"},
		{"negative dim", header(1, 0).tensor("t", 0, 0, 1<<63).data(32), "negative"},
		{"absurd dims", header(1, 0).tensor("t", 0, 0, 1<<32, 1<<32).data(32), "absurd dimensions"},
		{"huge tensor", header(1, 0).tensor("t", 0, 0, 1<<20, 1<<20).data(32), "larger than the"},
		{"ggml type", header(1, 0).tensor("t", 4, 0, 32).data(32), "unknown ggml type 4"},
		{"ggml type 99", header(1, 0).tensor("t", 99, 0, 32).data(32), "unknown ggml type 99"},
		{"block", header(1, 0).tensor("t", 8, 0, 31).data(64), "not whole Q8_0 blocks of 32"},
		{"name length", header(1, 0).tensor(strings.Repeat("x", 64), 0, 0, 1).data(32), "over ggml's 63"},
		{"duplicate tensor", header(2, 0).tensor("t", 0, 0, 8).tensor("t", 0, 32, 8).data(64), `duplicate tensor name "t"`},
		{"misaligned", header(1, 0).tensor("t", 0, 4, 8).data(64), "not a multiple of the alignment 32"},
		{"overlap", header(2, 0).tensor("a", 0, 0, 16).tensor("b", 0, 32, 8).data(96), "overlaps tensor a"},
		{"past end", header(1, 0).tensor("t", 0, 0, 9).data(32), "runs past the end of the file"},
		{"offset past end", header(1, 0).tensor("t", 0, 1<<62, 1).data(32), "runs past the end of the file"},
	}
	for _, c := range cases {
		_, err := gguf.Parse(c.b)
		var fe *gguf.FormatError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want a FormatError with %q", c.name, err, c.want)
		}
	}
	// A well-formed file from the same builder parses, so the cases above
	// fail for their fault alone.
	ok := header(2, 1).kvU32("general.alignment", 32).tensor("a", 8, 0, 32, 2).tensor("b", 0, 96, 8).data(128)
	if f, err := gguf.Parse(ok); err != nil || len(f.Tensors) != 2 || f.Tensors[0].Size != 68 {
		t.Errorf("the well-formed file: %v", err)
	}
}

// TestReadRefusesTruncated cuts reader.gguf at every byte before its last
// tensor's end: every prefix is refused with a FormatError.
func TestReadRefusesTruncated(t *testing.T) {
	b := mustRead(t, "testdata/reader.gguf")
	f, err := gguf.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	end := int64(0)
	for _, ti := range f.Tensors {
		end = max(end, f.DataOffset+int64(ti.Offset)+ti.Size)
	}
	for n := int64(0); n < end; n++ {
		_, err := gguf.Parse(b[:n])
		var fe *gguf.FormatError
		if !errors.As(err, &fe) {
			t.Fatalf("cut at %d of %d: %v, want a FormatError", n, end, err)
		}
	}
}

// FuzzParse: no input panics; whatever parses has every tensor inside the
// file and readable, and every entry's typed accessors answer.
func FuzzParse(f *testing.F) {
	f.Add(mustReadF(f, "testdata/reader.gguf"))
	f.Add(header(2, 1).kvU32("general.alignment", 32).tensor("a", 8, 0, 32, 2).tensor("b", 0, 96, 8).data(128))
	f.Add(header(0, 1).str("a").u32(9).u32(8).u64(2).str("x").str("yz").Bytes())
	f.Fuzz(func(t *testing.T, b []byte) {
		g, err := gguf.Parse(b)
		if err != nil {
			var fe *gguf.FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("not a FormatError: %v", err)
			}
			return
		}
		for i := range g.Tensors {
			ti := &g.Tensors[i]
			d, err := g.TensorData(ti)
			if err != nil || int64(len(d)) != ti.Size || g.DataOffset+int64(ti.Offset)+ti.Size > int64(len(b)) {
				t.Fatalf("tensor %s: %d bytes, %v", ti.Name, len(d), err)
			}
		}
		for i := range g.KVs {
			kv := &g.KVs[i]
			_, _ = kv.String()
			_, _ = kv.Int()
			_, _ = kv.Ints()
			_, _ = kv.Strings()
			_, _ = kv.Float32s()
			_ = kv.Value.TypeName()
		}
	})
}

func mustReadF(f *testing.F, path string) []byte {
	b, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	return b
}
