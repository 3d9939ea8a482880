package tileimage

import (
	"encoding/json"
	"fmt"
)

// NUMAPlan is the shard plan stored as JSON under KeyNUMAPlan. The
// converter writes it and the runtime obeys it, so the one definition lives
// with the format. A runtime with the same node count binds each node to its
// byte ranges; any other runtime re-plans, since the file is just tiles.
//
// Tile and byte ranges are relative to the start of the matrix's stream slot
// (Model.Layers[l].Streams[slot].Offset, or the vocabulary entry's slot), so
// the plan does not depend on where the writer puts the metadata.
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

// ExpertShard assigns experts [from, to) of a layer to a node.
type ExpertShard struct {
	Layer   int    `json:"layer"`
	Node    int    `json:"node"`
	Experts [2]int `json:"experts"`
}

// Policies a MatrixShards may name (after NUMA-Torch's NUMA-TP).
const (
	// PolicyColumn splits output rows: each node owns whole heads or stripes.
	PolicyColumn = "column"
	// PolicyRow splits input columns; nodes produce partial sums reduced once
	// per block.
	PolicyRow = "row"
	// PolicyReplicated gives every node the whole matrix (norms, router,
	// K/V when there are fewer KV heads than nodes).
	PolicyReplicated = "replicated"
	// PolicyVocab splits the embedding and LM head by vocabulary rows.
	PolicyVocab = "vocab"
)

// ReadNUMAPlan decodes the plan from a file's metadata; ok is false when the
// file has none.
func ReadNUMAPlan(md *Metadata) (p *NUMAPlan, ok bool, err error) {
	b := md.Bytes(KeyNUMAPlan)
	if b == nil {
		return nil, false, nil
	}
	p = new(NUMAPlan)
	if err := json.Unmarshal(b, p); err != nil {
		return nil, true, fmt.Errorf("metadata %s: %v", KeyNUMAPlan, err)
	}
	if p.Nodes < 1 {
		return nil, true, fmt.Errorf("metadata %s: %d nodes", KeyNUMAPlan, p.Nodes)
	}
	return p, true, nil
}

// ShardCuts splits total items, in whole units of unit items, into n
// contiguous balanced runs (earlier runs take the remainder): run i is
// [c[i], c[i+1]). The converter plans with it and the runtime re-plans with
// it, so a re-planned file splits the way a converted one would.
func ShardCuts(total, unit, n int) []int {
	units := (total + unit - 1) / unit
	c := make([]int, n+1)
	for i := 0; i <= n; i++ {
		c[i] = min(total, ((i*units+n-1)/n)*unit)
	}
	return c
}
