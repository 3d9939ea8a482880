package vflowfmt_test

import (
	"errors"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/cflowfmt/fmttest"
	"github.com/cflow-dev/cflow/quant"
	"github.com/cflow-dev/cflow/vflowfmt"
)

func write(t testing.TB, path string, s *fmttest.Spec, r *rand.Rand) map[int64]fmttest.Tile {
	t.Helper()
	w, err := vflowfmt.Create(path, s.Header, s.Meta)
	if err != nil {
		t.Fatal(err)
	}
	var gs []fmttest.Group
	for _, g := range w.Groups() {
		gs = append(gs, fmttest.Group{First: g.First, Count: g.Count})
	}
	at, err := fmttest.WriteVflow(w, gs, s, r)
	if err != nil {
		t.Fatal(err)
	}
	return at
}

func TestHeaderSizes(t *testing.T) {
	var h vflowfmt.Header
	b, _ := h.MarshalBinary()
	if len(b) != 64 || vflowfmt.GroupDescSize != 80 {
		t.Fatalf("VFlowHeader %d bytes, GroupDescriptor %d", len(b), vflowfmt.GroupDescSize)
	}
}

func TestComputeGroups(t *testing.T) {
	S, F := byte(archspec.LayerSliding), byte(archspec.LayerFull)
	type g = [3]int // first, count, kind
	cases := []struct {
		kinds []byte
		n     int
		want  []g
	}{
		{nil, 6, []g{{0, 6, 0}}},
		{[]byte{S, S, S}, 3, []g{{0, 3, 1}}},
		// Gemma's 5:1 pattern: a group per 5 sliding layers, one per full layer.
		{[]byte{S, S, S, S, S, F, S, S, S, S, S, F}, 12, []g{{0, 5, 1}, {5, 1, 0}, {6, 5, 1}, {11, 1, 0}}},
		{[]byte{F, F, S, S, F}, 5, []g{{0, 1, 0}, {1, 1, 0}, {2, 2, 1}, {4, 1, 0}}},
	}
	for _, c := range cases {
		var got []g
		for _, x := range vflowfmt.ComputeGroups(c.kinds, c.n) {
			got = append(got, g{x.First, x.Count, int(x.Kind)})
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("kinds %v: groups %v, want %v", c.kinds, got, c.want)
		}
	}
}

