package vflowfmt_test

import (
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/cflowfmt/fmttest"
	"github.com/cflow-dev/cflow/cflowfmt/tokmeta"
	"github.com/cflow-dev/cflow/engine/plan"
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
	// The red-team files of issue 19 as .vflow seeds: an iteration count
	// of 0xFFFFFFFF, delays of 255 on PreNorm, a partial rotary factor of 10.
	for _, c := range []struct {
		key string
		set func(md *cflowfmt.Metadata)
		val func(v []byte) []byte
	}{
		{cflowfmt.KeyBlockIterations, func(md *cflowfmt.Metadata) { md.SetU32(cflowfmt.KeyBlockIterations, 1) },
			func([]byte) []byte { return binary.LittleEndian.AppendUint32(nil, 0xFFFFFFFF) }},
		{cflowfmt.KeyRopePartial, func(md *cflowfmt.Metadata) { md.SetF32(cflowfmt.KeyRopePartial, 0.5) },
			func([]byte) []byte { return binary.LittleEndian.AppendUint32(nil, math.Float32bits(10)) }},
		{cflowfmt.KeyExecHeader, func(*cflowfmt.Metadata) {},
			func(h []byte) []byte { h = append([]byte(nil), h...); h[80] = 255; return h }},
	} {
		s := fmttest.Tiny(quant.F32, false, false)
		c.set(s.Meta)
		path := filepath.Join(f.TempDir(), "crafted.vflow")
		write(f, path, s, nil)
		b, _ := os.ReadFile(path)
		file, err := vflowfmt.OpenBytes(append([]byte(nil), b...), "x")
		if err != nil {
			f.Fatal(err)
		}
		var old []byte
		if c.key == cflowfmt.KeyExecHeader {
			old = file.Meta.Bytes(c.key)
		}
		if err := fmttest.PatchMeta(b, c.key, c.val(old)); err != nil {
			f.Fatal(err)
		}
		if _, err := vflowfmt.OpenBytes(b, "crafted.vflow"); err == nil {
			f.Fatalf("crafted %s accepted", c.key)
		}
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
		// One validation: what Open accepts, the plan accepts, and the
		// tokenizer loader (run's next step) handles without panicking.
		h := &file.Model.Header
		if _, err := plan.Build(plan.FromHeader(h, int(file.Meta.U32(cflowfmt.KeyBlockIterations, 1)))); err != nil {
			t.Fatalf("Open accepted a file the plan refuses: %v", err)
		}
		tokmeta.Load(file.Meta, int(h.VocabSize))
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
