package engine

import (
	"errors"
	"fmt"
	"runtime/debug"
)

// Batch is one forward's input as data, column by column (as ollama's
// input.Batch is): which sequence each token belongs to, the token, the
// position it takes, and whether its logits are wanted. Columns of one
// sequence take its next positions in column order; columns of several
// sequences (a server's decode tokens and prompt chunks) share each
// weight read. Add builds one; Forward runs it and leaves the wanted
// logits and observations in it (Logits, Observation), valid until the
// batch is reset or run again.
type Batch struct {
	Seqs      []*Sequence
	Tokens    []int
	Positions []int
	// Want asks for column i's logits and observation; without it the LM
	// head is skipped for that column.
	Want []bool

	last   []bool // column i is its sequence's last in the batch
	logits [][]float32
	obs    []Observation
}

// Add appends toks as q's next positions (after any columns of q already
// in the batch), wanting the logits of the last of them when last is set.
func (b *Batch) Add(q *Sequence, toks []int, last bool) {
	pos := q.Pos()
	for i := len(b.Seqs) - 1; i >= 0; i-- {
		if b.Seqs[i] == q {
			pos = b.Positions[i] + 1
			break
		}
	}
	for k, t := range toks {
		b.Seqs = append(b.Seqs, q)
		b.Tokens = append(b.Tokens, t)
		b.Positions = append(b.Positions, pos+k)
		b.Want = append(b.Want, last && k == len(toks)-1)
	}
}

// Reset empties the batch, keeping its allocations.
func (b *Batch) Reset() {
	clear(b.Seqs) // no sequence kept alive by a reused batch
	b.Seqs, b.Tokens, b.Positions, b.Want = b.Seqs[:0], b.Tokens[:0], b.Positions[:0], b.Want[:0]
}

// Len is the number of columns.
func (b *Batch) Len() int { return len(b.Tokens) }

// Logits is column i's logits after Forward (nil unless Want[i]).
func (b *Batch) Logits(i int) []float32 {
	if i >= len(b.logits) || !b.Want[i] {
		return nil
	}
	return b.logits[i]
}

// Observation is column i's observation after Forward (nil unless Want[i]).
func (b *Batch) Observation(i int) *Observation {
	if i >= len(b.obs) || !b.Want[i] {
		return nil
	}
	return &b.obs[i]
}

// Forward feeds every column of b to its sequence: the one forward entry
// point (Step, Prefill and the server's ticks are calls of it). Columns
// run in passes of up to Options.Batch over the weights; a pass of one
// column is a lone token's forward, a pass of several reads each tile
// once for all of them, and either way each column's logits are exactly
// what feeding its sequence token by token gives. A malformed batch (a
// token outside the vocabulary, a position that is not its sequence's
// next, past the context, another engine's sequence) is refused before
// anything is fed, the error naming the column; any error leaves every
// sequence as it was.
func (e *Engine) Forward(b *Batch) (err error) {
	if err := e.checkBatch(b); err != nil {
		return err
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if fe := e.faultError(recover()); fe != nil {
			e.abandonLanes()
			e.undo(b)
			err = fe
		}
	}()
	n := b.Len()
	for len(b.logits) < n {
		b.logits = append(b.logits, nil)
		b.obs = append(b.obs, Observation{})
	}
	for start := 0; start < n; start += e.batch {
		end := min(start+e.batch, n)
		if end-start == 1 {
			err = e.forwardAlone(b, start)
		} else {
			err = e.forwardLanes(b, start, end)
		}
		if err != nil {
			e.undo(b)
			return err
		}
	}
	for i, q := range b.Seqs {
		q.s.pos = b.Positions[i] + 1
	}
	return nil
}

// forwardAlone runs column i on the lone worker.
func (e *Engine) forwardAlone(b *Batch, i int) error {
	w := e.lone
	w.bind(&b.Seqs[i].s, b.Positions[i])
	out, err := w.forward(b.Tokens[i], b.Want[i])
	w.tok.kv = nil // the sequence's, not the worker's
	e.gather(w)
	if err != nil {
		return &batchErr{i, err}
	}
	e.keep(b, i, out, &w.obs)
	return nil
}

// forwardLanes runs columns start..end−1 as one batched pass.
func (e *Engine) forwardLanes(b *Batch, start, end int) error {
	ls := e.takeLanes(end - start)
	for k, ln := range ls {
		i := start + k
		ln.w.bind(&b.Seqs[i].s, b.Positions[i])
		ln.tok, ln.want = b.Tokens[i], b.Want[i]
	}
	e.runLanes(ls)
	var err error
	for k, ln := range ls {
		ln.w.tok.kv = nil
		e.gather(ln.w)
		if ln.err != nil && err == nil {
			err = &batchErr{start + k, ln.err}
		}
	}
	if err != nil {
		return err
	}
	for k, ln := range ls {
		e.keep(b, start+k, ln.out, &ln.w.obs)
	}
	return nil
}

// keep copies column i's results out of the worker that ran it (which the
// next pass reuses): its logits and observation when wanted, and its
// sequence's observation when it is the sequence's last column.
func (e *Engine) keep(b *Batch, i int, logits []float32, obs *Observation) {
	if b.Want[i] {
		b.logits[i] = append(b.logits[i][:0], logits...)
		b.obs[i].copyFrom(obs)
	}
	if b.last[i] {
		b.Seqs[i].obs.copyFrom(obs)
	}
}

// undo forgets every key the batch stored: each sequence is cut back to
// where it stood before the batch (its first column's position).
func (e *Engine) undo(b *Batch) {
	for i, q := range b.Seqs {
		if i == first(b, q) {
			q.s.truncate(b.Positions[i])
			q.s.pos = b.Positions[i]
		}
	}
}

// first is the index of q's first column in b.
func first(b *Batch, q *Sequence) int {
	for i, s := range b.Seqs {
		if s == q {
			return i
		}
	}
	return -1
}

// checkBatch refuses a malformed batch before anything is fed, and marks
// each sequence's last column.
func (e *Engine) checkBatch(b *Batch) error {
	n := len(b.Tokens)
	if n == 0 {
		return errors.New("runtime: no tokens to feed")
	}
	if len(b.Seqs) != n || len(b.Positions) != n || len(b.Want) != n {
		return fmt.Errorf("runtime: batch of %d tokens with %d sequences, %d positions, %d wants", n, len(b.Seqs), len(b.Positions), len(b.Want))
	}
	b.last = b.last[:0]
	for range n {
		b.last = append(b.last, false)
	}
	for i, q := range b.Seqs {
		if q == nil || q.own != e {
			return &batchErr{i, errors.New("the sequence belongs to another engine")}
		}
		if t := b.Tokens[i]; t < 0 || t >= int(e.h.VocabSize) {
			return &batchErr{i, fmt.Errorf("runtime: token %d outside the vocabulary 0..%d", t, e.h.VocabSize-1)}
		}
		next, prev := q.s.pos, -1
		for j := i - 1; j >= 0; j-- {
			if b.Seqs[j] == q {
				next, prev = b.Positions[j]+1, j
				break
			}
		}
		if prev >= 0 {
			b.last[prev] = false
		}
		b.last[i] = true
		if p := b.Positions[i]; p != next {
			return &batchErr{i, fmt.Errorf("runtime: position %d, the sequence's next is %d", p, next)}
		}
		if p := b.Positions[i]; p >= int(e.h.MaxSeqLen) {
			return &batchErr{i, fmt.Errorf("%w: position %d, the model's KV cache holds %d positions", ErrContextFull, p, e.h.MaxSeqLen)}
		}
	}
	return nil
}
