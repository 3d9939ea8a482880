package vflowfmt

import (
	"encoding/binary"

	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/cflowfmt"
)

// Group is a vertical group: contiguous layers sharing one attention kind,
// and (once written) where its stages lie in the file.
type Group struct {
	First, Count int
	Kind         byte // archspec.LayerFull or LayerSliding
	// Range spans the group's sequential data: its first non-empty stage to
	// the end of its last.
	Range cflowfmt.Range
	// Stages are the StageAttn, StageDense and StageMoE ranges ((0,0) when
	// a stage is empty).
	Stages [NumStages]cflowfmt.Range
}

// ComputeGroups partitions numLayers layers by their attention kinds
// (cflowfmt.KeyLayerKinds; nil means all full): a uniform model is one
// group; in a mixed model every maximal run of sliding layers is a group
// and every full layer is a group of its own (its head dim and K = V
// sharing differ, so it is not mixed into the sliding inner loop). Gemma's
// 5:1 pattern gives one group per 5 sliding layers and one per full layer.
func ComputeGroups(kinds []byte, numLayers int) []Group {
	kind := func(l int) byte {
		if l < len(kinds) {
			return kinds[l]
		}
		return archspec.LayerFull
	}
	uniform := true
	for l := 1; l < numLayers; l++ {
		uniform = uniform && kind(l) == kind(0)
	}
	if uniform {
		return []Group{{First: 0, Count: numLayers, Kind: kind(0)}}
	}
	var gs []Group
	for l := 0; l < numLayers; l++ {
		n := len(gs)
		if kind(l) == archspec.LayerSliding && n > 0 && gs[n-1].Kind == archspec.LayerSliding {
			gs[n-1].Count++
			continue
		}
		gs = append(gs, Group{First: l, Count: 1, Kind: kind(l)})
	}
	return gs
}

// GroupsFor computes the groups of a model from its header and metadata.
func GroupsFor(h *cflowfmt.Header, md *cflowfmt.Metadata) []Group {
	return ComputeGroups(md.Bytes(cflowfmt.KeyLayerKinds), int(h.NumLayers))
}

func putRange(b []byte, r cflowfmt.Range) {
	binary.LittleEndian.PutUint64(b, uint64(r.Offset))
	binary.LittleEndian.PutUint64(b[8:], uint64(r.Length))
}

// put encodes the 80-byte GroupDescriptor.
func (g *Group) put(b []byte) {
	le := binary.LittleEndian
	le.PutUint32(b[0:], uint32(g.First))
	le.PutUint32(b[4:], uint32(g.Count))
	b[8] = g.Kind
	clear(b[9:16])
	putRange(b[16:], g.Range)
	for s := range g.Stages {
		putRange(b[32+16*s:], g.Stages[s])
	}
}
