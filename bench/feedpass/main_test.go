package main

import (
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/cflowfmt/fmttest"
	"github.com/cflow-dev/cflow/engine"
	"github.com/cflow-dev/cflow/quant"
)

// TestShapesFeedWhatTheySay: every shape feedpass times is the tick it is
// named after — B decode tokens go to B different sequences, each
// continuing its own history pass after pass, and a prompt goes whole to a
// fresh sequence — and each feed's logits are what Step gives that
// sequence's history alone on another engine (so the timed passes compute
// real decode steps, not a sequence overrun or refused), whatever prefix
// (-prefix) the decoding sequences start from.
func TestShapesFeedWhatTheySay(t *testing.T) {
	for _, held := range []int{4, 9} {
		t.Run(fmt.Sprintf("prefix %d", held), func(t *testing.T) { testShapes(t, held) })
	}
}

func testShapes(t *testing.T, held int) {
	m := tinyModel(t)
	e, err := engine.New(m, engine.Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ref, err := engine.New(m, engine.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	V := int(m.Header.VocabSize)
	want := map[string][2]int{ // decode feeds, prompt feeds
		"1 decode token": {1, 0}, "2 decode tokens": {2, 0}, "4 decode tokens": {4, 0}, "8 decode tokens": {8, 0},
		fmt.Sprintf("%d prompt tokens", promptLen): {0, 1}, fmt.Sprintf("4 decode + %d prompt", promptLen): {4, 1},
	}
	shapes := tickShapes(e, held)
	if len(shapes) != len(want) {
		t.Fatalf("%d shapes, want %d", len(shapes), len(want))
	}
	for _, sh := range shapes {
		if err := sh.reset(); err != nil {
			t.Fatal(err)
		}
		hist := map[*engine.Sequence][]int{}
		for pass := range 3 {
			fs := sh.feeds()
			var got [2]int
			for _, f := range fs {
				switch {
				case len(f.Toks) == 1:
					got[0]++
					if hist[f.Seq] == nil {
						hist[f.Seq] = prefix(V, held)
					}
					hist[f.Seq] = append(hist[f.Seq], f.Toks[0])
				case len(f.Toks) == promptLen:
					got[1]++
					hist[f.Seq] = append([]int(nil), f.Toks...)
				default:
					t.Fatalf("%s: a feed of %d tokens", sh.name, len(f.Toks))
				}
			}
			if got != want[sh.name] {
				t.Fatalf("%s: %d decode and %d prompt feeds, want %v", sh.name, got[0], got[1], want[sh.name])
			}
			out, err := e.StepFeeds(fs)
			if err != nil {
				t.Fatalf("%s pass %d: %v", sh.name, pass, err)
			}
			for i, f := range fs {
				ref.Reset()
				var l []float32
				for _, tok := range hist[f.Seq] {
					if l, err = ref.Step(tok); err != nil {
						t.Fatal(err)
					}
				}
				if len(out[i]) != V {
					t.Fatalf("%s pass %d feed %d: %d logits, want %d", sh.name, pass, i, len(out[i]), V)
				}
				for k := range l {
					if math.Float32bits(l[k]) != math.Float32bits(out[i][k]) {
						t.Fatalf("%s pass %d feed %d (history %v): logit %d = %g, Step alone %g", sh.name, pass, i, hist[f.Seq], k, out[i][k], l[k])
					}
				}
			}
		}
	}
}

// TestMeasure: milliseconds per pass from the clock, one per round, and
// reset before every shape's passes.
func TestMeasure(t *testing.T) {
	m := tinyModel(t)
	e, err := engine.New(m, engine.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	shapes := tickShapes(e, 4)[:2]
	resets := 0
	for k := range shapes {
		reset := shapes[k].reset
		shapes[k].reset = func() error { resets++; return reset() }
	}
	now := 0.0
	ms, err := measure(e, shapes, 3, 4, func() float64 { now += 0.5; return now })
	if err != nil {
		t.Fatal(err)
	}
	if resets != 6 || len(ms) != 2 {
		t.Fatalf("%d resets, %d shapes measured; want 6 and 2", resets, len(ms))
	}
	for _, r := range ms {
		if len(r) != 3 || r[0] != 125 || r[2] != 125 { // 0.5 s between the clock reads ÷ 4 passes
			t.Fatalf("ms per pass %v, want 3 rounds of 125", r)
		}
	}
}

// tinyModel writes a small random dense llama model (Q4_0) with room for
// the prefix, three passes of decode tokens and the prompt.
func tinyModel(t *testing.T) *cflowfmt.Model {
	t.Helper()
	h := cflowfmt.Header{Version: cflowfmt.Version, HiddenSize: 96, IntermediateSize: 200, VocabSize: 600,
		NumLayers: 2, MaxSeqLen: 64, NumHeads: 4, NumKVHeads: 2, HeadDim: 24, TileRows: 64, TileCols: 96,
		QuantType: quant.Q4_0, CombineStyle: archspec.PreNorm}
	md := cflowfmt.NewMetadata()
	md.SetF32(cflowfmt.KeyRMSEps, 1e-5)
	path := filepath.Join(t.TempDir(), "m.cflow")
	if _, err := fmttest.WriteCflow(path, &fmttest.Spec{Header: h, Meta: md, Seed: 5}, nil); err != nil {
		t.Fatal(err)
	}
	f, err := cflowfmt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f.Model
}
