package cflowfmt_test

import (
	"encoding/binary"
	"errors"
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/cflowfmt/fmttest"
	"github.com/cflow-dev/cflow/quant"
)

var quants = []quant.Type{quant.F32, quant.Q4_0, quant.Q8_0}

func sameTile(t *testing.T, where string, got *cflowfmt.MappedTile, want fmttest.Tile) {
	t.Helper()
	if err := fmttest.SameTile(got, want); err != nil {
		t.Fatalf("%s: %v", where, err)
	}
}

func checkModel(t *testing.T, s *fmttest.Spec, m *cflowfmt.Model) {
	t.Helper()
	if err := fmttest.CompareModel(s, m); err != nil {
		t.Fatal(err)
	}
}

func TestRoundTripRandomModels(t *testing.T) {
	dir := t.TempDir()
	for seed := int64(1); seed <= 12; seed++ {
		q := quants[seed%3]
		r := rand.New(rand.NewSource(seed))
		s := fmttest.Random(r, q)
		path := filepath.Join(dir, "m.cflow")
		written, err := fmttest.WriteCflow(path, s, r)
		if err != nil {
			t.Fatalf("seed %d: write: %v", seed, err)
		}
		f, err := cflowfmt.Open(path)
		if err != nil {
			t.Fatalf("seed %d: open: %v", seed, err)
		}
		checkModel(t, s, f.Model)
		n := 0
		err = f.Walk(func(loc cflowfmt.Loc, mt *cflowfmt.MappedTile) error {
			w, ok := written[mt.Offset]
			if !ok {
				t.Fatalf("seed %d: tile at %d was never written there", seed, mt.Offset)
			}
			sameTile(t, "walk", mt, w)
			if mt.Offset%cflowfmt.TileAlign != 0 {
				t.Fatalf("tile at unaligned offset %d", mt.Offset)
			}
			n++
			return nil
		})
		if err != nil || n != len(written) {
			t.Fatalf("seed %d: walk saw %d of %d tiles: %v", seed, n, len(written), err)
		}
		if err := f.Check(); err != nil {
			t.Fatalf("seed %d: check: %v", seed, err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		if err := f.Model.Close(); err != nil {
			t.Fatal("second Close:", err)
		}
	}
}

// writeSmall writes one fixed random model and returns its bytes.
func writeSmall(t testing.TB, seed int64, q quant.Type) (*fmttest.Spec, []byte) {
	r := rand.New(rand.NewSource(seed))
	s := fmttest.Random(r, q)
	path := filepath.Join(t.TempDir(), "m.cflow")
	if _, err := fmttest.WriteCflow(path, s, nil); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return s, b
}

func asFormatError(t *testing.T, err error, name string, size int) *cflowfmt.FormatError {
	t.Helper()
	var fe *cflowfmt.FormatError
	if !errors.As(err, &fe) {
		t.Fatalf("error %v (%T) is not a FormatError", err, err)
	}
	if fe.File != name || fe.Offset < 0 || fe.Offset > int64(size) {
		t.Fatalf("FormatError %q: file %q offset %d (file is %d bytes)", err, fe.File, fe.Offset, size)
	}
	return fe
}

func TestTruncatedFilesAreRejected(t *testing.T) {
	_, b := writeSmall(t, 7, quant.Q4_0)
	for n := 0; n < len(b); n += 1 + len(b)/97 {
		_, err := cflowfmt.OpenBytes(b[:n], "cut.cflow")
		if err == nil {
			t.Fatalf("truncated to %d of %d bytes: accepted", n, len(b))
		}
		asFormatError(t, err, "cut.cflow", n)
	}
	if _, err := cflowfmt.OpenBytes(append(b, 0), "long.cflow"); err == nil {
		t.Fatal("a trailing byte was accepted")
	}
}

// TestFlippedBytes flips every byte of the structural regions (header,
// metadata, tables, tile headers) one at a time; each flip must give a
// FormatError or a file that still opens and checks (a flip in a field with
// slack, such as max_seq_len), never a panic. Flips of tile headers must be
// caught, by Open or Check.
func TestFlippedBytes(t *testing.T) {
	_, b := writeSmall(t, 3, quant.Q8_0)
	f, err := cflowfmt.OpenBytes(b, "x")
	if err != nil {
		t.Fatal(err)
	}
	var tileHeaders []int64
	f.Walk(func(_ cflowfmt.Loc, mt *cflowfmt.MappedTile) error {
		tileHeaders = append(tileHeaders, mt.Offset)
		return nil
	})
	flip := func(at int64, bit byte) error {
		c := append([]byte(nil), b...)
		c[at] ^= bit
		g, err := cflowfmt.OpenBytes(c, "flip.cflow")
		if err == nil {
			err = g.Check()
		}
		if err != nil {
			asFormatError(t, err, "flip.cflow", len(c))
		}
		return err
	}
	for at := int64(0); at < cflowfmt.HeaderSize+int64(f.Header.MetadataLength); at++ {
		flip(at, 0x80)
	}
	for at := int64(f.Header.LayerTableOffset); at < int64(len(b)); at++ {
		flip(at, 0x10)
	}
	for _, off := range tileHeaders[:min(len(tileHeaders), 40)] {
		// matrix id, layer, rows and quant group are never slack.
		for _, at := range []int64{0, 2, 10, 14} {
			if flip(off+at, 0x04) == nil {
				t.Fatalf("flipping tile header byte %d of the tile at %d went unnoticed", at, off)
			}
		}
	}
}

func TestHeaderFlipNamesOffset(t *testing.T) {
	_, b := writeSmall(t, 5, quant.F32)
	c := append([]byte(nil), b...)
	c[56] = 9 // quant type
	_, err := cflowfmt.OpenBytes(c, "q.cflow")
	if fe := asFormatError(t, err, "q.cflow", len(c)); fe.Offset != 56 {
		t.Fatalf("bad quant type blamed offset %d, want 56", fe.Offset)
	}
	f, _ := cflowfmt.OpenBytes(b, "ok")
	first := f.Model.Layers[0].QKV[0].Offset
	c = append([]byte(nil), b...)
	c[first+2] = 99 // matrix id of layer 0's first Q tile
	_, err = cflowfmt.OpenBytes(c, "m.cflow")
	if fe := asFormatError(t, err, "m.cflow", len(c)); fe.Offset != first {
		t.Fatalf("bad matrix id blamed offset %d, want %d", fe.Offset, first)
	}
}

func TestFailedWritesLeaveNothing(t *testing.T) {
	r := rand.New(rand.NewSource(11))
	s := fmttest.Random(r, quant.Q4_0)
	dir := t.TempDir()
	path := filepath.Join(dir, "out.cflow")
	empty := func(what string) {
		t.Helper()
		ents, _ := os.ReadDir(dir)
		if len(ents) != 0 {
			t.Fatalf("%s: left %v behind", what, ents[0].Name())
		}
	}

	w, err := cflowfmt.Create(path, s.Header, s.Meta)
	if err != nil {
		t.Fatal(err)
	}
	w.BeginSlot(0, cflowfmt.SlotAttn)
	w.Abort()
	empty("Abort")

	// Close with required slots missing fails and removes the temp file.
	w, _ = cflowfmt.Create(path, s.Header, s.Meta)
	w.BeginSlot(0, cflowfmt.SlotAttn)
	for _, x := range s.Stream(0, cflowfmt.SlotAttn) {
		if err := w.WriteTile(x.TH, &x.T); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err == nil {
		t.Fatal("Close accepted a file with missing slots")
	}
	empty("incomplete Close")

	// A bad tile poisons the writer; Close then fails.
	w, _ = cflowfmt.Create(path, s.Header, s.Meta)
	w.BeginSlot(0, cflowfmt.SlotAttn)
	x := s.Stream(0, cflowfmt.SlotAttn)[len(s.Stream(0, cflowfmt.SlotAttn))-1] // an O tile
	bad := x.TH
	bad.QuantGroup = 0
	if err := w.WriteTile(bad, &x.T); err == nil {
		t.Fatal("quant_group 0 on a Q4_0 tile accepted")
	}
	if err := w.WriteTile(x.TH, &x.T); err == nil {
		t.Fatal("writer kept going after an error")
	}
	if err := w.Close(); err == nil {
		t.Fatal("Close succeeded after a failed write")
	}
	empty("poisoned Close")
}

func TestWriterRejectsMisuse(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	var s *fmttest.Spec
	for s == nil || s.Header.NumExperts == 0 {
		s = fmttest.Random(r, quant.Q8_0)
	}
	path := filepath.Join(t.TempDir(), "x.cflow")
	o := s.Stream(0, cflowfmt.SlotAttn)
	oTile := o[len(o)-1]
	cases := []struct {
		name string
		do   func(w *cflowfmt.Writer) error
	}{
		{"slot twice", func(w *cflowfmt.Writer) error {
			w.BeginSlot(0, cflowfmt.SlotAttn)
			w.EndSlot()
			return w.BeginSlot(0, cflowfmt.SlotAttn)
		}},
		{"expert table directly", func(w *cflowfmt.Writer) error { return w.BeginSlot(0, cflowfmt.SlotExpertTable) }},
		{"layer out of range", func(w *cflowfmt.Writer) error { return w.BeginSlot(int(s.Header.NumLayers)+1, 0) }},
		{"tile outside slot", func(w *cflowfmt.Writer) error { return w.WriteTile(oTile.TH, &oTile.T) }},
		{"wrong slot", func(w *cflowfmt.Writer) error {
			w.BeginSlot(0, cflowfmt.SlotDense)
			return w.WriteTile(oTile.TH, &oTile.T)
		}},
		{"wrong layer id", func(w *cflowfmt.Writer) error {
			w.BeginSlot(int(s.Header.NumLayers), cflowfmt.SlotEmbed)
			e := s.Stream(int(s.Header.NumLayers), cflowfmt.SlotEmbed)[0]
			e.TH.Layer = 0
			return w.WriteTile(e.TH, &e.T)
		}},
		{"expert id on a dense tile", func(w *cflowfmt.Writer) error {
			w.BeginSlot(0, cflowfmt.SlotAttn)
			th := oTile.TH
			th.Expert = 0
			return w.WriteTile(th, &oTile.T)
		}},
		{"expert before BeginExpert", func(w *cflowfmt.Writer) error {
			w.BeginSlot(0, cflowfmt.SlotExpertBank)
			x := s.Expert(0, 0)[0]
			return w.WriteTile(x.TH, &x.T)
		}},
		{"BeginExpert outside bank", func(w *cflowfmt.Writer) error {
			w.BeginSlot(0, cflowfmt.SlotMoE)
			return w.BeginExpert(0)
		}},
		{"missing expert", func(w *cflowfmt.Writer) error {
			w.BeginSlot(0, cflowfmt.SlotExpertBank)
			w.BeginExpert(0)
			for _, x := range s.Expert(0, 0) {
				w.WriteTile(x.TH, &x.T)
			}
			return w.EndSlot()
		}},
		{"tile type mismatch", func(w *cflowfmt.Writer) error {
			w.BeginSlot(0, cflowfmt.SlotAttn)
			tt := quant.Encode(quant.Q4_0, make([]float32, int(oTile.TH.Rows)*int(oTile.TH.Cols)), int(oTile.TH.Rows), int(oTile.TH.Cols), int(oTile.TH.Cols))
			return w.WriteTile(oTile.TH, &tt)
		}},
		{"norm of wrong length", func(w *cflowfmt.Writer) error {
			w.BeginSlot(0, cflowfmt.SlotAttn)
			return w.WriteNorm(0, archspec.MatAttnNorm, make([]float32, 3+s.Header.HiddenSize))
		}},
	}
	for _, c := range cases {
		w, err := cflowfmt.Create(path, s.Header, s.Meta)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.do(w); err == nil {
			t.Errorf("%s: accepted", c.name)
		}
		w.Abort()
	}
	wide := s.Header
	wide.HiddenSize = cflowfmt.MaxInputWidth + 32
	if _, err := cflowfmt.Create(path, wide, nil); err == nil {
		t.Error("Create accepted a hidden size col_offset cannot address")
	}
}

// TestWriteNormMatchesTiles pins WriteNorm's tiling: 1-row F32 tiles of
// TileCols columns, read back as the same vector.
func TestWriteNormMatchesTiles(t *testing.T) {
	s := fmttest.Random(rand.New(rand.NewSource(4)), quant.Q4_0)
	path := filepath.Join(t.TempDir(), "n.cflow")
	w, err := cflowfmt.Create(path, s.Header, s.Meta)
	if err != nil {
		t.Fatal(err)
	}
	L := int(s.Header.NumLayers)
	for l := 0; l <= L; l++ {
		for _, sl := range []int{0, 1, 2} {
			w.BeginSlot(l, sl)
			for _, x := range s.Stream(l, sl) {
				if x.TH.Matrix.IsNorm() {
					if x.TH.ColOffset == 0 {
						w.WriteNorm(l, x.TH.Matrix, s.Norm(l, x.TH.Matrix))
					}
					continue
				}
				w.WriteTile(x.TH, &x.T)
			}
			w.EndSlot()
		}
		if l < L && s.Header.NumExperts > 0 {
			w.BeginSlot(l, cflowfmt.SlotExpertBank)
			for e := 0; e < int(s.Header.NumExperts); e++ {
				w.BeginExpert(e)
				for _, x := range s.Expert(l, e) {
					w.WriteTile(x.TH, &x.T)
				}
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := cflowfmt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	checkModel(t, s, f.Model)
}

// TestHugeClaimedGeometry: a header claiming a 4M-token vocabulary over a
// few-KB file opens (its tiles lie inside the claimed matrix) but Check
// must refuse it quickly, without allocating for the claimed matrix; a
// head geometry too wide for col_offset is refused at Open.
func TestHugeClaimedGeometry(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.cflow")
	if _, err := fmttest.WriteCflow(path, fmttest.Tiny(quant.Q4_0, true, false), nil); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	c := append([]byte(nil), b...)
	binary.LittleEndian.PutUint32(c[20:], 1<<22)
	f, err := cflowfmt.OpenBytes(c, "v.cflow")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Check(); err == nil {
		t.Fatal("Check accepted an embedding covering 9 of 4M rows")
	}
	c = append([]byte(nil), b...)
	binary.LittleEndian.PutUint16(c[32:], 2) // num_heads
	binary.LittleEndian.PutUint16(c[36:], 65534)
	_, err = cflowfmt.OpenBytes(c, "h.cflow")
	if fe := asFormatError(t, err, "h.cflow", len(c)); fe.Offset != 32 {
		t.Fatalf("too-wide attention blamed offset %d, want 32", fe.Offset)
	}
}
