package engine

import (
	"fmt"
	"math"
	"math/rand"

	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/engine/plan"
	"github.com/cflow-dev/cflow/quant"
)

// testModel is an in-memory model built straight from the spec: random
// matrices, tiled and encoded with quant.Encode, laid out at fake file
// offsets in plan.Layout order. dense holds every matrix as the float64
// values its tiles dequantize to, which the reference implementation uses.
type testModel struct {
	m           *cflowfmt.Model
	dense       map[string][][]float64
	norms       map[string][]float64
	expertCalls map[[2]int]int
	expertBytes map[[2]int]int64
}

func mkey(l int, m archspec.MatrixID, e int) string { return fmt.Sprintf("%d/%v/%d", l, m, e) }

// buildTestModel draws weights from seed. Matrices get scale 1/√in so the
// residual stays O(1); norms are 1 + 0.2·N(0,1).
func buildTestModel(h cflowfmt.Header, md *cflowfmt.Metadata, seed int64) *testModel {
	h.Version = cflowfmt.Version
	if h.TileRows == 0 {
		h.TileRows, h.TileCols = 16, 32
	}
	if h.MaxSeqLen == 0 {
		h.MaxSeqLen = 32
	}
	h.MetadataOffset, h.LayerTableOffset = cflowfmt.HeaderSize, cflowfmt.HeaderSize
	r := rand.New(rand.NewSource(seed))
	tm := &testModel{dense: map[string][][]float64{}, norms: map[string][]float64{},
		expertCalls: map[[2]int]int{}, expertBytes: map[[2]int]int64{}}
	m := &cflowfmt.Model{Path: "test", Header: h, Meta: md, Layers: make([]cflowfmt.Layer, h.NumLayers)}
	tm.m = m
	off := int64(4096)
	L := int(h.NumLayers)
	kinds := md.Bytes(cflowfmt.KeyLayerKinds)
	shape := func(l int, id archspec.MatrixID) (int, int) {
		if l < L {
			return h.Geometry(md).MatrixShape(l, id)
		}
		return h.Geometry(md).MatrixShape(0, id)
	}
	norm := func(name string) []float32 {
		v := make([]float32, h.HiddenSize)
		for i := range v {
			v[i] = float32(1 + 0.2*r.NormFloat64())
		}
		tm.norms[name] = f64(v)
		return v
	}
	// tiles encodes matrices interleaved by output stripe and assigns offsets.
	tiles := func(l, e int, ids ...archspec.MatrixID) []cflowfmt.MappedTile {
		ws := map[archspec.MatrixID][]float32{}
		for _, id := range ids {
			rows, cols := shape(l, id)
			w := make([]float32, rows*cols)
			s := 1 / math.Sqrt(float64(cols))
			if id == archspec.MatEmbed {
				s = 1
			}
			for i := range w {
				w[i] = float32(r.NormFloat64() * s)
			}
			ws[id] = w
			d := make([][]float64, rows)
			for i := range d {
				d[i] = make([]float64, cols)
			}
			tm.dense[mkey(l, id, e)] = d
		}
		var out []cflowfmt.MappedTile
		for r0 := 0; ; r0 += int(h.TileRows) {
			any := false
			for _, id := range ids {
				rows, cols := shape(l, id)
				if r0 >= rows {
					continue
				}
				any = true
				q := cflowfmt.TileQuant(id, h.QuantType)
				for c0 := 0; c0 < cols; c0 += int(h.TileCols) {
					tr, tc := min(int(h.TileRows), rows-r0), min(int(h.TileCols), cols-c0)
					t := quant.Encode(q, ws[id][r0*cols+c0:], tr, tc, cols)
					th := cflowfmt.TileHeader{Layer: uint16(l), Matrix: id, Expert: cflowfmt.NoExpert,
						RowOffset: uint32(r0), ColOffset: uint16(c0), Rows: uint16(tr), Cols: uint16(tc)}
					if e >= 0 {
						th.Expert = uint8(e)
					}
					if q != quant.F32 {
						th.QuantGroup = quant.GroupSize
					}
					mt := cflowfmt.MappedTile{TileHeader: th, Tile: t, Offset: off}
					off = cflowfmt.AlignUp(off + int64(mt.Bytes()))
					d := tm.dense[mkey(l, id, e)]
					for i := 0; i < tr; i++ {
						for j := 0; j < tc; j++ {
							d[r0+i][c0+j] = float64(t.Weight(i, j))
						}
					}
					out = append(out, mt)
				}
			}
			if !any {
				return out
			}
		}
	}
	normTile := func() { off = cflowfmt.AlignUp(off + int64(cflowfmt.TileHeaderSize+4*h.HiddenSize)) }
	iters := int(md.U32(cflowfmt.KeyBlockIterations, 1))
	steps, err := plan.Build(plan.FromHeader(&h, iters))
	if err != nil {
		panic(err)
	}
	experts := map[[2]int][]cflowfmt.MappedTile{}
	for _, st := range plan.Layout(steps) {
		ly := &m.Layers[st.Layer]
		l := st.Layer
		start := off
		switch st.Stream {
		case plan.Attn:
			normTile()
			ly.AttnNorm = norm(fmt.Sprint(l, "attn"))
			ids := []archspec.MatrixID{archspec.MatQ, archspec.MatK}
			full := kinds == nil || kinds[l] == archspec.LayerFull
			if !(full && md.U32(cflowfmt.KeyKEqV, 0) == 1) {
				ids = append(ids, archspec.MatV)
			}
			ly.QKV = tiles(l, -1, ids...)
			ly.O = tiles(l, -1, archspec.MatO)
			ly.Streams[cflowfmt.SlotAttn] = cflowfmt.Range{Offset: start, Length: off - start}
		case plan.Dense:
			normTile()
			ly.FFNNorm = norm(fmt.Sprint(l, "ffn"))
			ly.GateUp = tiles(l, -1, archspec.MatGate, archspec.MatUp)
			ly.Down = tiles(l, -1, archspec.MatDown)
			ly.Streams[cflowfmt.SlotDense] = cflowfmt.Range{Offset: start, Length: off - start}
		case plan.MoE:
			normTile()
			if h.CombineStyle == archspec.DelayedSum {
				ly.MoENorm = norm(fmt.Sprint(l, "moe"))
			} else if h.IntermediateSize == 0 {
				ly.FFNNorm = norm(fmt.Sprint(l, "ffn"))
			}
			ly.Router = tiles(l, -1, archspec.MatRouter)
			ly.Streams[cflowfmt.SlotMoE] = cflowfmt.Range{Offset: start, Length: off - start}
			off = cflowfmt.AlignUp(off + 16*int64(h.NumExperts))
			bank := off
			for x := 0; x < int(h.NumExperts); x++ {
				es := off
				ts := tiles(l, x, archspec.MatExpertGate, archspec.MatExpertUp)
				ts = append(ts, tiles(l, x, archspec.MatExpertDown)...)
				experts[[2]int{l, x}] = ts
				var b int64
				for i := range ts {
					b += int64(ts[i].Bytes())
				}
				tm.expertBytes[[2]int{l, x}] = b
				ly.Experts = append(ly.Experts, cflowfmt.Range{Offset: es, Length: off - es})
			}
			ly.Streams[cflowfmt.SlotExpertBank] = cflowfmt.Range{Offset: bank, Length: off - bank}
		}
	}
	m.Embed = tiles(L, -1, archspec.MatEmbed)
	if !h.Has(cflowfmt.FlagTiedEmbed) {
		m.LMHead = tiles(L, -1, archspec.MatLMHead)
	}
	normTile()
	m.FinalNorm = norm("final")
	m.ExpertTiles = func(l, x int) ([]cflowfmt.MappedTile, error) {
		ts, ok := experts[[2]int{l, x}]
		if !ok {
			return nil, fmt.Errorf("no expert %d/%d", l, x)
		}
		tm.expertCalls[[2]int{l, x}]++
		return ts, nil
	}
	m.Close = func() error { return nil }
	return tm
}

func f64(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}
