package convert

import (
	"encoding/json"
	"fmt"

	"github.com/cflow-dev/cflow/cflowfmt"
)

// NUMAPlan is the shard plan stored as JSON under cflowfmt.KeyNUMAPlan.
// A runtime with the same node count binds each node to its byte ranges;
// any other runtime ignores it, since the file is just tiles either way.
//
// Tile and byte ranges are relative to the start of the matrix's stream slot
// (Model.Layers[l].Streams[slot].Offset, or the vocabulary entry's slot),
// so the plan does not depend on where the writer puts the metadata.
type NUMAPlan struct {
	Version  int            `json:"version"`
	Nodes    int            `json:"nodes"`
	Matrices []MatrixShards `json:"matrices"`
	Experts  []ExpertShard  `json:"experts,omitempty"`
}

// MatrixShards is one non-expert matrix's policy and per-node ranges.
// Layer is NumLayers for the embedding, LM head and final norm.
type MatrixShards struct {
	Layer  int     `json:"layer"`
	Matrix string  `json:"matrix"`
	Slot   int     `json:"slot"`
	Policy string  `json:"policy"`
	Shards []Shard `json:"shards"`
}

// Shard is what one node owns of a matrix: the element block, the tile
// index range [from, to) within the slot and the byte range [from, to) from
// the slot start. For interleaved groups (Q/K/V, gate/up) a node's range may
// contain its own tiles of the group's other members, never another node's.
// Replicated matrices list every node with the same ranges.
type Shard struct {
	Node  int      `json:"node"`
	Rows  [2]int   `json:"rows"`
	Cols  [2]int   `json:"cols"`
	Tiles [2]int   `json:"tiles"`
	Bytes [2]int64 `json:"bytes"`
}

// ExpertShard assigns experts [from, to) of a layer to a node; the bytes
// are the experts' entries in the layer's expert table.
type ExpertShard struct {
	Layer   int    `json:"layer"`
	Node    int    `json:"node"`
	Experts [2]int `json:"experts"`
}

// ReadNUMAPlan decodes the plan from a file's metadata; ok is false when the
// file has none.
func ReadNUMAPlan(md *cflowfmt.Metadata) (p *NUMAPlan, ok bool, err error) {
	b := md.Bytes(cflowfmt.KeyNUMAPlan)
	if b == nil {
		return nil, false, nil
	}
	p = new(NUMAPlan)
	if err := json.Unmarshal(b, p); err != nil {
		return nil, true, fmt.Errorf("metadata %s: %v", cflowfmt.KeyNUMAPlan, err)
	}
	return p, true, nil
}
