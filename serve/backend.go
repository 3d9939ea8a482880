package serve

import (
	"fmt"

	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/engine"
)

// backend runs the model for the scheduler: slots sequences, each with its
// own KV cache. It is used from the scheduler's goroutine only. feed
// advances every listed slot in one tick — decode tokens and new prompts'
// chunks together, one pass over the weights for all of them (batched);
// tests wrap it to hold the scheduler.
type backend interface {
	// truncate cuts slot's sequence back to its first n positions (the
	// prompt cache's reused prefix; 0 empties it).
	truncate(slot, n int) error
	// release empties slot's sequence and frees its KV memory.
	release(slot int)
	// kvBytes is the KV memory slot's sequence holds.
	kvBytes(slot int) int64
	// feed feeds each fs[i].toks to slot fs[i].slot and returns the
	// logits after its last token (nil unless fs[i].logits; valid until
	// that slot's next call) or its error.
	feed(fs []slotFeed) ([][]float32, []error)
	close()
}

// slotFeed is one slot's tokens in a tick: its next decode token, or a
// chunk of its prompt (logits only after the prompt's last chunk).
type slotFeed struct {
	slot   int
	toks   []int
	logits bool
}

// batched is the backend of one engine.Engine with one engine.Sequence
// (its own KV cache) per slot: a tick is one engine.Batch through
// Engine.Forward, one pass over the weight tiles for every decode token
// and prompt chunk. Each sequence's logits are bit-identical to what Step
// gives it alone.
type batched struct {
	e     *engine.Engine
	seqs  []*engine.Sequence
	batch engine.Batch
	out   [][]float32
	errs  []error
}

func newBatched(m *cflowfmt.Model, slots int, opt engine.Options) (*batched, error) {
	e, err := engine.New(m, opt)
	if err != nil {
		return nil, err
	}
	b := &batched{e: e}
	for range slots {
		b.seqs = append(b.seqs, e.NewSequence())
	}
	return b, nil
}

func (b *batched) truncate(slot, n int) error { return b.seqs[slot].Truncate(n) }
func (b *batched) release(slot int)           { b.seqs[slot].Release() }
func (b *batched) kvBytes(slot int) int64     { return b.seqs[slot].KVBytes() }

func (b *batched) feed(fs []slotFeed) ([][]float32, []error) {
	b.out, b.errs = b.out[:0], b.errs[:0]
	for range fs {
		b.out, b.errs = append(b.out, nil), append(b.errs, nil)
	}
	if err := b.tick(fs, b.out); err == nil {
		return b.out, b.errs
	}
	// A refused or failed tick feeds nothing: feed each slot alone to
	// tell the failing sequence from the others.
	for i := range fs {
		if b.errs[i] = b.tick(fs[i:i+1], b.out[i:i+1]); b.errs[i] == nil {
			b.out[i] = append([]float32(nil), b.out[i]...)
		}
	}
	return b.out, b.errs
}

// tick runs fs as one batch, leaving feed k's logits (when asked) in
// out[k]. A slot listed twice or an empty feed is refused before anything
// is fed (the scheduler makes neither).
func (b *batched) tick(fs []slotFeed, out [][]float32) error {
	b.batch.Reset()
	for i, f := range fs {
		for _, g := range fs[:i] {
			if g.slot == f.slot {
				return fmt.Errorf("slot %d fed twice in one tick", f.slot)
			}
		}
		if len(f.toks) == 0 {
			return fmt.Errorf("slot %d: no tokens to feed", f.slot)
		}
		b.batch.Add(b.seqs[f.slot], f.toks, f.logits)
	}
	if err := b.e.Forward(&b.batch); err != nil {
		return err
	}
	at := 0
	for k, f := range fs {
		at += len(f.toks)
		out[k] = b.batch.Logits(at - 1)
	}
	return nil
}
func (b *batched) close() { b.e.Close() }
