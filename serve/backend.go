package serve

import (
	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/runtime"
)

// backend runs the model for the scheduler: slots sequences, each with its
// own KV cache. It is used from the scheduler's goroutine only. step
// advances every listed slot by one token in one tick (batched: one pass
// over the weights for all of them); tests wrap it to hold the scheduler.
type backend interface {
	reset(slot int)
	// prefill feeds toks to slot and returns the logits after the last.
	prefill(slot int, toks []int) ([]float32, error)
	// step feeds toks[i] to slots[i] and returns each slot's logits (valid
	// until that slot's next call) or its error.
	step(slots, toks []int) ([][]float32, []error)
	close()
}

// batched is the backend of one runtime.Engine with one runtime.Sequence
// (its own KV cache) per slot: a tick's decode tokens go through
// Engine.StepBatch, one pass over the weight tiles for every active
// sequence, and a new prompt through PrefillSequence (batched prefill).
// Each sequence's logits are bit-identical to what Step gives it alone.
type batched struct {
	e    *runtime.Engine
	seqs []*runtime.Sequence
	qs   []*runtime.Sequence
	out  [][]float32
	errs []error
}

func newBatched(m *cflowfmt.Model, slots int, opt runtime.Options) (*batched, error) {
	e, err := runtime.New(m, opt)
	if err != nil {
		return nil, err
	}
	b := &batched{e: e}
	for range slots {
		b.seqs = append(b.seqs, e.NewSequence())
	}
	return b, nil
}

func (b *batched) reset(slot int) { b.seqs[slot].Reset() }

func (b *batched) prefill(slot int, toks []int) ([]float32, error) {
	return b.e.PrefillSequence(b.seqs[slot], toks, nil)
}

func (b *batched) step(slots, toks []int) ([][]float32, []error) {
	b.qs, b.errs = b.qs[:0], b.errs[:0]
	for _, s := range slots {
		b.qs = append(b.qs, b.seqs[s])
		b.errs = append(b.errs, nil)
	}
	out, err := b.e.StepBatch(b.qs, toks)
	if err == nil {
		return out, b.errs
	}
	// A refused or failed batch feeds nothing: step each slot alone to
	// tell the failing sequence from the others.
	b.out = b.out[:0]
	for i, q := range b.qs {
		l, err := b.e.StepBatch([]*runtime.Sequence{q}, toks[i:i+1])
		if err != nil {
			b.out, b.errs[i] = append(b.out, nil), err
			continue
		}
		b.out = append(b.out, append([]float32(nil), l[0]...))
	}
	return b.out, b.errs
}

func (b *batched) close() { b.e.Close() }
