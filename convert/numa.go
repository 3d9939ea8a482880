package convert

import (
	"os"
	"path/filepath"

	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/cflowfmt"
)

// shard is the part of a matrix one node owns: rows [r0, r1) × cols [c0, c1).
// node is -1 for a replicated matrix (one copy every node reads).
type shard struct {
	node           int
	r0, r1, c0, c1 int
}

// planner decides, for every matrix, who owns what. All cuts depend only on
// the geometry, so they are reproducible from the header alone.
type planner struct {
	s     *modelSpec
	nodes int
}

// DefaultNUMANodes counts /sys/devices/system/node/node* directories, the
// kernel's view of memory nodes; 1 when the directory is absent.
func DefaultNUMANodes() int {
	m, _ := filepath.Glob("/sys/devices/system/node/node[0-9]*")
	n := 0
	for _, p := range m {
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			n++
		}
	}
	return max(1, n)
}

// round32 moves interior cut points to multiples of the quant group so a
// row-parallel shard never splits a scale group.
func round32(c []int, total int) []int {
	out := make([]int, len(c))
	for i, x := range c {
		switch {
		case i == 0:
			out[i] = 0
		case i == len(c)-1:
			out[i] = total
		default:
			out[i] = min(total, max(out[i-1], (x+16)/32*32))
		}
	}
	return out
}

// headCuts returns the query-head and KV-head cut points and whether K/V
// are split. K/V are split only when the nodes can share the KV heads
// evenly; otherwise (fewer KV heads than nodes, as in multi-query
// attention, or a count the nodes do not divide) they are replicated and
// the query heads alone are balanced.
//
// Hkv is the layer's KV-head count (full layers may have their own).
func (p *planner) headCuts(Hkv int) (q, kv []int, kvSplit bool) {
	H, n := int(p.s.h.NumHeads), p.nodes
	if Hkv%n == 0 {
		// Split KV heads; each node takes the query heads that read them,
		// so attention needs no cross-node KV traffic.
		kv = cflowfmt.ShardCuts(Hkv, 1, n)
		q = make([]int, n+1)
		for i, c := range kv {
			q[i] = c * (H / Hkv)
		}
		return q, kv, true
	}
	return cflowfmt.ShardCuts(H, 1, n), nil, false
}

// split returns matrix m's policy and shards (rows × cols is its shape).
func (p *planner) split(l int, m archspec.MatrixID, rows, cols int) (string, []shard) {
	n := p.nodes
	byRows := func(c []int) []shard {
		var out []shard
		for i := 0; i < n; i++ {
			if c[i] < c[i+1] {
				out = append(out, shard{i, c[i], c[i+1], 0, cols})
			}
		}
		return out
	}
	byCols := func(c []int) []shard {
		var out []shard
		for i := 0; i < n; i++ {
			if c[i] < c[i+1] {
				out = append(out, shard{i, 0, rows, c[i], c[i+1]})
			}
		}
		return out
	}
	scale := func(c []int, k int) []int {
		out := make([]int, len(c))
		for i, x := range c {
			out[i] = x * k
		}
		return out
	}
	var hd, hkv int
	if l < int(p.s.h.NumLayers) {
		hd, hkv = p.s.headDim(l), p.s.h.Geometry(p.s.md).KVHeads(p.s.full(l))
	}
	switch m {
	case archspec.MatQ:
		q, _, _ := p.headCuts(hkv)
		return cflowfmt.PolicyColumn, byRows(scale(q, hd))
	case archspec.MatK, archspec.MatV:
		if _, kv, ok := p.headCuts(hkv); ok {
			return cflowfmt.PolicyColumn, byRows(scale(kv, hd))
		}
	case archspec.MatO:
		q, _, _ := p.headCuts(hkv)
		return cflowfmt.PolicyRow, byCols(round32(scale(q, hd), cols))
	case archspec.MatGate, archspec.MatUp:
		return cflowfmt.PolicyColumn, byRows(cflowfmt.ShardCuts(rows, tileRows, n))
	case archspec.MatDown:
		return cflowfmt.PolicyRow, byCols(cflowfmt.ShardCuts(cols, tileRows, n))
	case archspec.MatEmbed, archspec.MatLMHead:
		return cflowfmt.PolicyVocab, byRows(cflowfmt.ShardCuts(rows, tileRows, n))
	}
	return cflowfmt.PolicyReplicated, []shard{{-1, 0, rows, 0, cols}}
}

// experts returns the expert cut points: node i owns experts
// [c[i], c[i+1]), whole experts in contiguous, balanced runs.
func (p *planner) experts() []int { return cflowfmt.ShardCuts(int(p.s.h.NumExperts), 1, p.nodes) }
