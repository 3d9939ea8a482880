package engine

import (
	"fmt"
	"sort"
	"strings"

	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/cflowfmt"
)

type mtile = cflowfmt.MappedTile

// numaPlan is a matrix plan split by node. A plain stripe whose tiles all
// belong to one node goes to that node whole (same tiles, same order: the
// result is bit-identical to the plain path). A stripe whose column tiles
// belong to several nodes — a row-parallel matrix (O, down) — becomes one
// partial stripe per node, and the caller adds the partial sums in node
// order once all nodes are done: the block's one reduction.
type numaPlan struct {
	nodes   [][]stripe
	partial [][]bool
	reds    []reduction
}

// reduction is one output row range computed by several nodes.
type reduction struct {
	out, row, rows int
	parts          []part
}

// part is one node's partial stripe of a reduction.
type part struct{ node, row, rows int }

// split assigns p's stripes to nodes with st.owner (experts: the node that
// owns the expert).
func (st *numaState) split(p *matPlan, M int) *numaPlan {
	np := &numaPlan{nodes: make([][]stripe, M), partial: make([][]bool, M)}
	nRep, kRep := 0, 0
	owner := func(s *stripe, t *mtile) int {
		if t.Expert != cflowfmt.NoExpert && int(t.Layer) < len(st.experts) && int(t.Expert) < len(st.experts[t.Layer]) {
			return st.experts[t.Layer][t.Expert]
		}
		return st.owner(p, s.out, t)
	}
	for i := range p.stripes {
		if owner(&p.stripes[i], p.stripes[i].tiles[0]) < 0 {
			nRep++
		}
	}
	for i := range p.stripes {
		s := &p.stripes[i]
		by := make([][]*mtile, M)
		for _, t := range s.tiles {
			n := owner(s, t)
			if n < 0 {
				// Replicated (every node may read it): balance whole stripes
				// over the nodes in contiguous runs.
				n = kRep * M / nRep
			}
			by[n] = append(by[n], t)
		}
		if owner(s, s.tiles[0]) < 0 {
			kRep++
		}
		var used []int
		for n, ts := range by {
			if len(ts) > 0 {
				used = append(used, n)
			}
		}
		if len(used) == 1 {
			n := used[0]
			np.nodes[n] = append(np.nodes[n], stripe{tiles: append([]*mtile(nil), s.tiles...), out: s.out, row: s.row, rows: s.rows})
			np.partial[n] = append(np.partial[n], false)
			continue
		}
		red := reduction{out: s.out, row: s.row, rows: s.rows}
		for _, n := range used {
			lo, hi := int(by[n][0].RowOffset), 0
			for _, t := range by[n] {
				lo, hi = min(lo, int(t.RowOffset)), max(hi, int(t.RowOffset)+t.Tile.Rows)
			}
			np.nodes[n] = append(np.nodes[n], stripe{tiles: by[n], out: s.out, row: lo, rows: hi - lo})
			np.partial[n] = append(np.partial[n], true)
			red.parts = append(red.parts, part{n, lo, hi - lo})
		}
		np.reds = append(np.reds, red)
	}
	return np
}

// replanOwner assigns tiles for M nodes from geometry alone, when the
// file's plan is absent or cut for another node count: row-parallel
// matrices (O, down) by the tile's column centre, everything else by its
// row centre, in M equal bands. Tiles are never cut, so the bands follow
// the file's tile edges.
func replanOwner(M int) func(p *matPlan, o int, t *mtile) int {
	return func(p *matPlan, o int, t *mtile) int {
		if t.Matrix == archspec.MatO || t.Matrix == archspec.MatDown {
			return min(M-1, (2*int(t.ColOffset)+t.Tile.Cols)*M/(2*p.inDim))
		}
		return min(M-1, (2*int(t.RowOffset)+t.Tile.Rows)*M/(2*p.outDims[o]))
	}
}

// expertOwners is the plan's expert runs when it matches, else balanced
// contiguous runs (cflowfmt.ShardCuts, the converter's rule).
func (e *Engine) expertOwners(fp *cflowfmt.NUMAPlan, matched bool, M int) [][]int {
	L, E := int(e.h.NumLayers), int(e.h.NumExperts)
	out := make([][]int, L)
	c := cflowfmt.ShardCuts(E, 1, M)
	for l := range out {
		out[l] = make([]int, E)
		for n := 0; n < M; n++ {
			for x := c[n]; x < c[n+1]; x++ {
				out[l][x] = n
			}
		}
	}
	if matched {
		for _, s := range fp.Experts {
			if s.Layer < 0 || s.Layer >= L || s.Node < 0 || s.Node >= M {
				continue
			}
			for x := max(0, s.Experts[0]); x < min(E, s.Experts[1]); x++ {
				out[s.Layer][x] = s.Node
			}
		}
	}
	return out
}

// inPlaceReq is one planned byte range of the file to bind to a node (−1:
// interleave, a replicated matrix).
type inPlaceReq struct {
	what     string
	node     int
	from, to int64
}

