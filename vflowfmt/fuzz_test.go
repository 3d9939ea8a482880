package vflowfmt_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/cflowfmt/fmttest"
	"github.com/cflow-dev/cflow/quant"
	"github.com/cflow-dev/cflow/vflowfmt"
)

// FuzzOpen: arbitrary bytes through the .vflow reader, lazy experts and
// Check give a FormatError or a model, never a panic.
func FuzzOpen(f *testing.F) {
	for _, s := range []*fmttest.Spec{
		fmttest.Tiny(quant.F32, false, false),
		fmttest.Tiny(quant.Q4_0, true, false),
		fmttest.Tiny(quant.Q8_0, false, true),
	} {
		path := filepath.Join(f.TempDir(), "seed.vflow")
		write(f, path, s, nil)
		b, _ := os.ReadFile(path)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := vflowfmt.OpenBytes(b, "fuzz.vflow")
		var fe *cflowfmt.FormatError
		if err != nil {
			if !errors.As(err, &fe) {
				t.Fatalf("error %v is not a FormatError", err)
			}
			return
		}
		for l := range file.Model.Layers {
			for e := range file.Model.Layers[l].Experts {
				file.Model.ExpertTiles(l, e)
			}
		}
		if err := file.Check(); err != nil && !errors.As(err, &fe) {
			t.Fatalf("check error %v is not a FormatError", err)
		}
	})
}

// FuzzHeader: the 64-byte header parser alone.
func FuzzHeader(f *testing.F) {
	path := filepath.Join(f.TempDir(), "seed.vflow")
	write(f, path, fmttest.Tiny(quant.Q4_0, true, true), nil)
	b, _ := os.ReadFile(path)
	f.Add(b[:vflowfmt.HeaderSize])
	f.Fuzz(func(t *testing.T, b []byte) {
		var h vflowfmt.Header
		if err := h.UnmarshalBinary(b); err != nil {
			var fe *cflowfmt.FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v is not a FormatError", err)
			}
			return
		}
		out, _ := h.MarshalBinary()
		if string(out) != string(b[:vflowfmt.HeaderSize]) {
			t.Fatal("header does not round-trip")
		}
	})
}
