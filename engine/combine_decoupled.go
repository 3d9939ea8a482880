package engine

import (
	"fmt"

	"github.com/cflow-dev/cflow/cflowfmt"
)

// decoupledStreams is arch1's residual: an attention stream s_a and an FFN
// stream s_f, both starting as the embedding, each adding its own block's
// output; after every merge-th layer both become their average, which is
// also the recorded and the final residual.
type decoupledStreams struct {
	basicStyle
	noMid
	merge int // arch.merge_interval
}

func newDecoupledStreams(md *cflowfmt.Metadata) (combiner, error) {
	m := int(md.U32(cflowfmt.KeyMergeInterval, 3))
	if m < 1 {
		return nil, fmt.Errorf("runtime: %s %d (must be ≥ 1)", cflowfmt.KeyMergeInterval, m)
	}
	return decoupledStreams{merge: m}, nil
}

func (c decoupledStreams) combine(w *worker, s *seq, pass int) []float32 {
	addTo(s.sA, s.m)
	if s.hasF {
		addTo(s.sF, s.f)
	}
	if s.hasE {
		addTo(s.sF, s.e)
	}
	avg := w.bf.xn
	for i := range avg {
		avg[i] = (s.sA[i] + s.sF[i]) / 2
	}
	if (pass+1)%c.merge == 0 {
		copy(s.sA, avg)
		copy(s.sF, avg)
	}
	return avg
}

func (decoupledStreams) finish(w *worker, s *seq) {
	for i := range s.x {
		s.x[i] = (s.sA[i] + s.sF[i]) / 2
	}
}
