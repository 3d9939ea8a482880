package tileimage

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/cflow-dev/cflow/archspec"
)

// HeaderInfo is the GlobalHeader with named fields and enum names, as
// inspect prints it; the JSON names are the on-disk field names, so a
// script finds e.g. .header.hidden_size and .header.quant_type.
type HeaderInfo struct {
	Version                uint32 `json:"version"`
	HiddenSize             uint32 `json:"hidden_size"`
	IntermediateSize       uint32 `json:"intermediate_size"`
	VocabSize              uint32 `json:"vocab_size"`
	NumLayers              uint32 `json:"num_layers"`
	MaxSeqLen              uint32 `json:"max_seq_len"`
	NumHeads               uint16 `json:"num_heads"`
	NumKVHeads             uint16 `json:"num_kv_heads"`
	HeadDim                uint16 `json:"head_dim"`
	GlobalHeadDim          uint16 `json:"global_head_dim"`
	NumExperts             uint16 `json:"num_experts"`
	TopK                   uint16 `json:"top_k"`
	ExpertIntermediateSize uint32 `json:"expert_intermediate_size"`
	TileRows               uint16 `json:"tile_rows"`
	TileCols               uint16 `json:"tile_cols"`
	SlidingWindow          uint32 `json:"sliding_window"`
	QuantType              string `json:"quant_type"`
	// The three layout fields exist in .cflow headers only; a .vflow's
	// execution header has none, so they are omitted there (nil).
	MetadataOffset    *uint64  `json:"metadata_offset,omitempty"`
	MetadataLength    *uint32  `json:"metadata_length,omitempty"`
	LayerTableOffset  *uint64  `json:"layer_table_offset,omitempty"`
	DenseDelay        uint8    `json:"dense_delay"`
	ExpertDelay       uint8    `json:"expert_delay"`
	CombineStyle      string   `json:"combine_style"`
	FeatureFlags      uint8    `json:"feature_flags"`
	Features          []string `json:"features"`
	FinalLogitSoftcap float32  `json:"final_logit_softcap"`
}

// Info converts the header for display.
func (h *Header) Info() HeaderInfo {
	var feats []string
	for i, n := range []string{"embed_scale", "v_norm", "tied_embed", "gelu"} {
		if h.FeatureFlags&(1<<i) != 0 {
			feats = append(feats, n)
		}
	}
	return HeaderInfo{h.Version, h.HiddenSize, h.IntermediateSize, h.VocabSize, h.NumLayers,
		h.MaxSeqLen, h.NumHeads, h.NumKVHeads, h.HeadDim, h.GlobalHeadDim, h.NumExperts, h.TopK,
		h.ExpertIntermediateSize, h.TileRows, h.TileCols, h.SlidingWindow, h.QuantType.String(),
		&h.MetadataOffset, &h.MetadataLength, &h.LayerTableOffset, h.DenseDelay, h.ExpertDelay,
		h.CombineStyle.String(), h.FeatureFlags, feats, h.FinalLogitSoftcap}
}

// MetaInfo is one metadata entry; blobs (tokenizer data, the exec header,
// the shard plan) are summarised by size, not printed.
type MetaInfo struct {
	Key   string `json:"key"`
	Type  string `json:"type"`
	Bytes int    `json:"bytes"`
	Value any    `json:"value,omitempty"`
}

var metaTypeNames = [...]string{"u32", "f32", "string", "bytes", "u32[]", "f32[]"}

// LayerInfo is one layer's byte accounting by stream.
type LayerInfo struct {
	Layer       int     `json:"layer"`
	Kind        string  `json:"kind"`
	AttnBytes   int64   `json:"attn_bytes"`
	DenseBytes  int64   `json:"dense_bytes"`
	MoEBytes    int64   `json:"moe_bytes"` // MoE norm + router
	ExpertTable Range   `json:"expert_table"`
	ExpertBytes []int64 `json:"expert_bytes,omitempty"` // per expert
	Experts     []Range `json:"experts,omitempty"`
	Streams     []Range `json:"streams"` // by slot
}

// TileStat counts the tiles of one matrix kind.
type TileStat struct {
	Matrix string `json:"matrix"`
	Count  int    `json:"count"`
	Bytes  int64  `json:"bytes"`
}

