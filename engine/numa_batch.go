package engine

import "github.com/cflow-dev/cflow/quant"

// numaMatvecLanes is numaMatvec for a batch's columns (each waiting on p
// with its own prepared activation and outputs, cleared by the column):
// every node walks its stripes once, applying each tile to all columns
// with quant.DotBatch, so a tile is read once per batch instead of once
// per column. A whole stripe accumulates straight into each column's
// cleared outputs (what numaMatvec's clear-accumulate-copy computes); a
// partial stripe into the node's batch scratch, one slice per column,
// and the rows several nodes share are summed per column in node order
// after every node finished, as numaMatvec sums them. So each column's
// outputs are a lone numaMatvec's: bit for bit where DotBatch is (the
// float and avx2i8 paths, and paths without a multi-column kernel).
func (e *Engine) numaMatvecLanes(p *matPlan, ls []*lane) {
	st := e.numa
	np := st.planOf(p)
	B := len(ls)
	xs := make([]*quant.Vec, B)
	for j, ln := range ls {
		xs[j] = ln.w.req.a.v
	}
	// Column j's scratch for output o of node g: bs[g][(j·outs+o)·dim:].
	dim := 0
	for _, d := range p.outDims {
		dim = max(dim, d)
	}
	nOut := len(p.outDims)
	if len(st.batchScratch) != len(np.nodes) {
		st.batchScratch = make([][]float32, len(np.nodes))
		st.batchYs = make([][][]float32, len(np.nodes))
	}
	hook := e.readHook
	for g := range np.nodes {
		st.jobs[g] = nil
		ss, partial := np.nodes[g], np.partial[g]
		if len(ss) == 0 {
			continue
		}
		if n := B * nOut * dim; len(st.batchScratch[g]) < n {
			st.batchScratch[g] = make([]float32, n)
		}
		if n := len(ss) * 2 * B; len(st.batchYs[g]) < n {
			st.batchYs[g] = make([][]float32, n)
		}
		bs, yb := st.batchScratch[g], st.batchYs[g]
		st.jobs[g] = e.pool.Groups()[g].Post(len(ss), func(i int) {
			s := &ss[i]
			next := stripeAhead(ss, i)
			ys := yb[2*i*B : (2*i+1)*B : (2*i+1)*B]
			// Each column's view of the stripe's rows: its output, or its
			// scratch for a partial stripe (cleared: numaMatvec's clear).
			views := yb[(2*i+1)*B : (2*i+2)*B : (2*i+2)*B]
			for j, ln := range ls {
				if partial[i] {
					o := (j*nOut + s.out) * dim
					views[j] = bs[o+s.row : o+s.row+s.rows]
					clear(views[j])
				} else {
					views[j] = ln.w.req.outs[s.out][s.row : s.row+s.rows]
				}
			}
			for k, t := range s.tiles {
				tileAhead(s.tiles, k, next)
				if hook != nil {
					hook(t.Offset, t.Matrix)
				}
				r := int(t.RowOffset) - s.row
				for j := range ys {
					ys[j] = views[j][r:]
				}
				quant.DotBatch(&t.Tile, xs, int(t.ColOffset), ys)
			}
		})
	}
	e.finishNodes()
	for j, ln := range ls {
		for _, r := range np.reds {
			out := ln.w.req.outs[r.out]
			clear(out[r.row : r.row+r.rows])
			for _, pt := range r.parts {
				o := (j*nOut + r.out) * dim
				addTo(out[pt.row:pt.row+pt.rows], st.batchScratch[pt.node][o+pt.row:o+pt.row+pt.rows])
			}
		}
	}
}
