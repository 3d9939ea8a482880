package engine

// worker is the state one token's forward runs on: its scratch buffers,
// the operands of its running matvec and attention loop, its per-token
// scheduler state (the residuals, the delayed dense ring, the expert
// queue), its observation and byte counters. The weights, plans, pool and
// expert tier are the Engine's, reached through the embedded pointer and
// never copied. An engine has one lone worker for a pass of one column and
// one worker per column of a batched pass (lane), so columns run the same
// single-token code side by side, each on its own state.
type worker struct {
	*Engine
	bf buffers
	mv *matvecJob // the running matvec's operands (matvec.go)
	gj *groupsJob // the running attention loop's (attention_groups.go)
	// tok is the token's scheduler state; bind points its KV cache and
	// position at the column's sequence.
	tok       seq
	obs       Observation
	stats     Stats
	prepCount [numStreams]int64
	xs        stagedState // staged expert I/O's jobs (expertio_batch.go)
	// minItems is how many items an attention loop should offer at least:
	// one per thread for a lone token (its heads are its only parallel
	// attention work), 1 in a batch, whose columns' loops run as one.
	minItems int
	// req is the weight read, parallel loop or staged routing the forward
	// is waiting on; run carries it out (outs is req.outs's storage).
	req  request
	outs [][]float32
	run  runner
}

// runner carries out a worker's pending request: at once, for a lone
// token (alone), or as part of the batch driver's next step, for a column
// (lane), which reads each tile once for every column waiting on it.
type runner interface {
	submit(w *worker)
}

// alone runs a lone token's requests on the spot.
type alone struct{}

func (alone) submit(w *worker) {
	r := &w.req
	switch r.kind() {
	case reqMatvec:
		w.matvecNow(r.p, r.a, r.outs)
	case reqStage:
		w.stageNow(r.stage)
	case reqResolve:
		panic("runtime: a lone token resolving a batch's staged routing")
	default:
		w.pool.Run(r.n, r.f)
	}
}

// newWorker allocates a worker's state for e's geometry.
func (e *Engine) newWorker(run runner, minItems int) *worker {
	w := &worker{Engine: e, mv: newMatvecJob(), run: run, minItems: minItems}
	w.gj = newGroupsJob(w)
	w.allocBuffers()
	w.tok = e.newSeq()
	w.obs = e.newObservation()
	return w
}

// bind points the worker's token state at position pos of sequence q.
func (w *worker) bind(q *seq, pos int) {
	w.tok.kv, w.tok.pos = q.kv, pos
}

// forward runs token tok through every layer at the bound position,
// returning the logits (in the worker's buffer) when logits is set. The
// single-token code: a lone token's and every batch column's.
func (w *worker) forward(tok int, logits bool) ([]float32, error) {
	s := &w.tok
	w.stats.Last = StreamBytes{}
	w.embedRow(tok, s.x)
	if err := w.runPlan(s); err != nil {
		return nil, err
	}
	w.obs.PreLMHeadNorm = norm2(s.x)
	var out []float32
	if logits {
		out = w.finalLogits(s.x)
	}
	w.countToken()
	return out, nil
}

// gather folds a worker's counters into the engine's (byte counts are per
// token fed, as if each were alone; a batch reads the shared tiles once).
func (e *Engine) gather(w *worker) {
	t, lt := &e.stats.Total, &w.stats.Total
	t.Attn += lt.Attn
	t.Dense += lt.Dense
	t.Router += lt.Router
	t.Experts += lt.Experts
	t.Embed += lt.Embed
	t.LMHead += lt.LMHead
	e.stats.Tokens += w.stats.Tokens
	e.stats.Last = w.stats.Last
	for k := range e.prepCount {
		e.prepCount[k] += w.prepCount[k]
	}
	w.stats, w.prepCount = Stats{}, [numStreams]int64{}
}