// Description is everything inspect shows about a model file, in one
// JSON-friendly value; both formats produce it (vflowfmt adds its group
// table around it).
type Description struct {
	Format         string          `json:"format"`
	Path           string          `json:"path"`
	FileSize       int64           `json:"file_size"`
	Header         HeaderInfo      `json:"header"`
	Metadata       []MetaInfo      `json:"metadata"`
	ShardPlan      json.RawMessage `json:"shard_plan,omitempty"`
	LayerTable     [][]Range       `json:"layer_table,omitempty"` // .cflow only
	Layers         []LayerInfo     `json:"layers"`
	EmbedBytes     int64           `json:"embed_bytes"`
	LMHeadBytes    int64           `json:"lm_head_bytes"`
	FinalNormBytes int64           `json:"final_norm_bytes"`
	TileCount      int             `json:"tile_count"`
	TileBytes      int64           `json:"tile_bytes"`
	Tiles          []TileStat      `json:"tiles"`
}

// DescribeMeta summarises a metadata section; the NUMA plan is returned
// separately as JSON (or quoted text if it is not valid JSON).
func DescribeMeta(md *Metadata) ([]MetaInfo, json.RawMessage) {
	var out []MetaInfo
	var plan json.RawMessage
	for _, k := range md.Keys() {
		t, _ := md.Type(k)
		raw := md.m[k].raw
		mi := MetaInfo{Key: k, Type: fmt.Sprintf("type(%d)", t), Bytes: len(raw)}
		if int(t) < len(metaTypeNames) {
			mi.Type = metaTypeNames[t]
		}
		switch t {
		case MetaU32:
			mi.Value = md.U32(k, 0)
		case MetaF32:
			mi.Value = md.F32(k, 0)
		case MetaString:
			if s := md.String(k, ""); len(s) <= 256 {
				mi.Value = s
			}
		case MetaU32s:
			if v := md.U32s(k); len(v) <= 64 {
				mi.Value = v
			}
		case MetaF32s:
			if v := md.F32s(k); len(v) <= 64 {
				mi.Value = v
			}
		case MetaBytes:
			if k == KeyLayerKinds && len(raw) <= 4096 {
				kinds := make([]int, len(raw))
				for i, b := range raw {
					kinds[i] = int(b)
				}
				mi.Value = kinds
			}
		}
		if k == KeyNUMAPlan {
			if json.Valid(raw) {
				plan = append(json.RawMessage(nil), raw...)
			} else {
				plan, _ = json.Marshal(string(raw))
			}
		}
		out = append(out, mi)
	}
	return out, plan
}

// DescribeModel builds the Description of an open model. walk must visit
// every tile (experts included); format names the container.
func DescribeModel(format string, size int64, m *Model, walk func(func(Loc, *MappedTile) error) error) (*Description, error) {
	h := &m.Header
	d := &Description{Format: format, Path: m.Path, FileSize: size, Header: h.Info()}
	if format != "cflow" {
		d.Header.MetadataOffset, d.Header.MetadataLength, d.Header.LayerTableOffset = nil, nil, nil
	}
	d.Metadata, d.ShardPlan = DescribeMeta(m.Meta)
	g := h.Geometry(m.Meta)
	for l := range m.Layers {
		ly := &m.Layers[l]
		kind := "full"
		if !g.IsFull(l) {
			kind = "sliding"
		}
		li := LayerInfo{Layer: l, Kind: kind, AttnBytes: ly.Streams[SlotAttn].Length,
			DenseBytes: ly.Streams[SlotDense].Length, MoEBytes: ly.Streams[SlotMoE].Length,
			ExpertTable: ly.Streams[SlotExpertTable], Experts: ly.Experts, Streams: ly.Streams[:]}
		for _, r := range ly.Experts {
			li.ExpertBytes = append(li.ExpertBytes, r.Length)
		}
		d.Layers = append(d.Layers, li)
	}
	stats := map[archspec.MatrixID]*TileStat{}
	L := int(h.NumLayers)
	err := walk(func(loc Loc, t *MappedTile) error {
		st := stats[t.Matrix]
		if st == nil {
			st = &TileStat{Matrix: t.Matrix.String()}
			stats[t.Matrix] = st
		}
		n := int64(t.Bytes())
		st.Count++
		st.Bytes += n
		d.TileCount++
		d.TileBytes += n
		if loc.Layer == L {
			switch loc.Slot {
			case SlotEmbed:
				d.EmbedBytes += n
			case SlotLMHead:
				d.LMHeadBytes += n
			case SlotFinalNorm:
				d.FinalNormBytes += n
			}
		}
		return nil
	})
	ids := make([]int, 0, len(stats))
	for id := range stats {
		ids = append(ids, int(id))
	}
	sort.Ints(ids)
	for _, id := range ids {
		d.Tiles = append(d.Tiles, *stats[archspec.MatrixID(id)])
	}
	return d, err
}
