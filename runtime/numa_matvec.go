package runtime

// numaMatvec is matvec on a multi-node engine: every node's group computes
// its stripes concurrently into its node-local scratch, publishing whole
// stripes to outs; rows several nodes share (row-parallel O and down) are
// summed by the caller in node order after all nodes finish, so the
// result is deterministic for a given topology. A plan built after load
// (an expert's, on first selection) is split on first use.
func (e *Engine) numaMatvec(p *matPlan, a *actVec, outs [][]float32) {
	st := e.numa
	np := st.planOf(p)
	hook := e.readHook
	for g := range np.nodes {
		st.jobs[g] = nil
		ss, partial, buf := np.nodes[g], np.partial[g], &st.scratch[g]
		if len(ss) == 0 {
			continue
		}
		st.jobs[g] = e.pool.groups[g].post(len(ss), func(i int) {
			s := &ss[i]
			next := stripeAhead(ss, i)
			y := buf[s.out][s.row : s.row+s.rows]
			clear(y)
			for k, t := range s.tiles {
				tileAhead(s.tiles, k, next)
				if hook != nil {
					hook(t.Offset, t.Matrix)
				}
				dotTile(&t.Tile, a, int(t.ColOffset), y[int(t.RowOffset)-s.row:])
			}
			if !partial[i] {
				copy(outs[s.out][s.row:s.row+s.rows], y)
			}
		})
	}
	e.finishNodes()
	for _, r := range np.reds {
		clear(outs[r.out][r.row : r.row+r.rows])
		for _, pt := range r.parts {
			addTo(outs[r.out][pt.row:pt.row+pt.rows], st.scratch[pt.node][r.out][pt.row:pt.row+pt.rows])
		}
	}
}

// planOf is p's split over the nodes, made on first use for a plan built
// after load (an expert's, on its first selection).
func (st *numaState) planOf(p *matPlan) *numaPlan {
	if p.numa == nil {
		p.numa = st.split(p, len(st.topo.Nodes))
	}
	return p.numa
}

// finishNodes waits for every node job a numa matvec posted (st.jobs;
// nil where the node had no stripes).
func (e *Engine) finishNodes() {
	for g, j := range e.numa.jobs {
		if j != nil {
			e.pool.groups[g].finish(j)
		}
	}
}
