package fmttest

import (
	"bytes"
	"fmt"
	"reflect"

	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/cflowfmt"
)

// SameTile reports how a read tile differs from the written one (nil when
// header, type, geometry and bytes are identical).
func SameTile(got *cflowfmt.MappedTile, want Tile) error {
	if got.TileHeader != want.TH {
		return fmt.Errorf("tile at %d: header %+v, wrote %+v", got.Offset, got.TileHeader, want.TH)
	}
	if got.Tile.Type != want.T.Type || got.Tile.Rows != want.T.Rows || got.Tile.Cols != want.T.Cols ||
		!bytes.Equal(got.Scales, want.T.Scales) || !bytes.Equal(got.Data, want.T.Data) {
		return fmt.Errorf("tile at %d (%s): bytes differ from what was written", got.Offset, got.Matrix)
	}
	return nil
}

func sameList(where string, got []cflowfmt.MappedTile, want []Tile) error {
	if len(got) != len(want) {
		return fmt.Errorf("%s: %d tiles, wrote %d", where, len(got), len(want))
	}
	for i := range got {
		if err := SameTile(&got[i], want[i]); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
	}
	return nil
}

func only(ts []Tile, ms ...archspec.MatrixID) []Tile {
	var out []Tile
	for _, x := range ts {
		for _, m := range ms {
			if x.TH.Matrix == m {
				out = append(out, x)
			}
		}
	}
	return out
}

// CompareModel checks a Model read back against the spec it was written
// from: header geometry, metadata keys, every layer's tile lists (order and
// bytes), norms, each expert's tiles (and that ExpertTiles caches), the
// embedding, LM head and final norm.
func CompareModel(s *Spec, m *cflowfmt.Model) error {
	h := s.Header
	L := int(h.NumLayers)
	if m.Header.HiddenSize != h.HiddenSize || m.Header.NumExperts != h.NumExperts || m.Header.QuantType != h.QuantType || m.Header.NumLayers != h.NumLayers {
		return fmt.Errorf("header %+v, wrote %+v", m.Header, h)
	}
	for _, k := range s.Meta.Keys() {
		if !bytes.Equal(m.Meta.Bytes(k), s.Meta.Bytes(k)) || m.Meta.U32(k, 7) != s.Meta.U32(k, 7) || m.Meta.String(k, "?") != s.Meta.String(k, "?") {
			return fmt.Errorf("metadata %q differs", k)
		}
	}
	type pair struct {
		name string
		got  []cflowfmt.MappedTile
		want []Tile
	}
	for l := 0; l < L; l++ {
		ly := &m.Layers[l]
		attn, dense, moe := s.Stream(l, cflowfmt.SlotAttn), s.Stream(l, cflowfmt.SlotDense), s.Stream(l, cflowfmt.SlotMoE)
		for _, p := range []pair{
			{"qkv", ly.QKV, only(attn, archspec.MatQ, archspec.MatK, archspec.MatV)},
			{"o", ly.O, only(attn, archspec.MatO)},
			{"gate/up", ly.GateUp, only(dense, archspec.MatGate, archspec.MatUp)},
			{"down", ly.Down, only(dense, archspec.MatDown)},
			{"router", ly.Router, only(moe, archspec.MatRouter)},
		} {
			if err := sameList(fmt.Sprintf("layer %d %s", l, p.name), p.got, p.want); err != nil {
				return err
			}
		}
		norms := []struct {
			m   archspec.MatrixID
			got []float32
		}{{archspec.MatAttnNorm, ly.AttnNorm}, {archspec.MatFFNNorm, ly.FFNNorm}, {archspec.MatMoENorm, ly.MoENorm}}
		for _, n := range norms {
			var want []float32
			if len(only(append(append(attn, dense...), moe...), n.m)) > 0 {
				want = s.Norm(l, n.m)
			}
			if !reflect.DeepEqual(n.got, want) {
				return fmt.Errorf("layer %d %s differs", l, n.m)
			}
		}
		if len(ly.Experts) != int(h.NumExperts) {
			return fmt.Errorf("layer %d: %d expert ranges, want %d", l, len(ly.Experts), h.NumExperts)
		}
		for e := 0; e < int(h.NumExperts); e++ {
			ts, err := m.ExpertTiles(l, e)
			if err != nil {
				return err
			}
			if err := sameList(fmt.Sprintf("layer %d expert %d", l, e), ts, s.Expert(l, e)); err != nil {
				return err
			}
			if again, _ := m.ExpertTiles(l, e); &again[0] != &ts[0] {
				return fmt.Errorf("ExpertTiles(%d, %d) is not cached", l, e)
			}
		}
		if _, err := m.ExpertTiles(l, int(h.NumExperts)); err == nil {
			return fmt.Errorf("ExpertTiles accepted expert %d of %d", h.NumExperts, h.NumExperts)
		}
	}
	if err := sameList("embed", m.Embed, s.Stream(L, cflowfmt.SlotEmbed)); err != nil {
		return err
	}
	if err := sameList("lm_head", m.LMHead, s.Stream(L, cflowfmt.SlotLMHead)); err != nil {
		return err
	}
	if !reflect.DeepEqual(m.FinalNorm, s.Norm(L, archspec.MatFinalNorm)) {
		return fmt.Errorf("final norm differs")
	}
	return nil
}
