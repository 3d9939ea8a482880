package gguf

import (
	"fmt"
	"math"
	"sort"

	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/quant"
)

// tensors lists every GGUF tensor of m in llama.cpp's naming for its
// architecture (arch.go), each with a fill function reading the model's
// tiles or metadata vectors.
func tensors(m *cflowfmt.Model, opt Options) ([]tensor, error) {
	h := &m.Header
	a := archOf(m)
	d := int(h.HiddenSize)
	var ts []tensor
	mat := func(name string, tiles []cflowfmt.MappedTile, id archspec.MatrixID, l int, rowOf func(int) int) {
		rows, cols := h.Geometry(m.Meta).MatrixShape(l, id)
		mx := &matrix{tiles: pick(tiles, id), rows: rows, cols: cols, rowOf: rowOf}
		typ := ggmlTypeFor(cflowfmt.TileQuant(id, h.QuantType), cols, opt.F32)
		ts = append(ts, tensor{name: name, dims: []uint64{uint64(cols), uint64(rows)}, typ: typ,
			fill: func(dst []byte) error { return mx.fill(dst, typ) }})
	}
	// vecN is a 1-D F32 tensor of n values; with rowOf, value i goes to
	// element rowOf(i), as a matrix's row i goes to row rowOf(i).
	vecN := func(name string, v []float32, n int, rowOf func(int) int) {
		ts = append(ts, tensor{name: name, dims: []uint64{uint64(n)}, typ: GGMLF32,
			fill: func(dst []byte) error {
				if len(v) != n {
					return fmt.Errorf("%s has %d values, want %d", name, len(v), n)
				}
				if rowOf != nil {
					p := make([]float32, n)
					for i, x := range v {
						p[rowOf(i)] = x
					}
					v = p
				}
				f32Vector(dst, v)
				return nil
			}})
	}
	vec := func(name string, v []float32) { vecN(name, v, d, nil) }
	meta := func(l int, key string) []float32 {
		if m.Meta == nil {
			return nil
		}
		return m.Meta.F32s(cflowfmt.LayerKey(l, key))
	}
	L := int(h.NumLayers)
	hd := int(h.HeadDim)
	qDim, kvDim, ff := int(h.NumHeads)*hd, int(h.NumKVHeads)*hd, int(h.IntermediateSize)
	mat("token_embd.weight", m.Embed, archspec.MatEmbed, L, nil)
	var rope func(int) int
	if !a.neox {
		rope = ropeRow(hd) // llama.cpp's llama rotates adjacent pairs
	}
	if f := ropeFreqFactors(m); f != nil {
		vecN("rope_freqs.weight", f, len(f), nil)
	}
	if a.gemma4 {
		f := gemma4RopeFreqs(h, m.Meta)
		vecN("rope_freqs.weight", f, len(f), nil)
	}
	for l, ly := range m.Layers {
		p := fmt.Sprintf("blk.%d.", l)
		vec(p+"attn_norm.weight", ly.AttnNorm)
		mat(p+"attn_q.weight", ly.QKV, archspec.MatQ, l, rope)
		mat(p+"attn_k.weight", ly.QKV, archspec.MatK, l, rope)
		if len(pick(ly.QKV, archspec.MatV)) > 0 {
			mat(p+"attn_v.weight", ly.QKV, archspec.MatV, l, nil)
		}
		mat(p+"attn_output.weight", ly.O, archspec.MatO, l, nil)
		if a.gemma4 {
			rows, _ := h.Geometry(m.Meta).MatrixShape(l, archspec.MatQ)
			lh := rows / int(h.NumHeads)
			names := gemma4Vectors(h.NumExperts > 0)
			size := map[string]int{archspec.VecQNorm: lh, archspec.VecKNorm: lh, archspec.VecExpertScale: int(h.NumExperts), archspec.VecLayerScalar: 1}
			for _, role := range sortedKeys(names) {
				n, ok := size[role]
				if !ok {
					n = d
				}
				vecN(p+names[role], gemma4Vector(h, role, meta(l, role)), n, nil)
			}
		}
		for _, b := range []struct {
			name, key string
			n         int
			rowOf     func(int) int
		}{
			{"attn_q.bias", archspec.VecQBias, qDim, rope}, {"attn_k.bias", archspec.VecKBias, kvDim, rope},
			{"attn_v.bias", archspec.VecVBias, kvDim, nil}, {"attn_output.bias", archspec.VecOBias, d, nil},
			{"ffn_gate.bias", archspec.VecGateBias, ff, nil}, {"ffn_up.bias", archspec.VecUpBias, ff, nil},
			{"ffn_down.bias", archspec.VecDownBias, d, nil},
			{"attn_q_norm.weight", archspec.VecQNorm, hd, nil}, {"attn_k_norm.weight", archspec.VecKNorm, hd, nil},
			{"post_attention_norm.weight", archspec.VecPostAttnNorm, d, nil}, {"post_ffw_norm.weight", archspec.VecPostFFNNorm, d, nil},
		} {
			if v := meta(l, b.key); v != nil && !a.gemma4 {
				vecN(p+b.name, v, b.n, b.rowOf)
			}
		}
		norm := ly.FFNNorm
		if norm == nil {
			norm = ly.MoENorm
		}
		vec(p+"ffn_norm.weight", norm)
		if h.IntermediateSize > 0 {
			mat(p+"ffn_gate.weight", ly.GateUp, archspec.MatGate, l, nil)
			mat(p+"ffn_up.weight", ly.GateUp, archspec.MatUp, l, nil)
			mat(p+"ffn_down.weight", ly.Down, archspec.MatDown, l, nil)
		}
		if h.NumExperts == 0 {
			continue
		}
		mat(p+"ffn_gate_inp.weight", ly.Router, archspec.MatRouter, l, nil)
		for _, e := range []struct {
			name string
			id   archspec.MatrixID
		}{{"ffn_gate_exps", archspec.MatExpertGate}, {"ffn_up_exps", archspec.MatExpertUp}, {"ffn_down_exps", archspec.MatExpertDown}} {
			ts = append(ts, experts(m, p+e.name+".weight", l, e.id, opt))
		}
	}
	vec("output_norm.weight", m.FinalNorm)
	if !h.Has(cflowfmt.FlagTiedEmbed) {
		mat("output.weight", m.LMHead, archspec.MatLMHead, L, nil)
	}
	return ts, nil
}

