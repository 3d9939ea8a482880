package engine

// Sequence is one sequence's state on an Engine — its position, its KV
// caches and its last token's observation — apart from the engine's
// weights, plans, pool and workers, so one engine can advance several
// sequences (a server's concurrent requests) in one pass over the weights
// (a Batch with columns of each). The engine's own Step, Pos and Reset
// work on a default sequence. A Sequence belongs to the Engine that made
// it.
type Sequence struct {
	s   seq
	obs Observation
	own *Engine
}

// NewSequence returns an empty sequence for e.
func (e *Engine) NewSequence() *Sequence {
	q := &Sequence{s: seq{kv: e.newKV()}, own: e} // the token state is a worker's
	q.obs = e.newObservation()
	return q
}

// Pos is the number of tokens the sequence has consumed.
func (q *Sequence) Pos() int { return q.s.pos }

// Reset empties the sequence, keeping its allocations.
func (q *Sequence) Reset() {
	q.s.pos = 0
	q.s.truncate(0)
}

// Observation describes the sequence's last token fed (by any Forward).
func (q *Sequence) Observation() *Observation { return &q.obs }

func (e *Engine) newObservation() Observation {
	o := Observation{ResidualNorms: make([]float64, e.passes), Experts: make([][]int, e.passes)}
	for p := range o.Experts {
		o.Experts[p] = make([]int, 0, e.h.TopK)
	}
	return o
}

// copyFrom makes o a deep copy of src (whose slices the next batch reuses).
func (o *Observation) copyFrom(src *Observation) {
	o.PreLMHeadNorm = src.PreLMHeadNorm
	o.ResidualNorms = append(o.ResidualNorms[:0], src.ResidualNorms...)
	if len(o.Experts) != len(src.Experts) {
		o.Experts = make([][]int, len(src.Experts))
	}
	for p := range src.Experts {
		o.Experts[p] = append(o.Experts[p][:0], src.Experts[p]...)
	}
}
