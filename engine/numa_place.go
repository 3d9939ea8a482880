package engine

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/engine/numa"
	"github.com/cflow-dev/cflow/internal/fileio"
)

// placement issues the engine's memory-policy requests and keeps the
// report's counts.
type placement struct {
	e       *Engine
	placer  numa.Placer
	base    uintptr // address of file offset 0 in the mapping; 0: unknown
	inPlace []inPlaceReq
}

// mappingBase derives the address of file offset 0 from the tiles (a
// tile's data follows its 16-byte header and its scales), and checks that
// every non-expert tile agrees — true of one contiguous mapping, false of
// in-memory test models whose tiles live in separate slices.
func mappingBase(m *cflowfmt.Model) uintptr {
	var base uintptr
	okAll := true
	check := func(ts []mtile) {
		for i := range ts {
			t := &ts[i]
			if len(t.Data) == 0 {
				okAll = false
				return
			}
			b := uintptr(unsafe.Pointer(&t.Data[0])) - uintptr(t.Offset) - cflowfmt.TileHeaderSize - uintptr(len(t.Scales))
			if base == 0 {
				base = b
			} else if b != base {
				okAll = false
			}
		}
	}
	for l := range m.Layers {
		ly := &m.Layers[l]
		for _, ts := range [][]mtile{ly.QKV, ly.O, ly.GateUp, ly.Down, ly.Router} {
			check(ts)
		}
	}
	check(m.Embed)
	check(m.LMHead)
	if !okAll {
		return 0
	}
	return base
}

// place sends one request and counts the outcome; placement failures are
// notes, never errors: they change where bytes live, not what is computed.
func (pl *placement) place(r numa.Request, bytes int64) {
	rep := &pl.e.numaRep
	topo := pl.e.numa.topo
	if r.Node >= 0 {
		r.Mem = []int{topo.Nodes[r.Node].ID}
	} else {
		for _, n := range topo.Nodes {
			r.Mem = append(r.Mem, n.ID)
		}
	}
	rep.Requests++
	rep.Bytes += bytes
	err := pl.placer.Place(r)
	switch {
	case err == nil:
		rep.Applied++
	case errors.Is(err, numa.ErrNoMemoryNode):
		rep.Skipped++
	default:
		rep.Failed++
		if rep.Failed == 1 {
			rep.note("placement failed: %v", err)
		}
	}
}

// bindInPlace binds each planned shard range of the mapping to its node,
// then has each node's workers touch their tiles' pages once, so pages not
// yet in the page cache are faulted in by the node that reads them (the
// kernel may ignore a MAP_SHARED range's policy when the page cache
// allocates; see docs/NUMA.md).
func (pl *placement) bindInPlace() {
	var end int64 // the interleaved Q/K/V (gate/up) ranges overlap: count bytes once
	for _, q := range pl.inPlace {
		addr, n := numa.PageSpan(pl.base+uintptr(q.from), uintptr(q.to-q.from))
		pl.place(numa.Request{Kind: numa.InPlace, What: q.what, Node: q.node, File: [2]int64{q.from, q.to}, Addr: addr, Len: n},
			max(0, q.to-max(q.from, end)))
		end = max(end, q.to)
	}
	e := pl.e
	for g := range e.numa.topo.Nodes {
		var tiles []*mtile
		for _, p := range e.plans() {
			for _, s := range p.numa.nodes[g] {
				tiles = append(tiles, s.tiles...)
			}
		}
		e.onNode(g, len(tiles), func(i int) {
			numa.Prefault(tiles[i].Scales)
			numa.Prefault(tiles[i].Data)
		})
	}
}

// bindExperts binds each node's run of experts, per layer, where it lies
// in the mapping: experts are whole, contiguous ranges whatever the plan,
// so they never need copying.
func (pl *placement) bindExperts(owners [][]int) {
	if pl.e.h.NumExperts == 0 {
		return
	}
	if pl.base == 0 {
		pl.e.numaRep.note("tiles are not in one file mapping: expert placement skipped")
		return
	}
	for l, own := range owners {
		rs := pl.e.m.Layers[l].Experts
		for x := 0; x < len(own) && x < len(rs); {
			y := x + 1
			for y < len(own) && y < len(rs) && own[y] == own[x] && rs[y].Offset >= rs[y-1].End() && rs[y].Offset-rs[y-1].End() < cflowfmt.TileAlign {
				y++
			}
			from, to := rs[x].Offset, rs[y-1].End()
			addr, n := numa.PageSpan(pl.base+uintptr(from), uintptr(to-from))
			pl.place(numa.Request{Kind: numa.InPlace, What: fmt.Sprintf("layer %d experts %d-%d", l, x, y-1), Node: own[x],
				File: [2]int64{from, to}, Addr: addr, Len: n}, to-from)
			x = y
		}
	}
}