func TestRoundTripRandomModels(t *testing.T) {
	dir := t.TempDir()
	for seed := int64(1); seed <= 12; seed++ {
		r := rand.New(rand.NewSource(seed))
		s := fmttest.Random(r, []quant.Type{quant.F32, quant.Q4_0, quant.Q8_0}[seed%3])
		path := filepath.Join(dir, "m.vflow")
		written := write(t, path, s, r)
		f, err := vflowfmt.Open(path)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if err := fmttest.CompareModel(s, f.Model); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if f.Exec != f.Model.Header || f.Exec.HiddenSize != s.Header.HiddenSize || f.Exec.CombineStyle != s.Header.CombineStyle {
			t.Fatalf("seed %d: exec header %+v", seed, f.Exec)
		}
		want := vflowfmt.ComputeGroups(s.Meta.Bytes(cflowfmt.KeyLayerKinds), int(s.Header.NumLayers))
		if len(f.Groups) != len(want) {
			t.Fatalf("seed %d: %d groups, want %d", seed, len(f.Groups), len(want))
		}
		// Stage-major order: within a group every attention tile precedes
		// every dense tile, which precede the MoE tiles.
		for gi, g := range f.Groups {
			if g.First != want[gi].First || g.Count != want[gi].Count {
				t.Fatalf("group %d: %+v, want %+v", gi, g, want[gi])
			}
			for l := g.First; l < g.First+g.Count; l++ {
				st := f.Model.Layers[l].Streams
				for s := 0; s < vflowfmt.NumStages; s++ {
					if st[s].Length > 0 && (st[s].Offset < g.Stages[s].Offset || st[s].End() > g.Stages[s].End()) {
						t.Fatalf("layer %d %s bytes %v outside its group's stage %v", l, vflowfmt.StageName(s), st[s], g.Stages[s])
					}
				}
			}
		}
		n := 0
		err = f.Walk(func(_ cflowfmt.Loc, mt *cflowfmt.MappedTile) error {
			w, ok := written[mt.Offset]
			if !ok {
				t.Fatalf("tile at %d was not written there", mt.Offset)
			}
			if err := fmttest.SameTile(mt, w); err != nil {
				t.Fatal(err)
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
		// The expert index is O(1): entry (l, e) sits at a computed offset.
		b, _ := os.ReadFile(path)
		E := int(s.Header.NumExperts)
		for l := 0; l < int(s.Header.NumLayers) && E > 0; l++ {
			at := int64(f.Header.ExpertIndexOffset) + int64(l*E+E-1)*16
			if got := int64(le64(b[at:])); got != f.Experts[l][E-1].Offset {
				t.Fatalf("index entry (%d, %d) at %d holds %d, want %d", l, E-1, at, got, f.Experts[l][E-1].Offset)
			}
		}
		f.Close()
	}
}

func le64(b []byte) uint64 {
	var v uint64
	for i := 7; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	return v
}

func small(t testing.TB, seed int64) []byte {
	r := rand.New(rand.NewSource(seed))
	s := fmttest.Random(r, quant.Q4_0)
	path := filepath.Join(t.TempDir(), "m.vflow")
	write(t, path, s, nil)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func formatError(t *testing.T, err error, size int) *cflowfmt.FormatError {
	t.Helper()
	var fe *cflowfmt.FormatError
	if !errors.As(err, &fe) || fe.File != "x.vflow" || fe.Offset < 0 || fe.Offset > int64(size) {
		t.Fatalf("want a FormatError naming x.vflow and an offset within %d bytes, got %v", size, err)
	}
	return fe
}

func TestTruncatedAndFlipped(t *testing.T) {
	b := small(t, 9)
	for n := 0; n < len(b); n += 1 + len(b)/89 {
		if _, err := vflowfmt.OpenBytes(b[:n], "x.vflow"); err == nil {
			t.Fatalf("truncated to %d of %d bytes: accepted", n, len(b))
		} else {
			formatError(t, err, n)
		}
	}
	f, err := vflowfmt.OpenBytes(b, "ok")
	if err != nil {
		t.Fatal(err)
	}
	dataStart := int(f.Groups[0].Range.Offset)
	mdEnd := int(f.Header.MetadataOffset) + int(f.Header.MetadataLength)
	for at := 0; at < dataStart; at++ {
		if at >= vflowfmt.HeaderSize+200 && at < mdEnd && at%31 != 0 {
			continue // sample the metadata's bulk (tokenizer blob)
		}
		c := append([]byte(nil), b...)
		c[at] ^= 0x21
		g, err := vflowfmt.OpenBytes(c, "x.vflow")
		if err == nil {
			err = g.Check()
		}
		if err != nil {
			formatError(t, err, len(c))
		}
	}
	// A header field that disagrees with the execution header is named.
	c := append([]byte(nil), b...)
	c[12]++ // hidden_size
	_, err = vflowfmt.OpenBytes(c, "x.vflow")
	if fe := formatError(t, err, len(c)); fe.Offset != 12 {
		t.Fatalf("hidden size mismatch blamed offset %d, want 12", fe.Offset)
	}
	// A tile header flip in the streaming region is caught at that tile.
	first := f.Model.Layers[0].QKV[0].Offset
	c = append([]byte(nil), b...)
	c[first+2] = 42
	_, err = vflowfmt.OpenBytes(c, "x.vflow")
	if fe := formatError(t, err, len(c)); fe.Offset != first {
		t.Fatalf("bad matrix id blamed %d, want %d", fe.Offset, first)
	}
}

func TestWriterOrderAndAbort(t *testing.T) {
	r := rand.New(rand.NewSource(21))
	s := fmttest.Random(r, quant.Q8_0)
	dir := t.TempDir()
	path := filepath.Join(dir, "o.vflow")
	w, err := vflowfmt.Create(path, s.Header, s.Meta)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.BeginGroupStage(0, vflowfmt.StageDense); err != nil {
		t.Fatal(err)
	}
	if err := w.BeginGroupStage(0, vflowfmt.StageAttn); err == nil {
		t.Fatal("stages out of order accepted")
	}
	w.Abort()
	w, _ = vflowfmt.Create(path, s.Header, s.Meta)
	w.BeginVocab(cflowfmt.SlotEmbed)
	if err := w.BeginGroupStage(0, vflowfmt.StageAttn); err == nil {
		t.Fatal("a group stage after the vocabulary accepted")
	}
	if err := w.Close(); err == nil {
		t.Fatal("Close after a misuse succeeded")
	}
	w, _ = vflowfmt.Create(path, s.Header, s.Meta)
	w.BeginGroupStage(0, vflowfmt.StageAttn)
	x := s.Stream(0, cflowfmt.SlotDense)
	if len(x) > 0 {
		if err := w.WriteTile(x[len(x)-1].TH, &x[len(x)-1].T); err == nil {
			t.Fatal("a down tile in the attention stage accepted")
		}
	}
	if err := w.Close(); err == nil {
		t.Fatal("incomplete file closed")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("failed writes left %s", ents[0].Name())
	}
}

// TestOpenModelSniffs opens both formats through one entry point.
func TestOpenModelSniffs(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	s := fmttest.Random(r, quant.Q4_0)
	dir := t.TempDir()
	cp, vp := filepath.Join(dir, "a.bin"), filepath.Join(dir, "b.bin")
	if _, err := fmttest.WriteCflow(cp, s, nil); err != nil {
		t.Fatal(err)
	}
	write(t, vp, s, nil)
	for _, p := range []string{cp, vp} {
		m, err := vflowfmt.OpenModel(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := fmttest.CompareModel(s, m); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		m.Close()
	}
	junk := filepath.Join(dir, "junk")
	os.WriteFile(junk, []byte("GGUF...."), 0o644)
	if _, err := vflowfmt.OpenModel(junk); err == nil {
		t.Fatal("unknown magic accepted")
	}
}
