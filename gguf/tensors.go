package gguf

import (
	"fmt"

	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/quant"
)

// tensors lists every GGUF tensor of m in llama.cpp's naming, each with a
// fill function reading the model's tiles.
func tensors(m *cflowfmt.Model, opt Options) ([]tensor, error) {
	h := &m.Header
	d := int(h.HiddenSize)
	var ts []tensor
	mat := func(name string, tiles []cflowfmt.MappedTile, id cflowfmt.MatrixID, l int, rowOf func(int) int) {
		rows, cols := cflowfmt.MatrixShape(h, m.Meta, l, id)
		mx := &matrix{tiles: pick(tiles, id), rows: rows, cols: cols, rowOf: rowOf}
		typ := ggmlTypeFor(cflowfmt.TileQuant(id, h.QuantType), cols, opt.F32)
		ts = append(ts, tensor{name: name, dims: []uint64{uint64(cols), uint64(rows)}, typ: typ,
			fill: func(dst []byte) error { return mx.fill(dst, typ) }})
	}
	vec := func(name string, v []float32) {
		ts = append(ts, tensor{name: name, dims: []uint64{uint64(d)}, typ: GGMLF32,
			fill: func(dst []byte) error {
				if len(v) != d {
					return fmt.Errorf("norm has %d values, want %d", len(v), d)
				}
				f32Vector(dst, v)
				return nil
			}})
	}
	L := int(h.NumLayers)
	mat("token_embd.weight", m.Embed, cflowfmt.MatEmbed, L, nil)
	rope := ropeRow(int(h.HeadDim))
	for l, ly := range m.Layers {
		p := fmt.Sprintf("blk.%d.", l)
		vec(p+"attn_norm.weight", ly.AttnNorm)
		mat(p+"attn_q.weight", ly.QKV, cflowfmt.MatQ, l, rope)
		mat(p+"attn_k.weight", ly.QKV, cflowfmt.MatK, l, rope)
		mat(p+"attn_v.weight", ly.QKV, cflowfmt.MatV, l, nil)
		mat(p+"attn_output.weight", ly.O, cflowfmt.MatO, l, nil)
		norm := ly.FFNNorm
		if norm == nil {
			norm = ly.MoENorm
		}
		vec(p+"ffn_norm.weight", norm)
		if h.NumExperts == 0 {
			mat(p+"ffn_gate.weight", ly.GateUp, cflowfmt.MatGate, l, nil)
			mat(p+"ffn_up.weight", ly.GateUp, cflowfmt.MatUp, l, nil)
			mat(p+"ffn_down.weight", ly.Down, cflowfmt.MatDown, l, nil)
			continue
		}
		mat(p+"ffn_gate_inp.weight", ly.Router, cflowfmt.MatRouter, l, nil)
		for _, e := range []struct {
			name string
			id   cflowfmt.MatrixID
		}{{"ffn_gate_exps", cflowfmt.MatExpertGate}, {"ffn_up_exps", cflowfmt.MatExpertUp}, {"ffn_down_exps", cflowfmt.MatExpertDown}} {
			ts = append(ts, experts(m, p+e.name+".weight", l, e.id, opt))
		}
	}
	vec("output_norm.weight", m.FinalNorm)
	if !h.Has(cflowfmt.FlagTiedEmbed) {
		mat("output.weight", m.LMHead, cflowfmt.MatLMHead, L, nil)
	}
	return ts, nil
}

// experts is one 3-D expert tensor (ggml dims {cols, rows, experts}): each
// expert's matrix in expert order, tiles parsed on demand.
func experts(m *cflowfmt.Model, name string, l int, id cflowfmt.MatrixID, opt Options) tensor {
	h := &m.Header
	rows, cols := cflowfmt.MatrixShape(h, m.Meta, l, id)
	typ := ggmlTypeFor(cflowfmt.TileQuant(id, h.QuantType), cols, opt.F32)
	E := int(h.NumExperts)
	return tensor{name: name, dims: []uint64{uint64(cols), uint64(rows), uint64(E)}, typ: typ,
		fill: func(dst []byte) error {
			per := rows * typ.RowBytes(cols)
			for e := 0; e < E; e++ {
				tiles, err := m.ExpertTiles(l, e)
				if err != nil {
					return fmt.Errorf("expert %d: %w", e, err)
				}
				mx := matrix{tiles: pick(tiles, id), rows: rows, cols: cols}
				if err := mx.fill(dst[e*per:(e+1)*per], typ); err != nil {
					return fmt.Errorf("expert %d: %w", e, err)
				}
			}
			return nil
		}}
}

// Padded lists the tensors that Write exports as F32 although the file is
// quantized, because their row length is not a multiple of 32 (ggml's
// blocks cannot hold a zero-padded group); the CLI prints them.
func Padded(m *cflowfmt.Model) []string {
	if m.Header.QuantType == quant.F32 {
		return nil
	}
	ts, err := tensors(m, Options{})
	if err != nil {
		return nil
	}
	var out []string
	for _, t := range ts {
		if t.typ == GGMLF32 && len(t.dims) >= 2 && t.dims[0]%quant.GroupSize != 0 {
			out = append(out, t.name)
		}
	}
	return out
}
