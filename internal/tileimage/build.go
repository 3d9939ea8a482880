package tileimage

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync/atomic"

	"github.com/cflow-dev/cflow/archspec"
)

// ModelBuilder assembles a Model from tiles, routing each by its own
// header (layer_id, matrix_id) and copying norm tiles into []float32. Both
// readers feed it, so .cflow and .vflow produce identical Models.
type ModelBuilder struct {
	h      *Header
	m      *Model
	filled map[[2]int]int // (layer, matrix) → norm values filled so far
}

// NewModelBuilder starts a Model for header h and metadata md.
func NewModelBuilder(path string, h Header, md *Metadata) *ModelBuilder {
	m := &Model{Path: path, Header: h, Meta: md, Layers: make([]Layer, h.NumLayers)}
	return &ModelBuilder{h: &m.Header, m: m, filled: map[[2]int]int{}}
}

// Model returns the model under construction (for the reader to fill
// Streams, Experts, ExpertTiles and Close).
func (b *ModelBuilder) Model() *Model { return b.m }

func (b *ModelBuilder) norm(l int, id archspec.MatrixID) *[]float32 {
	if id == archspec.MatFinalNorm {
		return &b.m.FinalNorm
	}
	ly := &b.m.Layers[l]
	switch id {
	case archspec.MatAttnNorm:
		return &ly.AttnNorm
	case archspec.MatFFNNorm:
		return &ly.FFNNorm
	}
	return &ly.MoENorm
}

// Add files one validated non-expert tile (from ParseTile). Norm tiles of
// one vector must arrive in column order without gaps or repeats.
func (b *ModelBuilder) Add(t MappedTile) error {
	l := int(t.Layer)
	if t.Matrix.IsExpert() {
		return fmt.Errorf("%s tile outside an expert bank", t.Matrix)
	}
	if t.Matrix.IsNorm() {
		key := [2]int{l, int(t.Matrix)}
		got := b.filled[key]
		if int(t.ColOffset) != got {
			return fmt.Errorf("layer %d %s tile at column %d, want %d (norm tiles in order, each column once)", l, t.Matrix, t.ColOffset, got)
		}
		p := b.norm(l, t.Matrix)
		if *p == nil {
			*p = make([]float32, b.h.HiddenSize)
		}
		for i := 0; i < t.Tile.Cols; i++ {
			(*p)[got+i] = math.Float32frombits(binary.LittleEndian.Uint32(t.Data[4*i:]))
		}
		b.filled[key] = got + t.Tile.Cols
		return nil
	}
	switch t.Matrix {
	case archspec.MatEmbed:
		b.m.Embed = append(b.m.Embed, t)
		return nil
	case archspec.MatLMHead:
		b.m.LMHead = append(b.m.LMHead, t)
		return nil
	}
	ly := &b.m.Layers[l]
	switch t.Matrix {
	case archspec.MatQ, archspec.MatK, archspec.MatV:
		ly.QKV = append(ly.QKV, t)
	case archspec.MatO:
		ly.O = append(ly.O, t)
	case archspec.MatGate, archspec.MatUp:
		ly.GateUp = append(ly.GateUp, t)
	case archspec.MatDown:
		ly.Down = append(ly.Down, t)
	case archspec.MatRouter:
		ly.Router = append(ly.Router, t)
	}
	return nil
}

