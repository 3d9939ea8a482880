package numa

import (
	"encoding/json"
	"fmt"

	"github.com/cflow-dev/cflow/cflowfmt"
)

// FilePlan is the shard plan the converter stores under
// cflowfmt.KeyNUMAPlan (convert.NUMAPlan writes it). It is decoded here
// rather than imported so the runtime does not link the converter; the
// runtime's tests convert files with convert and check this reader takes
// the in-place path on them, which keeps the two in step.
type FilePlan struct {
	Version  int           `json:"version"`
	Nodes    int           `json:"nodes"`
	Matrices []MatrixPlan  `json:"matrices"`
	Experts  []ExpertShard `json:"experts,omitempty"`
}

// MatrixPlan is one non-expert matrix's shards. Byte and tile ranges are
// relative to the start of its stream slot (Layer == NumLayers: the
// vocabulary entry's slot).
type MatrixPlan struct {
	Layer  int     `json:"layer"`
	Matrix string  `json:"matrix"`
	Slot   int     `json:"slot"`
	Policy string  `json:"policy"`
	Shards []Shard `json:"shards"`
}

// Shard is what one node owns of a matrix; a replicated matrix lists every
// node with the same ranges.
type Shard struct {
	Node  int      `json:"node"`
	Rows  [2]int   `json:"rows"`
	Cols  [2]int   `json:"cols"`
	Tiles [2]int   `json:"tiles"`
	Bytes [2]int64 `json:"bytes"`
}

// ExpertShard gives experts [from, to) of a layer to a node.
type ExpertShard struct {
	Layer   int    `json:"layer"`
	Node    int    `json:"node"`
	Experts [2]int `json:"experts"`
}

// Policies a MatrixPlan may name.
const (
	PolicyColumn     = "column"
	PolicyRow        = "row"
	PolicyReplicated = "replicated"
	PolicyVocab      = "vocab"
)

// ReadPlan decodes a file's shard plan; ok is false when it has none.
func ReadPlan(md *cflowfmt.Metadata) (p *FilePlan, ok bool, err error) {
	b := md.Bytes(cflowfmt.KeyNUMAPlan)
	if b == nil {
		return nil, false, nil
	}
	p = new(FilePlan)
	if err := json.Unmarshal(b, p); err != nil {
		return nil, true, fmt.Errorf("metadata %s: %v", cflowfmt.KeyNUMAPlan, err)
	}
	if p.Nodes < 1 {
		return nil, true, fmt.Errorf("metadata %s: %d nodes", cflowfmt.KeyNUMAPlan, p.Nodes)
	}
	return p, true, nil
}

// Cuts splits n items into k contiguous, balanced runs (earlier runs take
// the remainder), the converter's rule for experts: run i is
// [c[i], c[i+1]).
func Cuts(n, k int) []int {
	c := make([]int, k+1)
	for i := 0; i <= k; i++ {
		c[i] = min(n, (i*n+k-1)/k)
	}
	return c
}
