package serve

import (
	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/engine"
)

// backend runs the model for the scheduler: slots sequences, each with its
// own KV cache. It is used from the scheduler's goroutine only. feed
// advances every listed slot in one tick — decode tokens and new prompts'
// chunks together, one pass over the weights for all of them (batched);
// tests wrap it to hold the scheduler.
type backend interface {
	reset(slot int)
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
// (its own KV cache) per slot: a tick's feeds go through Engine.StepFeeds,
// one pass over the weight tiles for every decode token and prompt chunk.
// Each sequence's logits are bit-identical to what Step gives it alone.
type batched struct {
	e    *engine.Engine
	seqs []*engine.Sequence
	fs   []engine.Feed
	out  [][]float32
	errs []error
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

func (b *batched) reset(slot int) { b.seqs[slot].Reset() }

func (b *batched) feed(fs []slotFeed) ([][]float32, []error) {
	b.fs, b.errs = b.fs[:0], b.errs[:0]
	for _, f := range fs {
		b.fs = append(b.fs, engine.Feed{Seq: b.seqs[f.slot], Toks: f.toks, Logits: f.logits})
		b.errs = append(b.errs, nil)
	}
	out, err := b.e.StepFeeds(b.fs)
	if err == nil {
		return out, b.errs
	}
	// A refused or failed tick feeds nothing: feed each slot alone to
	// tell the failing sequence from the others.
	b.out = b.out[:0]
	for i := range b.fs {
		l, err := b.e.StepFeeds(b.fs[i : i+1])
		if err != nil {
			b.out, b.errs[i] = append(b.out, nil), err
			continue
		}
		b.out = append(b.out, append([]float32(nil), l[0]...))
	}
	return b.out, b.errs
}

func (b *batched) close() { b.e.Close() }
