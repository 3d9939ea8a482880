package engine

import (
	"fmt"

	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/engine/expertio"
)

// ExpertIOStats returns the expert tier's counters (zero under
// expertio.Mmap or on a dense model).
func (e *Engine) ExpertIOStats() expertio.Stats {
	if e.xio == nil {
		return expertio.Stats{}
	}
	return e.xio.Stats()
}

// initExpertIO opens the expert tier for a staged mode on a MoE model
// (hooks: Options.xioHooks), with one reader per selected expert, up to 8.
func (e *Engine) initExpertIO(mode expertio.Mode, hooks expertio.Hooks) error {
	if !mode.Valid() {
		return fmt.Errorf("runtime: %v", mode)
	}
	if mode == expertio.Mmap || e.h.NumExperts == 0 {
		return nil
	}
	var ranges []cflowfmt.Range
	for _, l := range e.m.Layers {
		ranges = append(ranges, l.Experts...)
	}
	x, err := expertio.Open(e.m.Path, mode, ranges, min(int(e.h.TopK), 8), hooks)
	if err != nil {
		return fmt.Errorf("runtime: %w", err)
	}
	e.xio, e.xplans = x, map[int]*stagedPlan{}
	return nil
}
