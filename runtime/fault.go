package runtime

import (
	"fmt"

	"github.com/cflow-dev/cflow/cflowfmt"
)

// faultAsError is deferred by Step (with debug.SetPanicOnFault on). The
// weights are a file mapping: if the file is truncated under the engine,
// reading a vanished page faults. It turns that fault into an error naming
// the file (exit 2 in the CLI) instead of a fatal SIGBUS, and forgets the
// token's keys in s so the engine stays as it was before the call; the
// workers forward their faults here (pool.run re-raises them). Any other
// panic is re-raised: it is a bug of ours.
func (e *Engine) faultAsError(s *seq, logits *[]float32, err *error) {
	if fe := e.faultError(recover()); fe != nil {
		s.truncate(s.pos)
		*logits, *err = nil, fe
	}
}

// faultError is the error for a recovered memory fault r (nil when nothing
// panicked); any other panic is re-raised. The batched entry points
// (prefill.go) use it with their own clean-up.
func (e *Engine) faultError(r any) error {
	if r == nil {
		return nil
	}
	fe, ok := r.(interface{ Addr() uintptr })
	if !ok {
		panic(r)
	}
	return &cflowfmt.FormatError{File: e.m.Path, What: fmt.Sprintf("memory fault at %#x reading the mapped weights: the file was truncated or replaced while open (%v)", fe.Addr(), r)}
}
