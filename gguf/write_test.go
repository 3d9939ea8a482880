package gguf_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/x448/float16"

	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/gguf"
	"github.com/cflow-dev/cflow/quant"
)

// src is one source matrix in HF order with the GGUF tensor it must become.
type src struct {
	rows, cols int
	w          []float32
	rope       bool // q/k: rows permuted to adjacent-pair order
	expert     int  // -1 outside expert banks
}

// fixture is an in-memory model built straight from tiles (no reader), plus
// the weights every tensor came from.
type fixture struct {
	m     *cflowfmt.Model
	src   map[string][]src // GGUF name → per-expert sources (one for 2-D)
	norms map[string][]float32
}

type geom struct {
	q                  quant.Type
	d, ffn, vocab, L   int
	heads, kv, hd      int
	experts, topK, eff int
	tied               bool
}

func randW(r *rand.Rand, n int) []float32 {
	w := make([]float32, n)
	for i := range w {
		w[i] = float32(r.NormFloat64())
	}
	return w
}

// tiles cuts w (rows×cols) into tr×tc tiles in stripe order, like the
// converter does.
func tiles(q quant.Type, id archspec.MatrixID, layer, expert int, w []float32, rows, cols, tr, tc int) []cflowfmt.MappedTile {
	var out []cflowfmt.MappedTile
	for r0 := 0; r0 < rows; r0 += tr {
		for c0 := 0; c0 < cols; c0 += tc {
			nr, nc := min(tr, rows-r0), min(tc, cols-c0)
			qt := cflowfmt.TileQuant(id, q)
			qg := uint16(32)
			if qt == quant.F32 {
				qg = 0
			}
			out = append(out, cflowfmt.MappedTile{
				TileHeader: cflowfmt.TileHeader{Layer: uint16(layer), Matrix: id, Expert: uint8(expert),
					RowOffset: uint32(r0), ColOffset: uint16(c0), Rows: uint16(nr), Cols: uint16(nc), QuantGroup: qg},
				Tile:   quant.Encode(qt, w[r0*cols+c0:], nr, nc, cols),
				Offset: int64(len(out)),
			})
		}
	}
	return out
}

