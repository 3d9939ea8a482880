package tileimage

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteText prints the description the way gguf-dump does: header fields
// by name, metadata, shard plan, per-layer bytes by stream, expert tables,
// the layer table and tile counts by matrix.
func (d *Description) WriteText(w io.Writer) {
	fmt.Fprintf(w, "%s: %s file, %d bytes\n\n", d.Path, d.Format, d.FileSize)
	h := d.Header
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "header:")
	for _, kv := range [][2]any{
		{"version", h.Version}, {"hidden_size", h.HiddenSize}, {"intermediate_size", h.IntermediateSize},
		{"vocab_size", h.VocabSize}, {"num_layers", h.NumLayers}, {"max_seq_len", h.MaxSeqLen},
		{"num_heads", h.NumHeads}, {"num_kv_heads", h.NumKVHeads}, {"head_dim", h.HeadDim},
		{"global_head_dim", h.GlobalHeadDim}, {"num_experts", h.NumExperts}, {"top_k", h.TopK},
		{"expert_intermediate_size", h.ExpertIntermediateSize}, {"tile_rows", h.TileRows},
		{"tile_cols", h.TileCols}, {"sliding_window", h.SlidingWindow}, {"quant_type", h.QuantType},
		{"metadata_offset", h.MetadataOffset}, {"metadata_length", h.MetadataLength},
		{"layer_table_offset", h.LayerTableOffset}, {"dense_delay", h.DenseDelay},
		{"expert_delay", h.ExpertDelay}, {"combine_style", h.CombineStyle},
		{"feature_flags", fmt.Sprintf("%#x %v", h.FeatureFlags, h.Features)},
		{"final_logit_softcap", h.FinalLogitSoftcap},
	} {
		v := kv[1]
		switch p := v.(type) {
		case *uint64:
			if p == nil {
				continue // .cflow-only field
			}
			v = *p
		case *uint32:
			if p == nil {
				continue
			}
			v = *p
		}
		fmt.Fprintf(tw, "  %s\t%v\n", kv[0], v)
	}
	fmt.Fprintf(tw, "\nmetadata (%d keys):\n", len(d.Metadata))
	for _, m := range d.Metadata {
		v := "(" + fmt.Sprint(m.Bytes) + " bytes)"
		if m.Value != nil {
			v = fmt.Sprintf("%v", m.Value)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", m.Key, m.Type, v)
	}
	tw.Flush()
	if len(d.ShardPlan) > 0 {
		fmt.Fprintf(w, "\nshard plan (%s): %s\n", KeyNUMAPlan, summarisePlan(d.ShardPlan))
	}
	fmt.Fprintln(w, "\nbytes per layer by stream:")
	fmt.Fprintln(tw, "  layer\tkind\tattn\tdense\tmoe+router\texperts\texpert bytes")
	for _, l := range d.Layers {
		var sum int64
		for _, b := range l.ExpertBytes {
			sum += b
		}
		fmt.Fprintf(tw, "  %d\t%s\t%d\t%d\t%d\t%d\t%d %v\n", l.Layer, l.Kind, l.AttnBytes, l.DenseBytes, l.MoEBytes, len(l.ExpertBytes), sum, l.ExpertBytes)
	}
	tw.Flush()
	fmt.Fprintf(w, "  vocabulary: embed %d, lm_head %d, final_norm %d bytes\n", d.EmbedBytes, d.LMHeadBytes, d.FinalNormBytes)
	if len(d.Layers) > 0 && len(d.Layers[0].Experts) > 0 {
		fmt.Fprintln(w, "\nexpert tables (offset+length per expert):")
		for _, l := range d.Layers {
			var parts []string
			for _, r := range l.Experts {
				parts = append(parts, fmt.Sprintf("%d+%d", r.Offset, r.Length))
			}
			fmt.Fprintf(w, "  layer %d (table at %d): %s\n", l.Layer, l.ExpertTable.Offset, strings.Join(parts, " "))
		}
	}
	if len(d.LayerTable) > 0 {
		fmt.Fprintln(w, "\nlayer table (offset+length; attn, dense, moe, expert_table, expert_bank):")
		for i, e := range d.LayerTable {
			name := fmt.Sprint(i)
			if i == len(d.LayerTable)-1 {
				name = "vocab (embed, lm_head, final_norm)"
			}
			var parts []string
			for _, r := range e {
				parts = append(parts, fmt.Sprintf("%d+%d", r.Offset, r.Length))
			}
			fmt.Fprintf(w, "  %s: %s\n", name, strings.Join(parts, "  "))
		}
	}
	fmt.Fprintf(w, "\ntiles: %d, %d bytes\n", d.TileCount, d.TileBytes)
	for _, t := range d.Tiles {
		fmt.Fprintf(tw, "  %s\t%d tiles\t%d bytes\n", t.Matrix, t.Count, t.Bytes)
	}
	tw.Flush()
}

// TileInfo is one line of inspect --tiles.
type TileInfo struct {
	Offset     int64  `json:"offset"`
	Layer      int    `json:"layer"`
	Matrix     string `json:"matrix"`
	Expert     int    `json:"expert"` // -1 for non-expert tiles (0xFF on disk)
	RowOffset  uint32 `json:"row_offset"`
	ColOffset  uint16 `json:"col_offset"`
	Rows       uint16 `json:"rows"`
	Cols       uint16 `json:"cols"`
	QuantGroup uint16 `json:"quant_group"`
	Bytes      int    `json:"bytes"`
}

// ListTiles collects every tile header a walk visits, in walk order.
func ListTiles(walk func(func(Loc, *MappedTile) error) error) ([]TileInfo, error) {
	var out []TileInfo
	err := walk(func(_ Loc, t *MappedTile) error {
		e := int(t.Expert)
		if t.Expert == NoExpert {
			e = -1
		}
		out = append(out, TileInfo{t.Offset, int(t.Layer), t.Matrix.String(), e, t.RowOffset, t.ColOffset, t.TileHeader.Rows, t.TileHeader.Cols, t.QuantGroup, t.Bytes()})
		return nil
	})
	return out, err
}

// summarisePlan is the shard plan in one line — nodes, matrices by policy,
// expert layers split — instead of kilobytes of JSON; inspect --json keeps
// the whole plan.
func summarisePlan(raw []byte) string {
	var p NUMAPlan
	if err := json.Unmarshal(raw, &p); err != nil {
		return fmt.Sprintf("%d bytes, unreadable: %v", len(raw), err)
	}
	by := map[string]int{}
	for _, m := range p.Matrices {
		by[m.Policy]++
	}
	var parts []string
	for _, pol := range []string{PolicyColumn, PolicyRow, PolicyReplicated, PolicyVocab} {
		if by[pol] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", by[pol], pol))
			delete(by, pol)
		}
	}
	for pol, n := range by {
		parts = append(parts, fmt.Sprintf("%d %s", n, pol))
	}
	layers := map[int]bool{}
	for _, e := range p.Experts {
		layers[e.Layer] = true
	}
	s := fmt.Sprintf("%d node(s); %d matrices (%s)", p.Nodes, len(p.Matrices), strings.Join(parts, ", "))
	if len(layers) > 0 {
		s += fmt.Sprintf("; experts split in %d layers", len(layers))
	}
	return s + " — inspect --json prints the whole plan"
}
