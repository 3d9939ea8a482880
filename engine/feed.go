package engine

import (
	"errors"
	"fmt"
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
func (e *Engine) StepFeeds(feeds []Feed) ([][]float32, error) {
	for i := range feeds {
		if err := e.checkFeed(feeds, i); err != nil {
			return nil, &batchErr{i, err}
		}
	}
	b := &e.feedB
	b.Reset()
	for _, f := range feeds {
		b.Add(f.Seq, f.Toks, f.Logits)
	}
	if err := e.Forward(b); err != nil {
		var be *batchErr
		if errors.As(err, &be) { // name the feed, not the column
			at := 0
			for i, f := range feeds {
				if at += len(f.Toks); be.i < at {
					err = &batchErr{i, be.err}
					break
				}
			}
		}
		return nil, err
	}
	out := make([][]float32, len(feeds))
	at := 0
	for i, f := range feeds {
		at += len(f.Toks)
		out[i] = b.Logits(at - 1)
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
