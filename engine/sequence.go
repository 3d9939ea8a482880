package engine

import "fmt"

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

// Truncate cuts the sequence back to its first n positions (0 ≤ n ≤
// Pos()), keeping their keys and values, so a server can reuse a shared
// prompt prefix and feed only the rest. It is exact for every combine
// style and block_iterations: between tokens a sequence's state is only
// its position and its KV caches (one per pass); the delay ring and the
// expert queue are layer offsets inside one token's forward, held by the
// worker running it, and a sliding window reads the cache by position.
// Feeding the same tokens after Truncate(n) gives what feeding them to
// the first n positions afresh gives. Observation is left as it was (it
// describes the last token fed before the cut).
func (q *Sequence) Truncate(n int) error {
	if n < 0 || n > q.s.pos {
		return fmt.Errorf("runtime: truncate to %d positions, the sequence holds %d", n, q.s.pos)
	}
	q.s.truncate(n)
	q.s.pos = n
	return nil
}

// Release empties the sequence and frees its KV blocks (Reset keeps them
// for the next tokens): a server evicting an idle sequence's cache gives
// the memory back.
func (q *Sequence) Release() {
	q.s.pos = 0
	for p := range q.s.kv {
		q.s.kv[p].release()
	}
}

// KVBytes is the memory the sequence's KV blocks hold (allocated blocks,
// which Reset and Truncate keep), what a server's cache budget counts.
func (q *Sequence) KVBytes() int64 {
	var n int64
	for p := range q.s.kv {
		n += q.s.kv[p].bytes()
	}
	return n
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