func build(t *testing.T, g geom) *fixture {
	t.Helper()
	r := rand.New(rand.NewPCG(7, uint64(g.d)))
	h := cflowfmt.Header{Version: cflowfmt.Version, HiddenSize: uint32(g.d), IntermediateSize: uint32(g.ffn),
		VocabSize: uint32(g.vocab), NumLayers: uint32(g.L), MaxSeqLen: 64, NumHeads: uint16(g.heads),
		NumKVHeads: uint16(g.kv), HeadDim: uint16(g.hd), NumExperts: uint16(g.experts), TopK: uint16(g.topK),
		ExpertIntermediateSize: uint32(g.eff), TileRows: 16, TileCols: 32, QuantType: g.q, CombineStyle: archspec.PreNorm}
	if g.tied {
		h.FeatureFlags = cflowfmt.FlagTiedEmbed
	}
	if err := h.Validate(); err != nil {
		t.Fatal(err)
	}
	md := cflowfmt.NewMetadata()
	md.SetF32(cflowfmt.KeyRMSEps, 1e-5)
	md.SetF32(cflowfmt.KeyRopeTheta, 500)
	md.SetString(cflowfmt.KeyName, "fixture")
	f := &fixture{m: &cflowfmt.Model{Header: h, Meta: md}, src: map[string][]src{}, norms: map[string][]float32{}}
	mat := func(name string, id archspec.MatrixID, l, e int, rope bool) []cflowfmt.MappedTile {
		rows, cols := h.Geometry(md).MatrixShape(l, id)
		w := randW(r, rows*cols)
		f.src[name] = append(f.src[name], src{rows, cols, w, rope, e})
		if e < 0 {
			e = cflowfmt.NoExpert
		}
		return tiles(g.q, id, l, e, w, rows, cols, 16, 32)
	}
	norm := func(name string) []float32 {
		v := randW(r, g.d)
		f.norms[name] = v
		return v
	}
	bank := map[int][][]cflowfmt.MappedTile{}
	for l := 0; l < g.L; l++ {
		p := fmt.Sprintf("blk.%d.", l)
		var ly cflowfmt.Layer
		ly.AttnNorm = norm(p + "attn_norm.weight")
		ly.QKV = append(mat(p+"attn_q.weight", archspec.MatQ, l, -1, true), mat(p+"attn_k.weight", archspec.MatK, l, -1, true)...)
		ly.QKV = append(ly.QKV, mat(p+"attn_v.weight", archspec.MatV, l, -1, false)...)
		ly.O = mat(p+"attn_output.weight", archspec.MatO, l, -1, false)
		ly.FFNNorm = norm(p + "ffn_norm.weight")
		if g.experts == 0 {
			ly.GateUp = append(mat(p+"ffn_gate.weight", archspec.MatGate, l, -1, false), mat(p+"ffn_up.weight", archspec.MatUp, l, -1, false)...)
			ly.Down = mat(p+"ffn_down.weight", archspec.MatDown, l, -1, false)
		} else {
			ly.Router = mat(p+"ffn_gate_inp.weight", archspec.MatRouter, l, -1, false)
			for e := 0; e < g.experts; e++ {
				ts := mat(p+"ffn_gate_exps.weight", archspec.MatExpertGate, l, e, false)
				ts = append(ts, mat(p+"ffn_up_exps.weight", archspec.MatExpertUp, l, e, false)...)
				ts = append(ts, mat(p+"ffn_down_exps.weight", archspec.MatExpertDown, l, e, false)...)
				bank[l] = append(bank[l], ts)
			}
		}
		f.m.Layers = append(f.m.Layers, ly)
	}
	f.m.Embed = mat("token_embd.weight", archspec.MatEmbed, g.L, -1, false)
	if !g.tied {
		f.m.LMHead = mat("output.weight", archspec.MatLMHead, g.L, -1, false)
	}
	f.m.FinalNorm = norm("output_norm.weight")
	f.m.ExpertTiles = func(l, e int) ([]cflowfmt.MappedTile, error) { return bank[l][e], nil }
	return f
}

// llamaCppRowOrder lists, for each GGUF row, the HF row it holds, the way
// llama.cpp's convert_hf_to_gguf.py permute does it:
// w.reshape(n_head, 2, hd/2, cols).swapaxes(1, 2).reshape(rows, cols).
func llamaCppRowOrder(rows, hd int) []int {
	var order []int
	for h := 0; h < rows/hd; h++ {
		for i := 0; i < hd/2; i++ { // axis 1 after swapaxes
			for half := 0; half < 2; half++ { // axis 2 after swapaxes
				order = append(order, h*hd+half*(hd/2)+i)
			}
		}
	}
	return order
}

func f16(b []byte) float32 { return float16.Frombits(binary.LittleEndian.Uint16(b)).Float32() }

// dequant decodes one GGUF row of type typ (ggml block layouts).
func dequant(typ uint32, row []byte, n int) []float32 {
	out := make([]float32, n)
	switch typ {
	case 0:
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(row[4*i:]))
		}
	case 2:
		for b := 0; b < n/32; b++ {
			blk := row[18*b:]
			d := f16(blk)
			for j := 0; j < 16; j++ {
				out[32*b+j] = d * float32(int(blk[2+j]&15)-8)
				out[32*b+j+16] = d * float32(int(blk[2+j]>>4)-8)
			}
		}
	case 8:
		for b := 0; b < n/32; b++ {
			blk := row[34*b:]
			d := f16(blk)
			for j := 0; j < 32; j++ {
				out[32*b+j] = d * float32(int8(blk[2+j]))
			}
		}
	}
	return out
}

func rowBytes(typ uint32, n int) int {
	switch typ {
	case 2:
		return n / 32 * 18
	case 8:
		return n / 32 * 34
	}
	return 4 * n
}