// copyTiles copies each node's tiles into an arena bound to that node
// (the copy runs on the node's own workers, so first touch agrees with
// the binding even where mbind is unavailable) and points the node's
// stripes at the copies. Tiles keep their file offsets for accounting.
func (pl *placement) copyTiles() error {
	e := pl.e
	for g := range e.numa.topo.Nodes {
		var tiles []*mtile
		seen := map[*mtile]bool{}
		var size uintptr
		for _, p := range e.plans() {
			for _, s := range p.numa.nodes[g] {
				for _, t := range s.tiles {
					if !seen[t] {
						seen[t] = true
						tiles = append(tiles, t)
						size += align16(len(t.Scales)) + align16(len(t.Data))
					}
				}
			}
		}
		if size == 0 {
			continue
		}
		a, err := numa.NewArena(size)
		if err != nil {
			return fmt.Errorf("runtime: node %d: %w", g, err)
		}
		e.numa.arenas = append(e.numa.arenas, a)
		pl.place(numa.Request{Kind: numa.Copy, What: fmt.Sprintf("node %d tiles", g), Node: g, Addr: a.Addr(), Len: uintptr(len(a.Bytes()))}, int64(size))
		mem := a.Bytes()
		copies := make([]mtile, len(tiles))
		at := make([]uintptr, len(tiles))
		var off uintptr
		for i, t := range tiles {
			at[i] = off
			off += align16(len(t.Scales)) + align16(len(t.Data))
		}
		e.onNode(g, len(tiles), func(i int) {
			t := tiles[i]
			c := *t
			o := at[i]
			c.Scales = mem[o : o+uintptr(len(t.Scales)) : o+uintptr(len(t.Scales))]
			copy(c.Scales, t.Scales)
			o += align16(len(t.Scales))
			c.Data = mem[o : o+uintptr(len(t.Data)) : o+uintptr(len(t.Data))]
			copy(c.Data, t.Data)
			copies[i] = c
		})
		if h, err := fileio.MappedHugePages(mem); err == nil {
			pl.e.numaRep.CopyBytes += h.Size
			pl.e.numaRep.CopyHugeBytes += h.Huge
		}
		idx := make(map[*mtile]*mtile, len(tiles))
		for i, t := range tiles {
			idx[t] = &copies[i]
		}
		for _, p := range e.plans() {
			for _, s := range p.numa.nodes[g] {
				for j, t := range s.tiles {
					s.tiles[j] = idx[t]
				}
			}
		}
	}
	return nil
}

// scratch gives each node its output buffers in node-local memory, touched
// first by the node's own workers.
func (pl *placement) scratch() error {
	e := pl.e
	b := &e.lone.bf // every worker's buffers have these sizes
	n := max(e.d, len(b.logits), len(b.q), len(b.k), len(b.g), len(b.eg), len(b.router))
	for g := range e.numa.topo.Nodes {
		a, err := numa.NewArena(uintptr(3 * n * 4))
		if err != nil {
			return fmt.Errorf("runtime: node %d scratch: %w", g, err)
		}
		e.numa.arenas = append(e.numa.arenas, a)
		pl.place(numa.Request{Kind: numa.Scratch, What: fmt.Sprintf("node %d scratch", g), Node: g, Addr: a.Addr(), Len: uintptr(len(a.Bytes()))}, 0)
		f := unsafe.Slice((*float32)(unsafe.Pointer(&a.Bytes()[0])), 3*n)
		for o := 0; o < 3; o++ {
			e.numa.scratch[g][o] = f[o*n : (o+1)*n : (o+1)*n]
		}
		e.onNode(g, 1, func(int) { clear(f) })
	}
	return nil
}

func align16(n int) uintptr { return uintptr(n+15) &^ 15 }
