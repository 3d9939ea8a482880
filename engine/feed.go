package engine

import (
	"errors"
	"fmt"
	"runtime/debug"
)

// Feed is one sequence's share of a StepFeeds pass: a decode token, or a
// chunk of a prompt still being prefilled.
type Feed struct {
	Seq  *Sequence
	Toks []int
	// Logits asks for the logits after the last of Toks (a decode token,
	// a prompt's last chunk); without it the LM head is skipped.
	Logits bool
}

// StepFeeds feeds every feed's tokens to its sequence in one pass over the
// weights per MaxBatch columns: a server's decode tokens and the chunks of
// newly admitted prompts share each weight read instead of a prompt's
// prefill stalling every decoding sequence for a pass of its own. Each
// feed's logits (out[i], nil unless feeds[i].Logits) are exactly what
// Step on that sequence alone returns after its last token. The slices
// are reused by the next batch call. A token outside the vocabulary, a
// feed that does not fit its sequence's context, an empty feed or a
// sequence listed twice is refused before anything is fed; any error
// leaves every sequence as it was.
func (e *Engine) StepFeeds(feeds []Feed) (out [][]float32, err error) {
	starts := make([]int, len(feeds))
	for i, f := range feeds {
		if err := e.checkFeed(feeds, i); err != nil {
			return nil, &batchErr{i, err}
		}
		starts[i] = f.Seq.s.pos
	}
	undo := func() {
		for i, f := range feeds {
			f.Seq.s.truncate(starts[i])
			f.Seq.s.pos = starts[i]
		}
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if fe := e.faultError(recover()); fe != nil {
			e.abandonLanes()
			undo()
			out, err = nil, fe
		}
	}()
	out = make([][]float32, len(feeds))
	// Columns in feed order, MaxBatch (e.batch) per pass; a feed may span
	// two passes: its later columns see the keys its earlier ones stored.
	type col struct{ feed, tok int }
	var cols []col
	for i, f := range feeds {
		for t := range f.Toks {
			cols = append(cols, col{i, t})
		}
	}
	for b := 0; b < len(cols); b += e.batch {
		cs := cols[b:min(b+e.batch, len(cols))]
		ls := e.takeLanes(len(cs))
		for k, ln := range ls {
			f := &feeds[cs[k].feed]
			ln.scratch.kv, ln.scratch.pos = f.Seq.s.kv, starts[cs[k].feed]+cs[k].tok
			ln.col, ln.tok = &ln.scratch, f.Toks[cs[k].tok]
			ln.logits = f.Logits && cs[k].tok == len(f.Toks)-1
		}
		e.runLanes(ls)
		err := e.gatherLanes(ls)
		for _, ln := range ls {
			ln.scratch.kv = nil // the sequence's, not the lane's
		}
		if err != nil {
			var be *batchErr
			if errors.As(err, &be) {
				err = &batchErr{cs[be.i].feed, be.err}
			}
			undo()
			return nil, err
		}
		for k, ln := range ls {
			if i := cs[k].feed; cs[k].tok == len(feeds[i].Toks)-1 {
				feeds[i].Seq.obs.copyFrom(&ln.e.obs)
				out[i] = ln.out
			}
		}
	}
	for i, f := range feeds {
		f.Seq.s.pos = starts[i] + len(f.Toks)
	}
	return out, nil
}

// checkFeed refuses feed i before anything is fed.
func (e *Engine) checkFeed(feeds []Feed, i int) error {
	f := feeds[i]
	if f.Seq == nil || f.Seq.own != e {
		return errors.New("the sequence belongs to another engine")
	}
	if len(f.Toks) == 0 {
		return errors.New("no tokens to feed")
	}
	for k, t := range f.Toks {
		if t < 0 || t >= int(e.h.VocabSize) {
			return fmt.Errorf("runtime: token %d (at %d) outside the vocabulary 0..%d", t, k, e.h.VocabSize-1)
		}
	}
	if n := f.Seq.s.pos + len(f.Toks); n > int(e.h.MaxSeqLen) {
		return fmt.Errorf("%w: %d tokens at position %d need %d positions, the model's KV cache holds %d",
			ErrContextFull, len(f.Toks), f.Seq.s.pos, n, e.h.MaxSeqLen)
	}
	for j := range i {
		if feeds[j].Seq == f.Seq {
			return fmt.Errorf("the sequence is also feed %d", j)
		}
	}
	return nil
}