// Finish checks the model is complete for its header: every layer has an
// attention norm, QKV and O; a dense FFN (norm, gate/up, down) when
// intermediate_size > 0; a router and its norm when there are experts;
// the embedding, the LM head unless tied, and the final norm. at(layer)
// names the file offset to blame (layer == NumLayers: vocabulary).
func (b *ModelBuilder) Finish(at func(layer int) int64) (*Model, error) {
	h := b.h
	d := int(h.HiddenSize)
	bad := func(l int, format string, a ...any) (*Model, error) {
		return nil, &FormatError{Offset: at(l), What: fmt.Sprintf(format, a...)}
	}
	for key, n := range b.filled {
		if n != d {
			return bad(key[0], "layer %d %s has %d of %d values", key[0], archspec.MatrixID(key[1]), n, d)
		}
	}
	routerNorm := h.RouterNorm()
	for l := range b.m.Layers {
		ly := &b.m.Layers[l]
		switch {
		case ly.AttnNorm == nil || len(ly.QKV) == 0 || len(ly.O) == 0:
			return bad(l, "layer %d attention is incomplete (norm %v, %d QKV tiles, %d O tiles)", l, ly.AttnNorm != nil, len(ly.QKV), len(ly.O))
		case h.IntermediateSize > 0 && (ly.FFNNorm == nil || len(ly.GateUp) == 0 || len(ly.Down) == 0):
			return bad(l, "layer %d dense FFN is incomplete (norm %v, %d gate/up tiles, %d down tiles)", l, ly.FFNNorm != nil, len(ly.GateUp), len(ly.Down))
		case h.NumExperts > 0 && len(ly.Router) == 0:
			return bad(l, "layer %d has no router tiles", l)
		case h.NumExperts > 0 && routerNorm == archspec.MatMoENorm && ly.MoENorm == nil:
			return bad(l, "layer %d (%s) has no moe_norm", l, h.CombineStyle)
		case h.NumExperts > 0 && routerNorm == archspec.MatFFNNorm && ly.FFNNorm == nil:
			return bad(l, "layer %d has experts but no ffn_norm", l)
		}
	}
	L := int(h.NumLayers)
	switch {
	case len(b.m.Embed) == 0:
		return bad(L, "no embedding tiles")
	case h.Has(FlagTiedEmbed) && len(b.m.LMHead) != 0:
		return bad(L, "tied embeddings but %d lm_head tiles", len(b.m.LMHead))
	case !h.Has(FlagTiedEmbed) && len(b.m.LMHead) == 0:
		return bad(L, "no lm_head tiles (embeddings are not tied)")
	case b.m.FinalNorm == nil:
		return bad(L, "no final norm")
	}
	return b.m, nil
}

// LazyExperts returns a Model.ExpertTiles function that parses expert e of
// a layer on first use (validating every tile header against the layer and
// expert) and caches the result lock-free; ranges[l][e] gives the bytes.
func LazyExperts(path string, data []byte, h *Header, ranges func(l int) []Range) func(layer, e int) ([]MappedTile, error) {
	E := int(h.NumExperts)
	cache := make([]atomic.Pointer[[]MappedTile], int(h.NumLayers)*E)
	return func(layer, e int) ([]MappedTile, error) {
		if layer < 0 || layer >= int(h.NumLayers) || e < 0 || e >= E {
			return nil, fmt.Errorf("%s: expert (%d, %d) outside %d layers × %d experts", path, layer, e, h.NumLayers, E)
		}
		c := &cache[layer*E+e]
		if p := c.Load(); p != nil {
			return *p, nil
		}
		var ts []MappedTile
		err := guardFault(path, func() (err error) {
			ts, err = ParseExpert(data, ranges(layer)[e], h, layer, e)
			return err
		})
		if err != nil {
			if fe, ok := err.(*FormatError); ok {
				fe.File = path
			}
			return nil, err
		}
		c.Store(&ts)
		return ts, nil
	}
}

// ParseExpert walks one expert's range: only expert matrices of that layer
// and expert, each tile validated.
func ParseExpert(data []byte, r Range, h *Header, layer, e int) ([]MappedTile, error) {
	var ts []MappedTile
	for off := r.Offset; off < r.End(); {
		t, next, err := ParseTile(data, off, r.End(), h)
		if err != nil {
			return nil, err
		}
		if !t.Matrix.IsExpert() || int(t.Layer) != layer || int(t.Expert) != e {
			return nil, &FormatError{Offset: off, What: fmt.Sprintf("%s tile (layer %d, expert %d) inside layer %d expert %d's range", t.Matrix, t.Layer, t.Expert, layer, e)}
		}
		ts = append(ts, t)
		off = next
	}
	return ts, nil
}
