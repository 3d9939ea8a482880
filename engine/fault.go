package engine

import "github.com/cflow-dev/cflow/internal/fileio"

// faultError is the error for a recovered memory fault r (nil when nothing
// panicked); any other panic is re-raised. Forward uses it with its own
// clean-up: the batch's keys forgotten, every sequence as it was.
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
