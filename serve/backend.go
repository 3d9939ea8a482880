package serve

import (
	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/generate"
	"github.com/cflow-dev/cflow/runtime"
)

// backend runs the model for the scheduler: slots sequences, each with its
// own KV cache. It is used from the scheduler's goroutine only. step is
// the continuous-batching seam: it advances every listed slot by one token
// in one tick, so a runtime that steps several sequences in one pass over
// the weights replaces engines here and nowhere else.
type backend interface {
	reset(slot int)
	// prefill feeds toks to slot and returns the logits after the last.
	prefill(slot int, toks []int) ([]float32, error)
	// step feeds toks[i] to slots[i] and returns each slot's logits (valid
	// until that slot's next call) or its error.
	step(slots, toks []int) ([][]float32, []error)
	close()
}

// engines is the backend of one runtime.Engine per slot, stepped one after
// another: exact (each sequence's logits are what `cflowc run` computes
// alone), but every slot reads the weights for itself.
type engines struct {
	es     []*runtime.Engine
	logits [][]float32
	errs   []error
}

func newEngines(m *cflowfmt.Model, slots int, opt runtime.Options) (*engines, error) {
	b := &engines{}
	for range slots {
		e, err := runtime.New(m, opt)
		if err != nil {
			b.close()
			return nil, err
		}
		b.es = append(b.es, e)
	}
	return b, nil
}

func (b *engines) reset(slot int) { b.es[slot].Reset() }

func (b *engines) prefill(slot int, toks []int) ([]float32, error) {
	return generate.Feed(b.es[slot], toks, nil)
}

func (b *engines) step(slots, toks []int) ([][]float32, []error) {
	b.logits, b.errs = b.logits[:0], b.errs[:0]
	for i, s := range slots {
		l, err := b.es[s].Step(toks[i])
		b.logits, b.errs = append(b.logits, l), append(b.errs, err)
	}
	return b.logits, b.errs
}

func (b *engines) close() {
	for _, e := range b.es {
		e.Close()
	}
}