// fileOwners maps every non-expert tile's offset to the node of the shard
// whose byte range holds it, and lists the ranges to bind. It fails when
// the plan and the tiles disagree (a tile in no shard or in two, outside
// its shard's rows/cols, or a shard naming an unknown node), so a stale or
// foreign plan is re-planned instead of obeyed. Norms are skipped: readers
// copy them out of the mapping, so their bytes are never read at decode.
func (e *Engine) fileOwners(fp *cflowfmt.NUMAPlan) (map[int64]int, []inPlaceReq, error) {
	L := int(e.h.NumLayers)
	owners := map[int64]int{}
	var reqs []inPlaceReq
	byName := map[string]archspec.MatrixID{}
	for id := archspec.MatrixID(0); id.Valid(); id++ {
		byName[id.String()] = id
	}
	for _, mp := range fp.Matrices {
		id, ok := byName[mp.Matrix]
		if !ok {
			return nil, nil, fmt.Errorf("unknown matrix %q", mp.Matrix)
		}
		if strings.HasSuffix(mp.Matrix, "norm") {
			continue
		}
		tiles, start, err := e.slotTiles(mp.Layer, mp.Slot, id)
		if err != nil {
			return nil, nil, err
		}
		what := fmt.Sprintf("layer %d %s", mp.Layer, mp.Matrix)
		if mp.Layer == L {
			what = mp.Matrix
		}
		rep := mp.Policy == cflowfmt.PolicyReplicated
		seen := map[[2]int64]bool{}
		for _, sh := range mp.Shards {
			if sh.Node < 0 || sh.Node >= fp.Nodes {
				return nil, nil, fmt.Errorf("%s: shard of node %d", what, sh.Node)
			}
			from, to := start+sh.Bytes[0], start+sh.Bytes[1]
			n := sh.Node
			if rep {
				n = -1
			}
			if seen[[2]int64{from, to}] && rep {
				continue // a replicated matrix lists the same range for every node
			}
			seen[[2]int64{from, to}] = true
			reqs = append(reqs, inPlaceReq{what, n, from, to})
			for i := range tiles {
				t := &tiles[i]
				if t.Offset < from || t.Offset >= to {
					continue
				}
				if _, dup := owners[t.Offset]; dup {
					return nil, nil, fmt.Errorf("%s: tile at %d in two shards", what, t.Offset)
				}
				if int(t.RowOffset) < sh.Rows[0] || int(t.RowOffset)+t.Tile.Rows > sh.Rows[1] ||
					int(t.ColOffset) < sh.Cols[0] || int(t.ColOffset)+t.Tile.Cols > sh.Cols[1] {
					return nil, nil, fmt.Errorf("%s: tile at %d outside node %d's block", what, t.Offset, sh.Node)
				}
				owners[t.Offset] = n
			}
		}
		for i := range tiles {
			if _, ok := owners[tiles[i].Offset]; !ok {
				return nil, nil, fmt.Errorf("%s: tile at %d in no shard", what, tiles[i].Offset)
			}
		}
	}
	for _, p := range e.plans() {
		for _, s := range p.stripes {
			for _, t := range s.tiles {
				if _, ok := owners[t.Offset]; !ok {
					return nil, nil, fmt.Errorf("%v tile at %d of layer %d has no plan entry", t.Matrix, t.Offset, t.Layer)
				}
			}
		}
	}
	sort.SliceStable(reqs, func(i, j int) bool { return reqs[i].from < reqs[j].from })
	return owners, reqs, nil
}

// slotTiles returns matrix id's tiles of layer l (L: the vocabulary entry)
// and the start of the stream slot the plan's byte ranges are relative to.
func (e *Engine) slotTiles(l, slot int, id archspec.MatrixID) ([]mtile, int64, error) {
	m, L := e.m, int(e.h.NumLayers)
	pick := func(ts []mtile) []mtile {
		var out []mtile
		for _, t := range ts {
			if t.Matrix == id {
				out = append(out, t)
			}
		}
		return out
	}
	if l == L {
		var ts []mtile
		switch slot {
		case cflowfmt.SlotEmbed:
			ts = m.Embed
		case cflowfmt.SlotLMHead:
			ts = m.LMHead
		default:
			return nil, 0, fmt.Errorf("vocabulary slot %d holds no matrix", slot)
		}
		if len(ts) == 0 {
			return nil, 0, fmt.Errorf("vocabulary slot %d is empty", slot)
		}
		start := ts[0].Offset
		for _, t := range ts {
			start = min(start, t.Offset)
		}
		return pick(ts), start, nil
	}
	if l < 0 || l > L || slot < 0 || slot >= cflowfmt.SlotsPerLayer {
		return nil, 0, fmt.Errorf("plan entry for layer %d slot %d", l, slot)
	}
	ly := &m.Layers[l]
	var ts []mtile
	for _, g := range [][]mtile{ly.QKV, ly.O, ly.GateUp, ly.Down, ly.Router} {
		ts = append(ts, pick(g)...)
	}
	return ts, ly.Streams[slot].Offset, nil
}
