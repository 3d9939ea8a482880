package engine

import (
	"math/rand"
	"path/filepath"
	"testing"

	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/cflowfmt/fmttest"
	"github.com/cflow-dev/cflow/quant"
	"github.com/cflow-dev/cflow/vflowfmt"
)

// writeBoth writes one random model (the formats' generator) as .cflow and
// .vflow and opens both with the real readers.
func writeBoth(t *testing.T, seed int64) (cf, vf *cflowfmt.Model) {
	t.Helper()
	s := fmttest.Random(rand.New(rand.NewSource(seed)), quant.Q8_0)
	dir := t.TempDir()
	cp, vp := filepath.Join(dir, "m.cflow"), filepath.Join(dir, "m.vflow")
	if _, err := fmttest.WriteCflow(cp, s, nil); err != nil {
		t.Fatal(err)
	}
	w, err := vflowfmt.Create(vp, s.Header, s.Meta)
	if err != nil {
		t.Fatal(err)
	}
	var gs []fmttest.Group
	for _, g := range w.Groups() {
		gs = append(gs, fmttest.Group{First: g.First, Count: g.Count})
	}
	if _, err := fmttest.WriteVflow(w, gs, s, nil); err != nil {
		t.Fatal(err)
	}
	for i, p := range []string{cp, vp} {
		m, err := vflowfmt.OpenModel(p)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		if i == 0 {
			cf = m
		} else {
			vf = m
		}
	}
	return cf, vf
}

// TestCflowVflowAgree: the same model read from either format decodes to
// bit-identical logits, and on the stage-major .vflow every non-expert tile
// is read exactly once per token (DelayedSum's zero-input FFNs are skipped:
// their tiles are never read).
func TestCflowVflowAgree(t *testing.T) {
	for seed := int64(1); seed <= 6; seed++ {
		cf, vf := writeBoth(t, seed)
		ec, ev := newEngine(t, cf, 2), newEngine(t, vf, 1) // the hook below is not goroutine-safe
		reads := map[int64]int{}
		ev.readHook = func(off int64, m archspec.MatrixID) {
			if !m.IsExpert() {
				reads[off]++
			}
		}
		want := map[int64]bool{}
		add := func(ts []cflowfmt.MappedTile) {
			for i := range ts {
				want[ts[i].Offset] = true
			}
		}
		for l, ly := range vf.Layers {
			add(ly.QKV)
			add(ly.O)
			add(ly.Router)
			if !(vf.Header.CombineStyle == archspec.DelayedSum && l < int(vf.Header.DenseDelay)) {
				add(ly.GateUp)
				add(ly.Down)
			}
		}
		lm := vf.LMHead
		if vf.Header.Has(cflowfmt.FlagTiedEmbed) {
			lm = vf.Embed
		}
		add(lm)
		for i := 0; i < 3; i++ {
			tok := (i * 7) % int(cf.Header.VocabSize)
			a, err := ec.Step(tok)
			if err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			clear(reads)
			b, err := ev.Step(tok)
			if err != nil {
				t.Fatal(err)
			}
			for j := range a {
				if a[j] != b[j] {
					t.Fatalf("seed %d step %d: logit %d .cflow %v, .vflow %v", seed, i, j, a[j], b[j])
				}
			}
			for off := range want {
				n := reads[off]
				if vf.Header.Has(cflowfmt.FlagTiedEmbed) && isEmbedRowTile(ev, tok, off) {
					n-- // the lookup also touched this tile
				}
				if n != 1 {
					t.Fatalf("seed %d step %d: tile at %d read %d times", seed, i, off, reads[off])
				}
			}
			for off := range reads {
				if !want[off] && !isEmbedRowTile(ev, tok, off) {
					t.Fatalf("seed %d: unexpected read at %d", seed, off)
				}
			}
		}
	}
}

func isEmbedRowTile(e *Engine, tok int, off int64) bool {
	for _, s := range e.embed {
		for _, t := range s.tiles {
			if t.Offset == off && tok >= int(t.RowOffset) && tok < int(t.RowOffset)+t.Tile.Rows {
				return true
			}
		}
	}
	return false
}
