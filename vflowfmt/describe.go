package vflowfmt

import (
	"fmt"
	"io"

	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/internal/tileimage"
)

// HeaderInfo is the 64-byte VFlowHeader for display (JSON "vflow_header").
type HeaderInfo struct {
	Version           uint32 `json:"version"`
	GroupCount        uint16 `json:"group_count"`
	MetadataOffset    uint64 `json:"metadata_offset"`
	MetadataLength    uint32 `json:"metadata_length"`
	GroupTableOffset  uint64 `json:"group_table_offset"`
	ExpertIndexOffset uint64 `json:"expert_index_offset"`
}

// GroupInfo is one GroupDescriptor for display.
type GroupInfo struct {
	Group  int              `json:"group"`
	First  int              `json:"first_layer"`
	Count  int              `json:"layer_count"`
	Kind   string           `json:"kind"`
	Range  cflowfmt.Range   `json:"range"`
	Stages []cflowfmt.Range `json:"stages"` // attn, dense, moe
}

// Description is cflowfmt's Description (whose "header" is the execution
// header, so scripts read the same keys for both formats) plus the
// .vflow header and group table.
type Description struct {
	*cflowfmt.Description
	VHeader HeaderInfo  `json:"vflow_header"`
	Groups  []GroupInfo `json:"groups"`
}

// Describe summarises an open .vflow file for inspect.
func (f *File) Describe() (*Description, error) {
	base, err := tileimage.DescribeModel("vflow", f.Size, f.Model, f.Walk)
	h := &f.Header
	d := &Description{Description: base, VHeader: HeaderInfo{h.Version, h.GroupCount, h.MetadataOffset, h.MetadataLength, h.GroupTableOffset, h.ExpertIndexOffset}}
	for i, g := range f.Groups {
		kind := "full"
		if g.Kind == archspec.LayerSliding {
			kind = "sliding"
		}
		d.Groups = append(d.Groups, GroupInfo{i, g.First, g.Count, kind, g.Range, g.Stages[:]})
	}
	return d, err
}

// WriteText prints the common description, then the .vflow header and
// the group table.
func (d *Description) WriteText(w io.Writer) {
	d.Description.WriteText(w)
	v := d.VHeader
	fmt.Fprintf(w, "\nvflow header: version %d, %d groups, metadata %d+%d, group table at %d, expert index at %d\n",
		v.Version, v.GroupCount, v.MetadataOffset, v.MetadataLength, v.GroupTableOffset, v.ExpertIndexOffset)
	fmt.Fprintln(w, "group table (offset+length):")
	for _, g := range d.Groups {
		fmt.Fprintf(w, "  group %d: layers %d..%d %s, data %d+%d; attn %d+%d, dense %d+%d, moe %d+%d\n",
			g.Group, g.First, g.First+g.Count-1, g.Kind, g.Range.Offset, g.Range.Length,
			g.Stages[0].Offset, g.Stages[0].Length, g.Stages[1].Offset, g.Stages[1].Length, g.Stages[2].Offset, g.Stages[2].Length)
	}
}
