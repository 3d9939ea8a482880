package cflowfmt_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/cflowfmt/fmttest"
	"github.com/cflow-dev/cflow/quant"
)

// TestCraftedFilesRefused: each red-team reproduction of issue 19 (the
// iteration count 0xFFFFFFFF, delays of 255 on PreNorm, a partial rotary
// factor of 10, NaN/Inf scales and values, a flipped weight bit) is refused
// by Open or by Check, with an error naming what is wrong — where before
// inspect --check passed them and run died or printed garbage.
func TestCraftedFilesRefused(t *testing.T) {
	files, err := fmttest.CraftedFiles(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"block_iterations_0xffffffff": "block_iterations",
		"prenorm_dense_delay_255":     "dense_delay 255",
		"partial_rotary_factor_10":    "partial_factor 10",
		"q4_nan_scale":                "non-finite scale NaN",
		"q8_inf_scale":                "non-finite scale +Inf",
		"f32_nan_weight":              "non-finite value NaN",
		"weight_bit_flip":             "weight checksum",
	}
	for _, c := range files {
		t.Run(c.Name, func(t *testing.T) {
			f, err := cflowfmt.OpenBytes(c.Data, c.Name)
			if err == nil {
				err = f.Check()
			}
			if err == nil {
				t.Fatal("accepted")
			}
			mustFormatError(t, err)
			if !strings.Contains(err.Error(), want[c.Name]) {
				t.Fatalf("error %q does not say %q", err, want[c.Name])
			}
		})
	}
	if len(files) != len(want) {
		t.Fatalf("%d crafted files, %d expectations", len(files), len(want))
	}
}

// TestChecksumsWrittenAndOptional: the writer stores one checksum per layer
// plus the vocabulary, Check verifies them, and a file without the table
// (written before it existed; simulated by renaming the key) still opens
// and checks.
func TestChecksumsWrittenAndOptional(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.cflow")
	s := fmttest.Tiny(quant.Q4_0, true, false)
	if _, err := fmttest.WriteCflow(path, s, nil); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Meta.Type(cflowfmt.KeyLayerChecksums); ok {
		t.Fatal("Create changed the caller's metadata")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := cflowfmt.OpenBytes(b, "m.cflow")
	if err != nil {
		t.Fatal(err)
	}
	sums, ok := cflowfmt.StoredSums(f.Meta)
	if !ok || len(sums) != int(s.Header.NumLayers)+1 {
		t.Fatalf("stored sums %v ok=%v", sums, ok)
	}
	for l, v := range sums {
		if v == 0 {
			t.Fatalf("layer %d checksum not back-patched", l)
		}
	}
	if err := f.Check(); err != nil {
		t.Fatal(err)
	}
	old := bytes.Replace(b, []byte(cflowfmt.KeyLayerChecksums), []byte(cflowfmt.KeyLayerChecksums[:len(cflowfmt.KeyLayerChecksums)-1]+"X"), 1)
	f, err = cflowfmt.OpenBytes(old, "old.cflow")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := cflowfmt.StoredSums(f.Meta); ok {
		t.Fatal("renamed key still read as checksums")
	}
	if err := f.Check(); err != nil {
		t.Fatalf("file without checksums: %v", err)
	}
}

// TestCheckMetadataRanges: out-of-range values of every key the runtime
// reads are refused by the shared validation (writers and readers both).
func TestCheckMetadataRanges(t *testing.T) {
	for _, c := range []struct {
		name string
		set  func(md *cflowfmt.Metadata)
	}{
		{"iterations 0", func(md *cflowfmt.Metadata) { md.SetU32(cflowfmt.KeyBlockIterations, 0) }},
		{"iterations 2049 × 2 layers", func(md *cflowfmt.Metadata) { md.SetU32(cflowfmt.KeyBlockIterations, 2049) }},
		{"merge 0", func(md *cflowfmt.Metadata) { md.SetU32(cflowfmt.KeyMergeInterval, 0) }},
		{"eps 0", func(md *cflowfmt.Metadata) { md.SetF32(cflowfmt.KeyRMSEps, 0) }},
		{"eps 10", func(md *cflowfmt.Metadata) { md.SetF32(cflowfmt.KeyRMSEps, 10) }},
		{"theta -1", func(md *cflowfmt.Metadata) { md.SetF32(cflowfmt.KeyRopeTheta, -1) }},
		{"partial 0", func(md *cflowfmt.Metadata) { md.SetF32(cflowfmt.KeyRopePartial, 0) }},
		{"eps as u32", func(md *cflowfmt.Metadata) { md.SetU32(cflowfmt.KeyRMSEps, 1) }},
		{"k_eq_v 2", func(md *cflowfmt.Metadata) { md.SetU32(cflowfmt.KeyKEqV, 2) }},
		{"numa 999 nodes", func(md *cflowfmt.Metadata) { md.SetBytes(cflowfmt.KeyNUMAPlan, []byte(`{"nodes":999}`)) }},
		{"checksums short", func(md *cflowfmt.Metadata) { md.SetBytes(cflowfmt.KeyLayerChecksums, make([]byte, 8)) }},
	} {
		s := fmttest.Tiny(quant.F32, false, false)
		c.set(s.Meta)
		if err := cflowfmt.CheckMetadata(&s.Header, s.Meta); err == nil {
			t.Errorf("%s: accepted", c.name)
		}
		s.Meta.SetU32(cflowfmt.KeyBlockIterations, 1) // sanity: the base is valid
	}
	s := fmttest.Tiny(quant.F32, false, false)
	s.Meta.SetU32(cflowfmt.KeyBlockIterations, 2048)
	if err := cflowfmt.CheckMetadata(&s.Header, s.Meta); err != nil {
		t.Fatalf("2 layers × 2048 iterations (4096 passes) refused: %v", err)
	}
}

// TestTruncatedWhileMapped (issue 19 item 6): a file truncated under an
// open reader makes Check return a FormatError naming the fault instead of
// the process dying of SIGBUS.
func TestTruncatedWhileMapped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.cflow")
	s := fmttest.Tiny(quant.F32, true, false)
	s.Header.VocabSize = 2000 // a few pages, so the file is mapped, not read
	if _, err := fmttest.WriteCflow(path, s, nil); err != nil {
		t.Fatal(err)
	}
	f, err := cflowfmt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Size < 3*4096 {
		t.Fatalf("file of %d bytes is too small to be mapped across pages", f.Size)
	}
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	err = f.Check()
	mustFormatError(t, err)
	if err == nil || !strings.Contains(err.Error(), "truncated or replaced while open") {
		t.Fatalf("want a fault error, got %v", err)
	}
	if _, err := f.Model.ExpertTiles(0, 1); err == nil {
		t.Fatal("lazy expert parse of a truncated mapping succeeded")
	}
}
