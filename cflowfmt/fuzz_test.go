package cflowfmt_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/cflowfmt/fmttest"
	"github.com/cflow-dev/cflow/cflowfmt/tokmeta"
	"github.com/cflow-dev/cflow/engine/plan"
	"github.com/cflow-dev/cflow/quant"
)

// seedFiles are real files from the writer, a few KB each so the fuzzer
// runs fast: a dense F32 model, a Q4_0 MoE model, a Q8_0 mixed-attention
// model with tied embeddings.
func seedFiles(f *testing.F) [][]byte {
	var out [][]byte
	for _, s := range []*fmttest.Spec{
		fmttest.Tiny(quant.F32, false, false),
		fmttest.Tiny(quant.Q4_0, true, false),
		fmttest.Tiny(quant.Q8_0, false, true),
	} {
		path := filepath.Join(f.TempDir(), "seed.cflow")
		if _, err := fmttest.WriteCflow(path, s, nil); err != nil {
			f.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, b)
	}
	crafted, err := fmttest.CraftedFiles(f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	for _, c := range crafted {
		out = append(out, c.Data)
	}
	return out
}

func mustFormatError(t *testing.T, err error) {
	var fe *cflowfmt.FormatError
	if err != nil && !errors.As(err, &fe) {
		t.Fatalf("error %v is not a FormatError", err)
	}
}

// FuzzOpen: arbitrary bytes through the full reader (header, metadata,
// tables, tiles, lazy experts and Check) give a FormatError or a model,
// never a panic or an out-of-range read.
func FuzzOpen(f *testing.F) {
	for _, b := range seedFiles(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := cflowfmt.OpenBytes(b, "fuzz.cflow")
		mustFormatError(t, err)
		if err != nil {
			return
		}
		for l := range file.Model.Layers {
			for e := range file.Model.Layers[l].Experts {
				file.Model.ExpertTiles(l, e)
			}
		}
		mustFormatError(t, file.Check())
		// One validation: whatever Open accepts, the execution plan and
		// the tokenizer loader (what run builds next) handle without
		// panicking, and the plan never refuses it.
		h := &file.Header
		if _, err := plan.Build(plan.FromHeader(h, int(file.Meta.U32(cflowfmt.KeyBlockIterations, 1)))); err != nil {
			t.Fatalf("Open accepted a file the plan refuses: %v", err)
		}
		tokmeta.Load(file.Meta, int(h.VocabSize))
	})
}

// FuzzHeader: the 88-byte header parser; a header that parses must
// re-encode to the same bytes (reserved bytes aside).
func FuzzHeader(f *testing.F) {
	for _, b := range seedFiles(f) {
		f.Add(b[:cflowfmt.HeaderSize])
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var h cflowfmt.Header
		err := h.UnmarshalBinary(b)
		mustFormatError(t, err)
		if err != nil {
			return
		}
		out, _ := h.MarshalBinary()
		in := append([]byte(nil), b[:cflowfmt.HeaderSize]...)
		in[57], in[58], in[59] = 0, 0, 0
		if string(out) != string(in) {
			t.Fatalf("header does not round-trip")
		}
	})
}

// FuzzMetadata: the metadata section parser; a section that parses must
// re-encode to the same bytes (keys are sorted and unique).
func FuzzMetadata(f *testing.F) {
	for _, b := range seedFiles(f) {
		var h cflowfmt.Header
		h.UnmarshalBinary(b)
		f.Add(b[h.MetadataOffset : h.MetadataOffset+uint64(h.MetadataLength)])
	}
	f.Add([]byte("CFMD\x01\x00\x00\x00\x00\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		md, err := cflowfmt.ParseMetadata(b, 88)
		mustFormatError(t, err)
		if err != nil {
			return
		}
		for _, k := range md.Keys() {
			md.U32(k, 0)
			md.F32(k, 0)
			md.U32s(k)
			md.F32s(k)
			md.Bytes(k)
		}
		if out, _ := md.MarshalBinary(); len(out) != len(b) {
			t.Fatalf("metadata of %d bytes re-encodes to %d", len(b), len(out))
		}
	})
}