// ropeFreqFactors is llama.cpp's rope_freqs.weight for llama3 scaling: per
// rotated pair, the base frequency over the scaled one (llama.cpp divides
// each angle by it), as convert_hf_to_gguf.py writes for Llama 3.x. nil
// without llama3 scaling.
func ropeFreqFactors(m *cflowfmt.Model) []float32 {
	md := m.Meta
	if md == nil || md.String(cflowfmt.KeyRopeScaling, "") != "llama3" {
		return nil
	}
	hd := int(m.Header.HeadDim)
	theta := float64(md.F32(cflowfmt.KeyRopeTheta, 10000))
	fac := float64(md.F32(cflowfmt.KeyRopeScalingFactor, 1))
	lo, hi := float64(md.F32(cflowfmt.KeyRopeLowFreqFactor, 1)), float64(md.F32(cflowfmt.KeyRopeHighFreqFactor, 4))
	orig := float64(md.U32(cflowfmt.KeyRopeOriginalContext, 8192))
	out := make([]float32, hd/2)
	for i := range out {
		f := 1 / math.Pow(theta, float64(2*i)/float64(hd))
		wave := 2 * math.Pi / f
		switch {
		case wave < orig/hi:
			out[i] = 1
		case wave > orig/lo:
			out[i] = float32(fac)
		default:
			s := (orig/wave - lo) / (hi - lo)
			out[i] = float32(1 / ((1-s)/fac + s))
		}
	}
	return out
}

// experts is one 3-D expert tensor (ggml dims {cols, rows, experts}): each
// expert's matrix in expert order, tiles parsed on demand.
func experts(m *cflowfmt.Model, name string, l int, id archspec.MatrixID, opt Options) tensor {
	h := &m.Header
	rows, cols := h.Geometry(m.Meta).MatrixShape(l, id)
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

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
