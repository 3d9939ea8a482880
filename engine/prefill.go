package engine

import (
	"errors"
	"fmt"
)

// Prefill feeds toks to the default sequence as batched prefill (each
// weight tile read once per Options.Batch tokens) and returns the logits
// after the last token, exactly what feeding them one by one with Step
// returns. The slice is reused by the next call. If the tokens do not fit
// the context, nothing is fed and the error wraps ErrContextFull.
func (e *Engine) Prefill(toks []int) ([]float32, error) {
	return e.PrefillSequence(e.def, toks, nil)
}

// PrefillEach is Prefill that also hands each(i, logits, obs) every
// position's logits and observation, in order (perplexity, traces): the
// LM head then runs for every position. The slices are only valid during
// the call. An error from each stops the feed after the current batch.
func (e *Engine) PrefillEach(toks []int, each func(i int, logits []float32, obs *Observation) error) error {
	if each == nil {
		return errors.New("runtime: PrefillEach needs a callback")
	}
	_, err := e.PrefillSequence(e.def, toks, each)
	return err
}

// PrefillSequence is Prefill on sequence q (each may be nil): Forward of
// q's next positions, one pass of Options.Batch columns at a time when
// each wants every position's logits (so they need not all be kept).
func (e *Engine) PrefillSequence(q *Sequence, toks []int, each func(i int, logits []float32, obs *Observation) error) ([]float32, error) {
	if q == nil || q.own != e {
		return nil, errors.New("runtime: the sequence belongs to another engine")
	}
	if len(toks) == 0 {
		return nil, errors.New("runtime: no tokens to prefill")
	}
	b := &e.prefillB
	if each == nil {
		b.Reset()
		b.Add(q, toks, true)
		if err := e.Forward(b); err != nil {
			return nil, err
		}
		return b.Logits(b.Len() - 1), nil
	}
	if n := q.Pos() + len(toks); n > int(e.h.MaxSeqLen) {
		return nil, fmt.Errorf("%w: %d tokens at position %d need %d positions, the model's KV cache holds %d",
			ErrContextFull, len(toks), q.Pos(), n, e.h.MaxSeqLen)
	}
	for _, t := range toks {
		if t < 0 || t >= int(e.h.VocabSize) {
			return nil, fmt.Errorf("runtime: token %d outside the vocabulary 0..%d", t, e.h.VocabSize-1)
		}
	}
	var last []float32
	for at := 0; at < len(toks); at += e.batch {
		b.Reset()
		b.Add(q, toks[at:min(at+e.batch, len(toks))], true)
		for i := range b.Want {
			b.Want[i] = true
		}
		if err := e.Forward(b); err != nil {
			return nil, err
		}
		for i := range b.Len() {
			if err := each(at+i, b.Logits(i), b.Observation(i)); err != nil {
				return nil, err
			}
		}
		last = b.Logits(b.Len() - 1)
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

// takeLanes returns n columns (n ≤ MaxBatch), creating them on first use.
func (e *Engine) takeLanes(n int) []*lane {
	for len(e.lanes) < n {
		e.lanes = append(e.lanes, e.newLane())
	}
	return e.lanes[:n]
}
