package engine

// numaMatvec is matvec on a multi-node engine: every node's group computes
// its stripes concurrently into its node-local scratch, publishing whole
// stripes to outs; rows several nodes share (row-parallel O and down) are
// summed by the caller in node order after all nodes finish, so the
// result is deterministic for a given topology. A plan built after load
// (an expert's, on first selection) is split on first use. Where the
// kernel pairs Q4_0 tiles, each node walks its stripes two at a time like
// the plain path (matvec_pairs.go), with the same bits.
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
		if !e.pairsPlan(p) || len(ss) < 2 {
			st.jobs[g] = e.pool.Groups()[g].Post(len(ss), func(i int) {
				walkStripe(&ss[i], stripeAhead(ss, i), a, nodeRows(buf, &ss[i]), hook)
				publishRows(outs, buf, &ss[i], partial[i])
			})
			continue
		}
		// Two tile streams per thread, as on the plain path
		// (matvec_pairs.go): item i is the node's stripes i and i+h.
		h := pairCount(len(ss))
		st.jobs[g] = e.pool.Groups()[g].Post(h, func(i int) {
			s := &ss[i]
			if i+h >= len(ss) {
				walkStripe(s, stripeAhead(ss, i), a, nodeRows(buf, s), hook)
				publishRows(outs, buf, s, partial[i])
				return
			}
			t := &ss[i+h]
			walkPair(s, t, stripeAhead(ss, i), stripeAhead(ss, i+h), a, nodeRows(buf, s), nodeRows(buf, t), hook)
			publishRows(outs, buf, s, partial[i])
			publishRows(outs, buf, t, partial[i+h])
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

// nodeRows clears stripe s's rows of the node's scratch buf and returns
// its output there, indexed by output row as walkStripe indexes it.
func nodeRows(buf *[3][]float32, s *stripe) []float32 {
	y := buf[s.out]
	clear(y[s.row : s.row+s.rows])
	return y
}

// publishRows copies stripe s's rows from the node's scratch into outs,
// unless s is partial (other nodes add to its rows after all finish).
func publishRows(outs [][]float32, buf *[3][]float32, s *stripe, partial bool) {
	if !partial {
		copy(outs[s.out][s.row:s.row+s.rows], buf[s.out][s.row:s.row+s.rows])
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
			e.pool.Groups()[g].Finish(j)
		}
	}
}
