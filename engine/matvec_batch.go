package engine

import (
	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/quant"
)

// matvecLanes runs plan p for every column in ls (each waiting on p with
// its own prepared activation and outputs, cleared by the column) in one walk over p's stripes:
// each tile is read once and applied to every column by quant.DotBatch
// (a multi-column kernel where the path has one, else the single-column
// kernel per column while the tile is in cache). Per column the tiles are
// summed in the same order as matvec sums them, so each column's outputs
// are a lone matvec's (bit for bit without a multi-column kernel, within
// float summation order with one).
func (e *Engine) matvecLanes(p *matPlan, ls []*lane) {
	hook := e.readHook
	B := len(ls)
	if e.numa != nil && B == 1 && e.pairsPlan(p) {
		// One column on a multi-node engine: numaMatvec's paired walk,
		// a lone numaMatvec's bits, as numaMatvecLanes promises.
		e.numaMatvec(p, ls[0].w.req.a, ls[0].w.req.outs)
		return
	}
	if e.numa != nil {
		e.numaMatvecLanes(p, ls)
		return
	}
	if B == 1 && e.pairsPlan(p) {
		// One column (a server with one client decoding): the decode
		// walk, two stripes at once (matvec_pairs.go); DotBatch on one
		// column is Dot, so the bits are the same.
		// The lone worker's job is free: it runs no pass while a
		// batched pass does.
		j := e.lone.mv
		j.load(p, ls[0].w.req.a, hook, ls[0].w.req.outs)
		e.walkStripes(j, p)
		j.reset()
		return
	}
	xs := make([]*quant.Vec, B)
	for j, ln := range ls {
		xs[j] = ln.w.req.a.v
	}
	// With several threads each stripe is split into column chunks (a
	// multiple of 4 columns, so every column meets the same four-column or
	// single-column kernel as unsplit): a matvec of 16 stripes of 64
	// columns left one thread idle for up to a whole stripe at its end.
	// The chunks of one stripe are consecutive items, so the threads share
	// its tiles while they are in cache; prefill is compute-bound, so a
	// tile read twice costs little.
	chunk := B
	if e.pool.Workers() > 0 && B > batchChunk {
		chunk = batchChunk
	}
	nc := (B + chunk - 1) / chunk
	// Each item's output views, from one buffer the engine keeps (the
	// driver runs one plan at a time), not an allocation per item.
	if n := len(p.stripes) * nc * chunk; cap(e.batchYs) < n {
		e.batchYs = make([][]float32, n)
	}
	e.pool.Run(len(p.stripes)*nc, func(i int) {
		s := &p.stripes[i/nc]
		var next []*cflowfmt.MappedTile
		if i%nc == nc-1 {
			next = stripeAhead(p.stripes, i/nc)
		}
		j0 := i % nc * chunk
		j1 := min(j0+chunk, B)
		ys := e.batchYs[i*chunk : i*chunk+j1-j0 : i*chunk+j1-j0]
		row := -1
		for k, t := range s.tiles {
			tileAhead(s.tiles, k, next)
			if hook != nil {
				hook(t.Offset, t.Matrix)
			}
			// A stripe's tiles share their rows: the columns' output
			// views are built once per stripe, not per tile (each is two
			// dependent loads through the column's lane, missing L1
			// behind the tile stream).
			if r := int(t.RowOffset); r != row {
				row = r
				for j, ln := range ls[j0:j1] {
					ys[j] = ln.w.req.outs[s.out][row:]
				}
			}
			quant.DotBatch(&t.Tile, xs[j0:j1], int(t.ColOffset), ys)
		}
	})
}

// batchChunk is the columns of one matvecLanes item when several threads
// share a batch's stripes (a multiple of 4, the widest multi-column
// kernel).
const batchChunk = 16