// expectRow is what GGUF row gr of s must hold: the source row (through the
// llama.cpp permutation for q/k) as its own quantization round trip when
// quantized (quant.Encode of the whole row is the bit-exact reference), the
// raw values when F32.
func expectRow(s src, q quant.Type, hd, gr int) []float32 {
	sr := gr
	if s.rope {
		sr = llamaCppRowOrder(s.rows, hd)[gr]
	}
	w := s.w[sr*s.cols : (sr+1)*s.cols]
	if q == quant.F32 {
		return w
	}
	t := quant.Encode(q, w, 1, s.cols, s.cols)
	out := make([]float32, s.cols)
	for c := range out {
		g := c / 32
		d := float16.Frombits(binary.LittleEndian.Uint16(t.Scales[2*g:])).Float32()
		if q == quant.Q4_0 {
			b := t.Data[16*g+c%16]
			if c%32 >= 16 {
				b >>= 4
			}
			out[c] = d * float32(int(b&15)-8)
		} else {
			out[c] = d * float32(int8(t.Data[32*g+c%32]))
		}
	}
	return out
}

func export(t *testing.T, f *fixture, opt gguf.Options) *ggufFile {
	t.Helper()
	path := filepath.Join(t.TempDir(), "m.gguf")
	if err := gguf.Write(f.m, path, opt); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	g, err := parseGGUF(b)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// check compares every tensor of g with the fixture's sources; wantType
// gives the expected ggml type per tensor name.
func check(t *testing.T, f *fixture, g *ggufFile, wantType func(name string, cols int) uint32) {
	t.Helper()
	hd := int(f.m.Header.HeadDim)
	want := len(f.src) + len(f.norms)
	if len(g.tensors) != want {
		t.Errorf("%d tensors, want %d", len(g.tensors), want)
	}
	for name, v := range f.norms {
		gt := g.byName[name]
		if gt == nil || gt.typ != 0 || len(gt.dims) != 1 || gt.dims[0] != uint64(len(v)) {
			t.Fatalf("%s: %+v, want F32 [%d]", name, gt, len(v))
		}
		for i, x := range dequant(0, gt.data, len(v)) {
			if x != v[i] {
				t.Fatalf("%s[%d] = %v, want %v", name, i, x, v[i])
			}
		}
	}
	for name, ss := range f.src {
		gt := g.byName[name]
		s0 := ss[0]
		dims := []uint64{uint64(s0.cols), uint64(s0.rows)}
		if s0.expert >= 0 {
			dims = append(dims, uint64(len(ss)))
		}
		if gt == nil || fmt.Sprint(gt.dims) != fmt.Sprint(dims) {
			t.Fatalf("%s: got %+v, want dims %v", name, gt, dims)
		}
		typ := wantType(name, s0.cols)
		if gt.typ != typ {
			t.Fatalf("%s: ggml type %d, want %d", name, gt.typ, typ)
		}
		q := map[uint32]quant.Type{0: quant.F32, 2: quant.Q4_0, 8: quant.Q8_0}[typ]
		if typ == 0 && !strings.HasSuffix(name, "gate_inp.weight") {
			q = f.m.Header.QuantType // F32 holding dequantized values
		}
		rb := rowBytes(typ, s0.cols)
		for e, s := range ss {
			for gr := 0; gr < s.rows; gr++ {
				off := (e*s.rows + gr) * rb
				got := dequant(typ, gt.data[off:off+rb], s.cols)
				exp := expectRow(s, q, hd, gr)
				for c := range got {
					if got[c] != exp[c] {
						t.Fatalf("%s expert %d row %d col %d: %v, want %v", name, e, gr, c, got[c], exp[c])
					}
				}
			}
		}
	}
}

func kvU32(t *testing.T, g *ggufFile, k string) uint32 {
	t.Helper()
	v, ok := g.kv[k]
	if !ok || v.typ != 4 {
		t.Fatalf("kv %s: %+v, want u32", k, v)
	}
	return v.value.(uint32)
}
