package runtime

import "github.com/cflow-dev/cflow/quant"

// matvecLanes runs plan p for every column in ls (each waiting on p with
// its own prepared activation and outputs) in one walk over p's stripes:
// each tile is read once and applied to every column by quant.DotBatch
// (a multi-column kernel where the path has one, else the single-column
// kernel per column while the tile is in cache). Per column the tiles are
// summed in the same order as matvec sums them, so each column's outputs
// are a lone matvec's (bit for bit without a multi-column kernel, within
// float summation order with one).
func (e *Engine) matvecLanes(p *matPlan, ls []*lane) {
	if e.numa != nil {
		// The multi-node path keeps its per-node scratch and reductions;
		// its columns run one after another.
		for _, ln := range ls {
			e.numaMatvec(p, ln.req.a, ln.req.outs)
		}
		return
	}
	for _, ln := range ls {
		for _, o := range ln.req.outs {
			clear(o)
		}
	}
	hook := e.readHook
	B := len(ls)
	xs := make([]*quant.Vec, B)
	for j, ln := range ls {
		xs[j] = ln.req.a.v
	}
	// Each stripe's output views, from one buffer the engine keeps (the
	// driver runs one plan at a time), not an allocation per stripe.
	if n := len(p.stripes) * B; cap(e.batchYs) < n {
		e.batchYs = make([][]float32, n)
	}
	e.pool.run(len(p.stripes), func(i int) {
		s := &p.stripes[i]
		ys := e.batchYs[i*B : (i+1)*B : (i+1)*B]
		for _, t := range s.tiles {
			if hook != nil {
				hook(t.Offset, t.Matrix)
			}
			row := int(t.RowOffset)
			for j, ln := range ls {
				ys[j] = ln.req.outs[s.out][row:]
			}
			quant.DotBatch(&t.Tile, xs, int(t.ColOffset), ys)
		}
	})
}
