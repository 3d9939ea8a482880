package engine

import "github.com/cflow-dev/cflow/internal/fileio"

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
func (e *Engine) faultError(r any) error { return fileio.RecoveredFault(e.m.Path, r) }

// loadFaultAsError is deferred by the set-up steps of New that read the
// whole mapping (the NUMA tile copies, on the nodes' workers, whose faults
// onNode re-raises here), with debug.SetPanicOnFault on in the caller too:
// a file truncated between Open and New is an error from New, not an
// engine built on tiles the copy left zero.
func (e *Engine) loadFaultAsError(err *error) {
	if fe := e.faultError(recover()); fe != nil {
		*err = fe
	}
}
