package convert

import (
	"context"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/quant"
)

// stories is the vendored llama2.c model (models/README.md); tests run in convert/.
const stories = "../models/stories260K.bin"

// TestStories260K converts the llama2.c checkpoint in every quant type and
// checks the q/k permutation and tying against floats read straight from
// the .bin at offsets computed here from the llama2.c layout.
func TestStories260K(t *testing.T) {
	raw, err := os.ReadFile(stories)
	if err != nil {
		t.Fatal("the vendored model is missing (models/stories260K.bin):", err)
	}
	hdr := make([]int, 7)
	for i := range hdr {
		hdr[i] = int(int32(binary.LittleEndian.Uint32(raw[4*i:])))
	}
	d, L, H, kvh, V := hdr[0], hdr[2], hdr[3], hdr[4], hdr[5]
	hd := d / H
	f32 := func(i int) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(raw[28+4*i:])) }
	// Offsets (in floats) of layer 1's wq and wk.
	base := V*d + L*d
	wq := base + 1*d*d
	wk := base + L*d*d + 1*d*kvh*hd
	for _, q := range quants {
		out := filepath.Join(t.TempDir(), "s."+q.String()+".cflow")
		res, err := Convert(context.Background(), stories, out, Options{Quant: q})
		if err != nil {
			t.Fatal(err)
		}
		h := res.Header
		if h.HiddenSize != 64 || h.NumLayers != 5 || h.NumHeads != 8 || h.NumKVHeads != 4 || h.VocabSize != 512 ||
			h.IntermediateSize != 172 || !h.Has(cflowfmt.FlagTiedEmbed) || h.CombineStyle != archspec.PreNorm {
			t.Fatalf("header %+v", h)
		}
		f := openChecked(t, out)
		if eps := f.Meta.F32(cflowfmt.KeyRMSEps, 0); eps != 1e-5 {
			t.Fatalf("rms eps %v", eps)
		}
		if f.Model.LMHead != nil {
			t.Fatal("tied model has LM head tiles")
		}
		tiles := walk(t, f)
		checkPlanOrder(t, f, tiles)
		vout := filepath.Join(t.TempDir(), "s."+q.String()+".vflow")
		if _, err := Convert(context.Background(), stories, vout, Options{Quant: q}); err != nil {
			t.Fatal(err)
		}
		sameModel(t, f.Model, openCheckedV(t, vout).Model)
		if q != quant.F32 {
			continue
		}
		// F32 tiles hold the weights exactly: destination row j of head h
		// is source row 2j (j < hd/2) or 2(j-hd/2)+1.
		for _, lt := range tiles {
			th := lt.t.TileHeader
			if th.Layer != 1 || (th.Matrix != archspec.MatQ && th.Matrix != archspec.MatK) {
				continue
			}
			src := wq
			if th.Matrix == archspec.MatK {
				src = wk
			}
			for r := 0; r < int(th.Rows); r++ {
				dst := int(th.RowOffset) + r
				head, j := dst/hd, dst%hd
				sr := head*hd + 2*j
				if j >= hd/2 {
					sr = head*hd + 2*(j-hd/2) + 1
				}
				for c := 0; c < int(th.Cols); c++ {
					if got, want := lt.t.Weight(r, c), f32(src+sr*d+int(th.ColOffset)+c); got != want {
						t.Fatalf("%s row %d col %d = %v, want source row %d value %v", th.Matrix, dst, c, got, sr, want)
					}
				}
			}
		}
	}
}

func TestLlama2cTruncatedRefused(t *testing.T) {
	raw, err := os.ReadFile(stories)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "cut.bin")
	os.WriteFile(p, raw[:len(raw)-4], 0o644)
	convertErr(t, p, Options{}, p, "needs")
	os.WriteFile(p, raw[:20], 0o644)
	convertErr(t, p, Options{}, p, "shorter than the 28-byte")
}

// FuzzLlama2cHeader: any bytes either parse consistently with their size
// or fail with an error; never a panic.
func FuzzLlama2cHeader(f *testing.F) {
	if raw, err := os.ReadFile(stories); err == nil {
		f.Add(raw[:28])
	}
	f.Add([]byte{64, 0, 0, 0, 172, 0, 0, 0, 5, 0, 0, 0, 8, 0, 0, 0, 4, 0, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := parseLlama2cHeader("fuzz.bin", b)
		if err != nil {
			return
		}
		if int64(len(b)-28) != 4*llama2cFloats(h) {
			t.Fatalf("accepted %d bytes for %+v", len(b), h)
		}
	})
}
