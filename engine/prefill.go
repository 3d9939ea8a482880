package engine

import (
	"errors"
	"fmt"
	"runtime/debug"
)

// Sequence is one sequence's state on an Engine — its position, KV caches
// and per-token scheduler values — apart from the engine's weights, plans,
// pool and scratch buffers, so one engine can advance several sequences
// (a server's concurrent requests) in one pass over the weights with
// StepBatch. The engine's own Step, Pos and Reset work on a default
// sequence. A Sequence belongs to the Engine that made it.
type Sequence struct {
	s   seq
	obs Observation
	own *Engine
}

// NewSequence returns an empty sequence for e.
func (e *Engine) NewSequence() *Sequence {
	q := &Sequence{s: e.newSeq(), own: e}
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

// Observation describes the sequence's last token fed by StepBatch or
// PrefillSequence.
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

// Prefill feeds toks to the default sequence as batched prefill (each
// weight tile read once per MaxBatch tokens) and returns the logits after
// the last token, exactly what feeding them one by one with Step returns.
// The slice is reused by the next call. If the tokens do not fit the
// context, nothing is fed and the error wraps ErrContextFull.
func (e *Engine) Prefill(toks []int) ([]float32, error) {
	return e.prefill(&e.seq, toks, nil, &e.obs)
}

// PrefillEach is Prefill that also hands each(i, logits, obs) every
// position's logits and observation, in order (perplexity, traces): the
// LM head then runs for every position. The slices are only valid during
// the call. An error from each stops the feed after the current batch.
func (e *Engine) PrefillEach(toks []int, each func(i int, logits []float32, obs *Observation) error) error {
	if each == nil {
		return errors.New("runtime: PrefillEach needs a callback")
	}
	_, err := e.prefill(&e.seq, toks, each, &e.obs)
	return err
}

// PrefillSequence is Prefill on sequence q (each may be nil).
func (e *Engine) PrefillSequence(q *Sequence, toks []int, each func(i int, logits []float32, obs *Observation) error) ([]float32, error) {
	if q.own != e {
		return nil, errors.New("runtime: the sequence belongs to another engine")
	}
	return e.prefill(&q.s, toks, each, &q.obs)
}

// prefill feeds toks to s in batches of e.batch columns, leaving the last
// token's observation in obs.
func (e *Engine) prefill(s *seq, toks []int, each func(int, []float32, *Observation) error, obs *Observation) (last []float32, err error) {
	start := s.pos
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if fe := e.faultError(recover()); fe != nil {
			e.abandonLanes()
			s.truncate(start)
			s.pos = start
			last, err = nil, fe
		}
	}()
	if len(toks) == 0 {
		return nil, errors.New("runtime: no tokens to prefill")
	}
	for i, t := range toks {
		if t < 0 || t >= int(e.h.VocabSize) {
			return nil, fmt.Errorf("runtime: token %d (at %d) outside the vocabulary 0..%d", t, i, e.h.VocabSize-1)
		}
	}
	if n := s.pos + len(toks); n > int(e.h.MaxSeqLen) {
		return nil, fmt.Errorf("%w: %d tokens at position %d need %d positions, the model's KV cache holds %d",
			ErrContextFull, len(toks), s.pos, n, e.h.MaxSeqLen)
	}
	for b := 0; b < len(toks); b += e.batch {
		bt := toks[b:min(b+e.batch, len(toks))]
		ls := e.takeLanes(len(bt))
		for i, ln := range ls {
			ln.scratch.kv, ln.scratch.pos = s.kv, s.pos+i
			ln.col, ln.tok = &ln.scratch, bt[i]
			ln.logits = each != nil || b+i == len(toks)-1
		}
		e.runLanes(ls)
		err := e.gatherLanes(ls)
		for _, ln := range ls {
			ln.scratch.kv = nil // the sequence's, not the lane's
		}
		if err != nil {
			s.truncate(start)
			s.pos = start
			return nil, err
		}
		s.pos += len(bt)
		obs.copyFrom(&ls[len(ls)-1].e.obs)
		last = ls[len(ls)-1].out
		if each != nil {
			for i, ln := range ls {
				if err := each(b+i, ln.out, &ln.e.obs); err != nil {
					return nil, err
				}
			}
		}
	}
	return last, nil
}

// StepBatch feeds toks[i] to seqs[i] for every i in one pass over the
// weights (continuous batching: one decode token of each of several
// sequences) and returns each sequence's next-token logits, exactly what
// Step on that sequence alone returns. It is StepFeeds with one token and
// its logits per feed, so the same rules hold: the slices are reused by
// the next batch call; a token outside the vocabulary, a full sequence or
// a sequence listed twice is refused before anything is fed, the error
// naming the column; any error leaves every sequence as it was.
func (e *Engine) StepBatch(seqs []*Sequence, toks []int) ([][]float32, error) {
	if len(seqs) != len(toks) {
		return nil, fmt.Errorf("runtime: %d sequences, %d tokens", len(seqs), len(toks))
	}
	feeds := make([]Feed, len(seqs))
	for i, q := range seqs {
		feeds[i] = Feed{Seq: q, Toks: toks[i : i+1], Logits: true}
	}
	return e.StepFeeds(feeds)
}

// takeLanes returns n column views (n ≤ MaxBatch), creating them on first
// use; StepBatch's outputs live in them until the next batch.
func (e *Engine) takeLanes(n int) []*lane {
	for len(e.lanes) < n {
		e.lanes = append(e.lanes, e.newLane())
	}
	return e.lanes[:n]
}

// gatherLanes folds the columns' counters into the engine's (byte counts
// are per token fed, as if each were alone; a batch reads the shared
// tiles once) and returns the first column's error.
func (e *Engine) gatherLanes(ls []*lane) error {
	var err error
	for i, ln := range ls {
		v := &ln.e
		if ln.err != nil && err == nil {
			err = &batchErr{i, ln.err}
		}
		t, lt := &e.stats.Total, &v.stats.Total
		t.Attn += lt.Attn
		t.Dense += lt.Dense
		t.Router += lt.Router
		t.Experts += lt.Experts
		t.Embed += lt.Embed
		t.LMHead += lt.LMHead
		e.stats.Tokens += v.stats.Tokens
		e.stats.Last = v.stats.Last
		for k := range e.prepCount {
			e.prepCount[k] += v.prepCount[k]
		}
		v.stats, v.prepCount = Stats{}, [numStreams]int64{}
	}
	return err
}
